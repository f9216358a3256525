"""Paper variants: provenance, named options, the networks each paper ran and their totals.

Totals are checked against the published figure where the paper or the source publishes one, otherwise
against a count derived here, layer by layer, from the published configuration (cited per test).
"""

import pytest

from stcsim.workloads import get_network, list_networks
from stcsim.workloads.layer import LayerKind
from stcsim.workloads.papers import PAPER_WORKLOADS, PAPERS, paper_workloads, papers_using
from stcsim.workloads.registry import network_spec, parse_spec
from stcsim.workloads.shapes import unique_gemm_shapes


def lstm_params(hidden: int, inputs: int) -> int:
    """A TensorFlow LSTM cell: kernel (inputs + hidden) x 4 hidden plus one 4 hidden bias."""
    return (inputs + hidden) * 4 * hidden + 4 * hidden


def test_alexnet_tf_slim_is_the_model_repository_alexnet_v2() -> None:
    """tensorflow/models slim alexnet_v2: conv4 = 384, fc6 a 5x5 VALID conv over 256 channels (issue 17)."""
    net = get_network("alexnet:variant=tf-slim")
    assert net.spec == "alexnet:variant=tf-slim"
    assert net.layer("conv4").m == 384 and net.layer("conv4").k == 384 * 9
    fc6 = net.layer("fc6")
    assert (fc6.kind, fc6.m, fc6.k, fc6.n) == (LayerKind.CONV, 4096, 256 * 5 * 5, 1)
    convs = ((3, 64, 11), (64, 192, 5), (192, 384, 3), (384, 384, 3), (384, 256, 3), (256, 4096, 5),
             (4096, 4096, 1), (4096, 1000, 1))
    assert net.params == sum(cin * cout * k * k + cout for cin, cout, k in convs) == 50_303_912
    assert get_network("alexnet").layer("features.8").m == 256  # torchvision's conv4 stays the default
    assert get_network("alexnet:variant=tf-slim", image_size=256).layer("fc6").n == 2 * 2  # fully conv.


def test_alexnet_tf_slim_minimum_image() -> None:
    """fc6 needs a 5x5 map: 195 is the smallest input, and the error names the variant."""
    assert get_network("alexnet:variant=tf-slim", image_size=195).layer("fc6").n == 1
    with pytest.raises(ValueError, match=r"image_size for alexnet:variant=tf-slim must be an integer >= 195"):
        get_network("alexnet:variant=tf-slim", image_size=194)


def test_show_and_tell_lstm_only() -> None:
    """Paper 001 times only the LSTM: im2txt's 512 units over a 512-d input, nothing else."""
    net = get_network("show_and_tell:layers=lstm", batch=1)
    assert [layer.name for layer in net.layers] == ["lstm.ih", "lstm.hh"]
    assert net.params == lstm_params(512, 512) == 2_099_200
    assert net.macs == 2 * 2048 * 512 * 21
    full = get_network("show_and_tell")
    assert full.layer("logits").macs / full.macs > 0.7  # why the variant matters: logits dominate


def test_sparsert_problems_are_in_paper_003s_networks() -> None:
    """All 20 SpMM problems (M, K, N) of SparseRT's table are GEMMs of the networks paper 003 ran."""
    problems = {(64, 256, 3136), (256, 64, 3136), (128, 512, 784), (512, 128, 784), (256, 1024, 196),
                (1024, 256, 196), (512, 2048, 49), (2048, 512, 49), (2048, 512, 256), (512, 2048, 256),
                (512, 512, 256), (64, 32, 12544), (128, 64, 3136), (128, 128, 3136), (256, 128, 784),
                (256, 256, 784), (512, 256, 196), (512, 512, 196), (1024, 512, 49), (1024, 1024, 49)}
    shapes = set()
    for workload in paper_workloads("003"):
        net = get_network(workload.spec, batch=workload.batch)
        shapes |= {(s.m, s.k, s.n) for s in unique_gemm_shapes(net) if s.prunable}
    assert problems <= shapes
    assert get_network("transformer_base:seq_len=256").seq_len == 256


def test_gnmt_is_wu_et_al_eight_plus_eight_layers_of_1024() -> None:
    """Wu et al. 2016: 8 encoder layers (the bottom bidirectional), 8 decoder layers, 1024 LSTM nodes."""
    net = get_network("gnmt", batch=2, seq_len=30)
    cells = {layer.name.rsplit(".", 1)[0] for layer in net.layers if layer.kind is LayerKind.LSTM}
    encoder = {c for c in cells if c.startswith("encoder.")}
    decoder = {c for c in cells if c.startswith("decoder.")}
    assert encoder == {"encoder.lstm0_fw", "encoder.lstm0_bw", *(f"encoder.lstm{i}" for i in range(1, 8))}
    assert decoder == {f"decoder.lstm{i}" for i in range(8)}
    assert all(layer.m == 4 * 1024 for layer in net.layers if layer.kind is LayerKind.LSTM)
    assert net.layer("encoder.lstm1.ih").k == 2048 and net.layer("encoder.lstm2.ih").k == 1024
    assert net.layer("decoder.lstm5.ih").k == 2048  # [output below; attention context]
    v = net.layer("attention.v")
    assert (v.m, v.k, v.n, v.repeat) == (1, 1024, 2 * 30, 30)
    lstms = 2 * lstm_params(1024, 1024) + lstm_params(1024, 2048) + 6 * lstm_params(1024, 1024)
    lstms += 8 * lstm_params(1024, 2048)
    attention = 2 * 1024 * 1024 + 1024 + 1024 + 1  # memory and query layers, v, bias b, scale g
    vocab = 3 * 32000 * 1024  # source and target embeddings, softmax projection
    assert net.params == lstms + attention + vocab


def test_nmt_iwslt_is_tensorflow_nmt_iwslt15_json() -> None:
    """iwslt15.json: bi encoder of 2 layers (1 bidirectional), 2 decoder layers, 512 units, scaled Luong."""
    net = get_network("nmt_iwslt", batch=1)
    memory, context = net.layer("attention.memory_layer"), net.layer("attention.context")
    assert (memory.m, memory.k, context.m, context.k) == (512, 1024, 1024, 50)
    assert net.layer("attention.attention_layer").k == 512 + 1024
    expected = (2 * lstm_params(512, 512) + lstm_params(512, 1024) + lstm_params(512, 512)
                + 1024 * 512 + 1536 * 512 + 7709 * 512 + (17191 + 7709) * 512 + 1)
    assert net.params == expected == 27_451_905


def test_luong_nmt_is_emnlp_2015_section_4_1() -> None:
    """4 layers, 1000 cells, 1000-d embeddings, 50K vocabularies, input feeding; local-p attends 21 words."""
    net = get_network("luong_nmt", batch=1)
    assert net.layer("decoder.lstm0.ih").k == 2000 and net.layer("encoder.lstm3.ih").k == 1000
    expected = (4 * lstm_params(1000, 1000) + lstm_params(1000, 2000) + 3 * lstm_params(1000, 1000)
                + 1000 * 1000 + 2000 * 1000 + 50000 * 1000 + 2 * 50000 * 1000)
    assert net.params == expected == 221_032_000
    local = get_network("luong_nmt:attention=local-p")
    assert local.layer("attention.scores").m == 21 and local.layer("attention.context").k == 21
    assert local.params == expected + 1000 * 1000 + 1000


@pytest.mark.parametrize("workload", PAPER_WORKLOADS, ids=lambda w: f"{w.paper}-{w.label}")
def test_every_paper_variant_builds(workload) -> None:
    net = get_network(workload.spec, batch=workload.batch or 1)
    assert net.spec.startswith(network_spec(workload.spec).name) and workload.evidence
    assert workload in papers_using(net.name)


def test_paper_mapping() -> None:
    """Paper 001's Fig. 16 networks; every paper is covered; every network's provenance is recorded."""
    fig16 = [w.spec for w in paper_workloads("001")]
    assert fig16 == ["alexnet:variant=tf-slim", "vgg16", "resnet50", "resnext50_32x4d",
                     "show_and_tell:layers=lstm", "nmt_wmt16"]
    assert {w.paper for w in PAPER_WORKLOADS} == set(PAPERS)
    assert [w.spec for w in paper_workloads("004")] == ["vgg19", "resnet50", "luong_nmt"]
    with pytest.raises(ValueError, match="unknown paper '005'"):
        paper_workloads("005")
    for name in list_networks():
        spec = network_spec(name)
        assert spec.source and spec.reference


def test_spec_string_errors() -> None:
    """Unknown keys and values, non-integers, repeats and conflicts are named."""
    params = parse_spec("alexnet:variant=tf-slim, image_size=227")[1]
    assert params == {"variant": "tf-slim", "image_size": 227}
    with pytest.raises(ValueError, match=r"alexnet: variant='caffe' is not one of: torchvision, tf-slim"):
        get_network("alexnet:variant=caffe")
    with pytest.raises(ValueError, match="bad parameter 'depth=2'; it takes: seq_len, hidden, layers"):
        get_network("show_and_tell:depth=2")
    with pytest.raises(ValueError, match="seq_len must be an integer, got 'long'"):
        get_network("transformer_base:seq_len=long")
    with pytest.raises(ValueError, match="seq_len given twice"):
        get_network("bert_base:seq_len=8,seq_len=9")
    with pytest.raises(ValueError, match="seq_len=128 conflicts with seq_len=256 in the name"):
        get_network("transformer_base:seq_len=256", seq_len=128)
    with pytest.raises(ValueError, match="resnet50 takes no seq_len"):
        get_network("resnet50:seq_len=3")

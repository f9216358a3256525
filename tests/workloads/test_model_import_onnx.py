"""Importing an ONNX file as a GEMM layer table (issue 45 item 2). The models are built here with onnx.helper
(nothing is downloaded); a ResNet-50 bottleneck block must give the layers of stcsim.workloads.resnet."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from stcsim.workloads import LayerKind, ModelImportError, get_network, import_onnx  # noqa: E402
from stcsim.workloads.cli import main as workloads_main  # noqa: E402
from stcsim.workloads.resnet import resnet50  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "models" / "tiny_cnn_attn.onnx"


class Graph:
    """A small graph builder: zero-valued initializers, named nodes."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.inits: list = []

    def weight(self, name: str, *shape: int, dtype: type = np.float32) -> str:
        self.inits.append(numpy_helper.from_array(np.zeros(shape, dtype), name))
        return name

    def node(self, op: str, inputs: list[str], name: str, **attrs: object) -> str:
        out = f"{name}:out"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def save(self, path: Path, inputs: list, output: str, rank: int) -> Path:
        dims = [f"out{i}" for i in range(rank)]  # the checker wants a shape; inference fills it in
        graph = helper.make_graph(
            self.nodes, "g", inputs, [helper.make_tensor_value_info(output, TensorProto.FLOAT, dims)],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, path)
        return path


def _bottleneck(g: Graph, prefix: str, x: str, cin: int, planes: int, stride: int) -> str:
    """torchvision's Bottleneck as the PyTorch exporter writes it: Conv (+ BatchNorm folded away), Relu,
    Add; node names are the module names."""
    width, out = planes, planes * 4

    def conv(name: str, inp: str, ci: int, co: int, k: int, s: int) -> str:
        pad = k // 2
        return g.node("Conv", [inp, g.weight(f"{name}.weight", co, ci, k, k), g.weight(f"{name}.bias", co)],
                      name, kernel_shape=[k, k], strides=[s, s], pads=[pad] * 4)

    y = g.node("Relu", [conv(f"{prefix}.conv1", x, cin, width, 1, 1)], f"{prefix}.relu1")
    y = g.node("Relu", [conv(f"{prefix}.conv2", y, width, width, 3, stride)], f"{prefix}.relu2")
    y = conv(f"{prefix}.conv3", y, width, out, 1, 1)
    identity = conv(f"{prefix}.downsample.0", x, cin, out, 1, stride)
    return g.node("Relu", [g.node("Add", [y, identity], f"{prefix}.add")], f"{prefix}.relu3")


def test_resnet_block_matches_the_hand_written_table(tmp_path: Path) -> None:
    """ResNet-50's layer2.0 (stride 2, with a downsample) from its 256 x 56 x 56 input, batch symbolic: M, N,
    K and the conv geometry of every layer equal stcsim.workloads.resnet's for batch 2."""
    g = Graph()
    out = _bottleneck(g, "layer2.0", "x", 256, 128, 2)
    path = g.save(tmp_path / "block.onnx",
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 256, 56, 56])], out, 4)
    net = import_onnx(str(path), batch=2)
    reference = {layer.name: layer for layer in resnet50(2, 224).layers}
    assert [layer.name for layer in net.layers] == [
        "layer2.0.conv1", "layer2.0.conv2", "layer2.0.conv3", "layer2.0.downsample.0"]
    for layer in net.layers:
        ref = reference[layer.name]
        assert (layer.kind, layer.m, layer.n, layer.k, layer.groups, layer.conv) == (
            ref.kind, ref.m, ref.n, ref.k, ref.groups, ref.conv), layer.name
        assert layer.bias and layer.prunable
    assert net.layer("layer2.0.conv2").n == 2 * 28 * 28
    assert net.extra_params == ()  # every initializer is a conv weight or bias


def _attention(tmp_path: Path, symbolic: bool = True) -> Path:
    """A PyTorch-style export of one attention head block: MatMul + Add (bias) projections, the score MatMul
    of two activations, Softmax, the context MatMul; a Gemm classifier with transB; a LayerNorm."""
    g = Graph()
    d, heads = 32, 4
    x = "tokens"
    q, k, v = (g.node("Add", [g.node("MatMul", [x, g.weight(f"{p}.weight_t", d, d)], f"/attn/{p}/MatMul"),
                              g.weight(f"{p}.bias", d)], f"/attn/{p}/Add") for p in ("q", "k", "v"))
    shape = g.weight("shape", 4, dtype=np.int64)
    g.inits[-1] = numpy_helper.from_array(np.array([0, 0, heads, d // heads], np.int64), "shape")

    def heads_first(t: str, name: str, perm: list[int]) -> str:
        return g.node("Transpose", [g.node("Reshape", [t, shape], f"{name}/Reshape")], f"{name}/T", perm=perm)

    qh, kh, vh = heads_first(q, "/q", [0, 2, 1, 3]), heads_first(k, "/k", [0, 2, 3, 1]), \
        heads_first(v, "/v", [0, 2, 1, 3])
    s = g.node("MatMul", [qh, kh], "/attn/MatMul")
    p = g.node("Softmax", [g.node("Div", [s, g.weight("scale", 1)], "/attn/Div")], "/attn/Softmax", axis=-1)
    c = g.node("MatMul", [p, vh], "/attn/MatMul_1")
    flat = g.node("ReduceMean", [g.node("ReduceMean", [c, ], "/pool1", axes=[1], keepdims=0)], "/pool2",
                  axes=[1], keepdims=0)
    normed = g.node("LayerNormalization", [flat, g.weight("ln.weight", 8), g.weight("ln.bias", 8)], "/ln")
    logits = g.node("Gemm", [normed, g.weight("fc.weight", 5, 8), g.weight("fc.bias", 5)], "/fc/Gemm",
                    transB=1)
    dims = ["batch", "seq", d] if symbolic else [2, 6, d]
    return g.save(tmp_path / "attn.onnx", [helper.make_tensor_value_info(x, TensorProto.FLOAT, dims)], logits,
                  2)


def test_attention_projections_scores_context_and_gemm(tmp_path: Path) -> None:
    net = import_onnx(str(_attention(tmp_path)), batch=2, dims={"seq": "6"})
    rows = [(layer.name, layer.kind, layer.m, layer.n, layer.k, layer.groups, layer.batched, layer.bias,
             layer.prunable) for layer in net.layers]
    assert rows == [
        ("/attn/q/MatMul", LayerKind.FC, 32, 12, 32, 1, False, True, True),
        ("/attn/k/MatMul", LayerKind.FC, 32, 12, 32, 1, False, True, True),
        ("/attn/v/MatMul", LayerKind.FC, 32, 12, 32, 1, False, True, True),
        ("/attn/MatMul", LayerKind.ATTN_SCORE, 6, 6, 8, 8, True, False, False),  # M = keys, N = queries
        ("/attn/MatMul_1", LayerKind.ATTN_CONTEXT, 8, 6, 6, 8, True, False, False),
        ("/fc/Gemm", LayerKind.FC, 5, 2, 8, 1, False, True, True),
    ]
    assert dict(net.extra_params) == {"ln.weight": (8,), "ln.bias": (8,)}
    assert net.params == 3 * (32 * 32 + 32) + 5 * 8 + 5 + 16
    serial = get_network(f"onnx:{tmp_path / 'attn.onnx'}:seq=6,launch=serial", batch=2)
    assert not serial.layer("/attn/MatMul").batched and serial.options[-1] == ("launch", "serial")


def test_symbolic_dimensions(tmp_path: Path) -> None:
    path = _attention(tmp_path)
    with pytest.raises(ModelImportError, match="symbolic input dimension 'seq' has no value"):
        get_network(f"onnx:{path}")
    with pytest.raises(ValueError, match="colour is no symbolic input dimension of the model; it takes: seq"):
        get_network(f"onnx:{path}:colour=3")
    # --seq of a network run adds seq_len=: the key names the dimension it sets
    with pytest.raises(ValueError, match="seq_len is no symbolic input dimension"):
        get_network(f"onnx:{path}", seq_len=6)
    assert get_network(f"onnx:{path}:seq=12", batch=3).layer("/attn/q/MatMul").n == 36


def test_a_fixed_batch_is_kept(tmp_path: Path) -> None:
    path = _attention(tmp_path, symbolic=False)
    assert get_network(f"onnx:{path}", batch=2).layer("/fc/Gemm").n == 2
    with pytest.raises(ModelImportError, match="fixed batch of 2; batch 4 needs a model exported with a dyn"):
        get_network(f"onnx:{path}", batch=4)


def test_same_padding_strides_and_conv1d(tmp_path: Path) -> None:
    g = Graph()
    y = g.node("Conv", ["x", g.weight("c.weight", 8, 3, 3, 3)], "c", kernel_shape=[3, 3], strides=[2, 2],
               auto_pad="SAME_UPPER")
    flat = g.node("Reshape", [y, g.weight("s", 3, dtype=np.int64)], "flat")
    g.inits[-1] = numpy_helper.from_array(np.array([0, 8, -1], np.int64), "s")
    z = g.node("Conv", [flat, g.weight("c1.weight", 4, 8, 5)], "c1", kernel_shape=[5], pads=[2, 2])
    path = g.save(tmp_path / "conv.onnx", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         ["b", 3, 15, 15])], z, 3)
    c, c1 = import_onnx(str(path), batch=1).layers
    assert (c.conv.padding, c.conv.out_hw, c.n, c.k) == ((1, 1), (8, 8), 64, 27)
    assert (c1.conv.kernel, c1.conv.in_hw, c1.n, c1.k, c1.m) == ((1, 5), (1, 64), 64, 40, 4)


@pytest.mark.parametrize("op,attrs,message", [
    ("ConvTranspose", {"kernel_shape": [2, 2], "strides": [2, 2]}, "op ConvTranspose (a transposed "
     "convolution) carries GEMM work and is not supported"),
    ("Conv", {"kernel_shape": [1, 1, 1]}, "a 3-D convolution is not supported (1-D and 2-D are)"),
])
def test_unsupported_ops_name_the_file_and_node(tmp_path: Path, op: str, attrs: dict, message: str) -> None:
    g = Graph()
    spatial = len(attrs["kernel_shape"])
    out = g.node(op, ["x", g.weight("w", 4, 4, *attrs["kernel_shape"])], "decoder.up", **attrs)
    path = g.save(tmp_path / "bad.onnx",
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, *[8] * spatial])], out,
                  2 + spatial)
    with pytest.raises(ModelImportError) as err:
        get_network(f"onnx:{path}")
    assert err.value.node == "decoder.up" and err.value.source == str(path)
    assert str(err.value) == f"{path}, node 'decoder.up': {message}"


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ModelImportError, match=r"nothere\.onnx: no such file"):
        get_network(f"onnx:{tmp_path / 'nothere.onnx'}")
    text = tmp_path / "notes.onnx"
    text.write_text("these are not the weights you are looking for\n" * 20)
    with pytest.raises(ModelImportError, match=r"notes\.onnx: not (an|a valid) ONNX model"):
        get_network(f"onnx:{text}")
    with pytest.raises(ModelImportError, match="not a file"):
        get_network(f"onnx:{tmp_path}")


def test_cli_errors_are_one_line_with_status_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from stcsim.harness.network_run import main as run_main

    missing = f"onnx:{tmp_path / 'missing.onnx'}"
    for main, argv in ((workloads_main, [missing]),
                       (run_main, ["--workload", missing, "--out", str(tmp_path / "out"), "--no-progress"])):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == f"error: {tmp_path / 'missing.onnx'}: no such file\n"


def test_the_example_model() -> None:
    """examples/models/tiny_cnn_attn.onnx (docs/workloads.md) is what make_tiny_onnx.py builds."""
    net = get_network("onnx:examples/models/tiny_cnn_attn.onnx" if Path.cwd() == REPO else f"onnx:{EXAMPLE}",
                      batch=2)
    rows = [(layer.name, layer.kind.value, layer.m, layer.n, layer.k, layer.groups) for layer in net.layers]
    assert rows == [
        ("conv1", "conv", 16, 512, 27, 1), ("layer1.0.conv1", "conv", 16, 128, 144, 1),
        ("layer1.0.conv2", "conv", 16, 128, 144, 1), ("attn.q_proj", "fc", 16, 128, 16, 1),
        ("attn.k_proj", "fc", 16, 128, 16, 1), ("attn.v_proj", "fc", 16, 128, 16, 1),
        ("attn.scores", "attn_score", 64, 64, 16, 2), ("attn.context", "attn_context", 16, 64, 64, 2),
        ("fc", "fc", 10, 2, 16, 1)]
    spec = importlib.util.spec_from_file_location("make_tiny_onnx", EXAMPLE.with_name("make_tiny_onnx.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rebuilt = module.build()
    committed = onnx.load(str(EXAMPLE))
    nodes = [(n.name, n.op_type) for n in committed.graph.node]
    assert [(n.name, n.op_type) for n in rebuilt.graph.node] == nodes
    weights = [(t.name, tuple(t.dims)) for t in committed.graph.initializer]
    assert [(t.name, tuple(t.dims)) for t in rebuilt.graph.initializer] == weights


def test_the_example_model_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """An imported model through a network run: its cheapest layer simulated and checked against numpy."""
    from stcsim.harness.network_run import main as run_main

    status = run_main(["--workload", f"onnx:{EXAMPLE}", "--config", "v100", "--layers", "1", "--jobs", "1",
                       "--out", str(tmp_path / "run"), "--no-progress"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "network total" in out and (tmp_path / "run" / "results.csv").exists()

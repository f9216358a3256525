"""Shape sanity of the sequence models: Transformer base, paper 001's NMT, Show and Tell, BERT."""

import pytest

from stcsim.workloads import LayerKind, get_network


def test_transformer_base_shapes_and_macs() -> None:
    batch, seq, d, ff, heads = 2, 32, 512, 2048, 8
    net = get_network("transformer_base", batch=batch, seq_len=seq)
    tokens = batch * seq
    q = net.layer("encoder.layers.0.self_attn.q_proj")
    assert (q.kind, q.m, q.n, q.k, q.prunable) == (LayerKind.ATTN_PROJ, d, tokens, d, True)
    scores = net.layer("decoder.layers.5.encoder_attn.scores")
    assert (scores.m, scores.n, scores.k, scores.groups, scores.prunable) == (seq, seq, d // heads, 16, False)
    context = net.layer("decoder.layers.5.encoder_attn.context")
    assert (context.m, context.n, context.k, context.weight_shape) == (d // heads, seq, seq, None)
    assert (net.layer("encoder.layers.3.fc1").m, net.layer("encoder.layers.3.fc2").k) == (ff, ff)
    assert sum(".fc1" in layer.name for layer in net.layers) == 12
    per_token_attention = 4 * d * d + 2 * seq * d
    encoder = per_token_attention + 2 * d * ff
    decoder = 2 * per_token_attention + 2 * d * ff
    assert net.macs == tokens * (6 * encoder + 6 * decoder + 37000 * d)
    assert net.params == pytest.approx(65e6, rel=0.05)  # Vaswani et al. Table 3 quote "65 M"


def test_nmt_wmt16_matches_paper_001_architecture() -> None:
    batch, seq = 4, 20
    net = get_network("nmt_wmt16", batch=batch, seq_len=seq)
    lstms = [layer for layer in net.layers if layer.kind is LayerKind.LSTM]
    cells = sorted({layer.name.rsplit(".", 1)[0] for layer in lstms})
    assert cells == ["decoder.lstm0", "decoder.lstm1", "decoder.lstm2", "decoder.lstm3",
                     "encoder.lstm0_bw", "encoder.lstm0_fw", "encoder.lstm1"]
    for layer in lstms:
        assert (layer.m, layer.n, layer.repeat, layer.prunable) == (4 * 512, batch, seq, True)
        assert layer.k == (512 if layer.name.endswith(".hh") or "lstm0_" in layer.name else 1024)
    scores = net.layer("attention.scores")
    assert (scores.m, scores.n, scores.k, scores.groups, scores.repeat) == (seq, 1, 512, batch, seq)
    assert net.layer("attention.memory_layer").n == batch * seq
    assert net.layer("decoder.projection").weight_shape == (32000, 512)


def test_hidden_size_is_a_parameter() -> None:
    net = get_network("nmt_wmt16", hidden=1024)
    ih = net.layer("decoder.lstm2.ih")
    assert (ih.m, ih.k, ih.weight_shape) == (4096, 2048, (4096, 2048))


def test_show_and_tell_lstm_over_inception_feature() -> None:
    net = get_network("show_and_tell", batch=64, seq_len=20)
    assert net.layer("image_embedding").weight_shape == (512, 2048)
    ih, hh = net.layer("lstm.ih"), net.layer("lstm.hh")
    assert (ih.m, ih.n, ih.k, ih.repeat) == (2048, 64, 512, 21)  # image step + 20 word steps
    assert (hh.m, hh.n, hh.k, hh.repeat) == (2048, 64, 512, 21)
    assert ih.params + hh.params == 4 * 512 * (512 + 512 + 1)  # one TensorFlow gate bias
    assert net.layer("logits").repeat == 20


def test_bert_attention_gemms() -> None:
    net = get_network("bert_base", batch=8, seq_len=384)
    scores = net.layer("encoder.layer.11.attention.self.scores")
    assert (scores.m, scores.n, scores.k, scores.groups) == (384, 384, 64, 8 * 12)
    assert not scores.prunable and not net.layer("encoder.layer.0.attention.self.context").has_weights
    assert net.layer("encoder.layer.0.intermediate.dense").weight_shape == (3072, 768)
    assert net.layer("pooler.dense").n == 8

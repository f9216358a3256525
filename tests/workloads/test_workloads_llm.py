"""The LLM layer tables against their published configs, hand-computed shapes and parameter counts."""

import pytest

from stcsim.workloads import LayerKind, get_network, unique_gemm_shapes
from stcsim.workloads.llm import CONFIGS


def _shapes(spec: str, batch: int = 1) -> dict[str, tuple[int, int, int, bool, int, int]]:
    """First layer name of each unique shape (its last dotted part) -> (M, N, K, prunable, count, batch)."""
    return {s.layers[0].rsplit(".", 1)[-1]: (s.m, s.n, s.k, s.prunable, s.count, s.batch)
            for s in unique_gemm_shapes(get_network(spec, batch=batch))}


def test_llama2_7b_prefill_shapes_by_hand() -> None:
    # hidden 4096, FFN 11008, 32 heads of 128, 32 layers, vocab 32000; prefill of 2048 tokens
    assert _shapes("llama2-7b:phase=prefill,seq_len=2048") == {
        "q_proj": (4096, 2048, 4096, True, 4 * 32, 1),  # q, k, v, o: one shape (MHA), 4 per layer
        "scores": (2048, 2048, 128, False, 32 * 32, 32),  # K Q^T per head, 32 heads in one launch
        "context": (128, 2048, 2048, False, 32 * 32, 32),
        "gate_proj": (11008, 2048, 4096, True, 2 * 32, 1),  # gate and up
        "down_proj": (4096, 2048, 11008, True, 32, 1),
        "lm_head": (32000, 1, 4096, True, 1, 1),  # the last token's logits
    }


def test_llama3_8b_gqa_decode_shapes_by_hand() -> None:
    # GQA: 32 query heads share 8 KV heads (group 4); FFN 14336; vocab 128256; decode, batch 2, 4096 keys
    assert _shapes("llama3_8b:phase=decode,kv_len=4096", batch=2) == {
        "q_proj": (4096, 2, 4096, True, 2 * 32, 1),  # q and o
        "k_proj": (8 * 128, 2, 4096, True, 2 * 32, 1),  # k and v: kv_heads x head_dim outputs
        "scores": (4096, 4, 128, False, 2 * 8 * 32, 16),  # per (batch, KV head): its 4 query heads along N
        "context": (128, 4, 4096, False, 2 * 8 * 32, 16),
        "gate_proj": (14336, 2, 4096, True, 2 * 32, 1),
        "down_proj": (4096, 2, 14336, True, 32, 1),
        "lm_head": (128256, 2, 4096, True, 1, 1),
    }


def test_opt_plain_ffn_with_biases() -> None:
    net = get_network("opt-6.7b:seq=16")
    names = [layer.name for layer in net.layers[:8]]
    assert [n.rsplit(".", 1)[-1] for n in names] == ["q_proj", "k_proj", "v_proj", "scores", "context",
                                                     "out_proj", "fc1", "fc2"]
    fc1 = net.layer("model.decoder.layers.0.fc1")
    assert (fc1.m, fc1.n, fc1.k, fc1.bias) == (16384, 16, 4096, True)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_match_the_published_count(name: str) -> None:
    assert get_network(name, seq_len=8).params == CONFIGS[name].params


def test_llama2_7b_parameters_by_hand() -> None:
    per_block = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096  # projections, SwiGLU FFN, two RMSNorms
    assert CONFIGS["llama2_7b"].params == 32 * per_block + 2 * 32000 * 4096 + 4096  # + embed, lm_head, norm


def test_prefill_macs_are_the_gemms_of_every_token() -> None:
    net = get_network("llama2_7b:seq_len=128")
    weights = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) * 128 + 32000 * 4096
    attention = 32 * 32 * 2 * 128 * 128 * 128
    assert net.macs == weights + attention
    assert net.seq_len == net.kv_len == 128


def test_phase_defaults_and_decode() -> None:
    decode = get_network("llama2_7b:phase=decode")
    assert (decode.seq_len, decode.kv_len, decode.spec) == (1, 2048, "llama2_7b:phase=decode")
    scores = decode.layer("model.layers.0.self_attn.scores")
    assert (scores.kind, scores.m, scores.n, scores.k, scores.groups, scores.batched) == (
        LayerKind.ATTN_SCORE, 2048, 1, 128, 32, True)
    prefill = get_network("llama2_7b:kv_len=3000,seq_len=1000")  # a cached prefix of 2000 tokens
    assert prefill.layer("model.layers.0.self_attn.context").k == 3000


@pytest.mark.parametrize("spec,message", [
    ("llama2_7b:seq_len=4097", r"seq_len for llama2_7b must be an integer in \[1, 4096\]"),
    ("llama2_7b:seq_len=64,kv_len=32", r"kv_len for llama2_7b must be an integer in \[64, 4096\]"),
    ("llama2_7b:phase=train", "phase='train' is not one of: prefill, decode"),
    ("opt_6.7b:seq_len=4096", r"in \[1, 2048\]"),
])
def test_bad_lengths_and_phases(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_network(spec)


def test_kv_len_is_only_for_llms() -> None:
    with pytest.raises(ValueError, match="bert_base takes no kv_len"):
        get_network("bert_base", kv_len=128)


def test_serial_launch_option() -> None:
    batched = {s.layers[0]: s for s in unique_gemm_shapes(get_network("bert_base"))}
    serial = {s.layers[0]: s for s in unique_gemm_shapes(get_network("bert_base:launch=serial"))}
    name = "encoder.layer.0.attention.self.scores"
    assert (batched[name].count, batched[name].batch, batched[name].launches) == (144, 12, 12)
    assert (serial[name].count, serial[name].batch, serial[name].launches) == (144, 1, 144)
    assert get_network("bert:launch=serial").spec == "bert_base:launch=serial"

"""BERT-base (HuggingFace names) and the Transformer base model (fairseq names), whole sequence at once.

Every token of the sequence goes through one GEMM (N = batch x seq_len); the decoder of the Transformer runs
in teacher-forcing mode (all target positions at once; the causal mask does not shrink the GEMMs). Source
and target lengths are both ``seq_len``. Q, K and V projections are separate GEMMs with all heads combined
(M = d_model); attention scores and context are one GEMM per (batch element, head).
"""

from __future__ import annotations

from stcsim.workloads.build import attention, linear
from stcsim.workloads.layer import Layer, LayerKind
from stcsim.workloads.network import Network

BERT_VOCAB = 30522
BERT_MAX_POSITIONS = 512
TRANSFORMER_VOCAB = 37000  # shared source/target BPE vocabulary of WMT14 En-De (Vaswani et al. 2017)


def _multi_head(
    projections: tuple[str, str, str, str], prefix: str, batch: int, d_model: int, heads: int, q_len: int,
    kv_len: int,
) -> list[Layer]:
    """Q, K, V projections, scores, context and the output projection (with the LayerNorm after it)."""
    q, k, v, out = projections
    proj = LayerKind.ATTN_PROJ
    scores, context = attention(prefix, batch, heads, d_model // heads, q_len, kv_len)
    return [
        linear(q, d_model, d_model, batch * q_len, proj),
        linear(k, d_model, d_model, batch * kv_len, proj),
        linear(v, d_model, d_model, batch * kv_len, proj),
        scores,
        context,
        linear(out, d_model, d_model, batch * q_len, proj, norm_params=2 * d_model),
    ]


def _feed_forward(fc1: str, fc2: str, tokens: int, d_model: int, d_ff: int) -> list[Layer]:
    """The position-wise feed-forward pair, with the LayerNorm after the second GEMM."""
    return [linear(fc1, d_ff, d_model, tokens), linear(fc2, d_model, d_ff, tokens, norm_params=2 * d_model)]


def bert_base(batch: int, seq_len: int) -> Network:
    """BERT-base (Devlin et al. 2018): 12 layers, d=768, 12 heads, FFN 3072, plus the pooler.

    Embedding tables and their LayerNorm are ``extra_params`` (lookups, no GEMM).
    """
    d_model, heads, d_ff, tokens = 768, 12, 3072, batch * seq_len
    layers: list[Layer] = []
    for index in range(12):
        p = f"encoder.layer.{index}"
        names = (f"{p}.attention.self.query", f"{p}.attention.self.key", f"{p}.attention.self.value",
                 f"{p}.attention.output.dense")
        layers += _multi_head(names, f"{p}.attention.self", batch, d_model, heads, seq_len, seq_len)
        layers += _feed_forward(f"{p}.intermediate.dense", f"{p}.output.dense", tokens, d_model, d_ff)
    layers.append(linear("pooler.dense", d_model, d_model, batch))
    extras = (
        ("embeddings.word_embeddings.weight", (BERT_VOCAB, d_model)),
        ("embeddings.position_embeddings.weight", (BERT_MAX_POSITIONS, d_model)),
        ("embeddings.token_type_embeddings.weight", (2, d_model)),
        ("embeddings.LayerNorm.weight", (d_model,)),
        ("embeddings.LayerNorm.bias", (d_model,)),
    )
    return Network("bert_base", tuple(layers), batch, seq_len=seq_len, extra_params=extras)


def _fairseq_attention(p: str, batch: int, d_model: int, heads: int, q_len: int, kv_len: int) -> list[Layer]:
    names = (f"{p}.q_proj", f"{p}.k_proj", f"{p}.v_proj", f"{p}.out_proj")
    return _multi_head(names, p, batch, d_model, heads, q_len, kv_len)


def transformer_base(batch: int, seq_len: int) -> Network:
    """Transformer base (Vaswani et al. 2017): 6+6 layers, d=512, 8 heads, FFN 2048, sinusoidal positions.

    The shared source/target embedding is tied to ``decoder.output_projection`` (no bias); its parameters are
    counted once, on that layer.
    """
    d_model, heads, d_ff, tokens = 512, 8, 2048, batch * seq_len
    layers: list[Layer] = []
    for index in range(6):
        p = f"encoder.layers.{index}"
        layers += _fairseq_attention(f"{p}.self_attn", batch, d_model, heads, seq_len, seq_len)
        layers += _feed_forward(f"{p}.fc1", f"{p}.fc2", tokens, d_model, d_ff)
    for index in range(6):
        p = f"decoder.layers.{index}"
        layers += _fairseq_attention(f"{p}.self_attn", batch, d_model, heads, seq_len, seq_len)
        layers += _fairseq_attention(f"{p}.encoder_attn", batch, d_model, heads, seq_len, seq_len)
        layers += _feed_forward(f"{p}.fc1", f"{p}.fc2", tokens, d_model, d_ff)
    layers.append(linear("decoder.output_projection", TRANSFORMER_VOCAB, d_model, tokens, bias=False))
    return Network("transformer_base", tuple(layers), batch, seq_len=seq_len)

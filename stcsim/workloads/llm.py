"""Decoder-only LLMs (Llama-2, Llama-3, OPT) from their published configs, as GEMM layer tables per phase.

Every model is a :class:`LlmConfig` with the values of its Hugging Face ``config.json`` (cited per model in
``CONFIGS``). A transformer block lowers to (HF layer names, ``model.layers.{i}`` /
``model.decoder.layers.{i}``):

* ``self_attn.q_proj`` (M = heads x head_dim), ``k_proj`` and ``v_proj`` (M = kv_heads x head_dim: grouped
  query attention shares each K/V head among ``heads / kv_heads`` query heads), ``o_proj`` / ``out_proj``;
* the attention score (K Q^T) and context (V^T P^T) GEMMs, activation x activation (not prunable), one GEMM
  per (batch element, KV head) with the query heads of its group stacked along N (``group x q_len``
  columns: the same work as one GEMM per query head, each K/V head read once), all of a layer's run as one
  strided-batched launch (``Layer.batched``);
* Llama: the gated FFN (SwiGLU) ``mlp.gate_proj``, ``mlp.up_proj`` (M = intermediate) and ``mlp.down_proj``;
  OPT: ``fc1``, ``fc2`` (ReLU);
* after the last block the LM head (``lm_head``, M = vocab) over the positions whose next token is sampled:
  one per sequence (the serving frameworks' prefill and every decode step).

Phases: ``prefill`` runs ``seq_len`` prompt tokens per sequence (N = batch x seq_len) attending ``kv_len``
keys (default ``seq_len``; more with a cached prefix); ``decode`` runs ``seq_len`` new tokens per sequence
(default 1; N = batch x seq_len) attending ``kv_len`` cached keys (default 2048, the new ones included). The
causal mask does not shrink the GEMMs (a masked kernel skips about half of a prefill's score/context work).
Embedding tables are lookups (``extra_params``); OPT's LM head is tied to its token embedding (counted once,
on ``lm_head``); RMSNorm weights (Llama) and LayerNorm gamma/beta (OPT) are counted as ``norm_params``.
"""

from __future__ import annotations

from dataclasses import dataclass

from stcsim.workloads.build import attention_context, attention_scores, linear
from stcsim.workloads.layer import Layer, LayerKind
from stcsim.workloads.network import Network

PREFILL, DECODE = "prefill", "decode"
PHASES = (PREFILL, DECODE)
DEFAULT_PREFILL_SEQ = 2048
DEFAULT_DECODE_KV = 2048


@dataclass(frozen=True)
class LlmConfig:
    """The architecture values of a model's config.json (Hugging Face names in the comments)."""

    name: str
    family: str            # "llama" (gated FFN, RMSNorm, no biases) or "opt" (fc1/fc2, LayerNorm, biases)
    hidden: int            # hidden_size
    intermediate: int      # intermediate_size (Llama) / ffn_dim (OPT)
    heads: int             # num_attention_heads
    kv_heads: int          # num_key_value_heads (Llama; = heads for MHA)
    layers: int            # num_hidden_layers
    vocab: int             # vocab_size
    max_positions: int     # max_position_embeddings
    source: str            # where the values come from
    reference: str         # the model's paper
    params: int | None = None  # the published exact parameter count, where one is published

    @property
    def head_dim(self) -> int:
        """hidden_size / num_attention_heads."""
        return self.hidden // self.heads

    @property
    def group(self) -> int:
        """Query heads per K/V head (1 for multi-head attention)."""
        return self.heads // self.kv_heads


_HF = "Hugging Face {} config.json"
_LLAMA2 = "Touvron et al. 2023, 'Llama 2: Open foundation and fine-tuned chat models' (arXiv:2307.09288)"
_LLAMA3 = "Grattafiori et al. 2024, 'The Llama 3 herd of models' (arXiv:2407.21783)"
_OPT = "Zhang et al. 2022, 'OPT: Open pre-trained transformer language models' (arXiv:2205.01068)"

CONFIGS = {
    c.name: c for c in (
        LlmConfig("llama2_7b", "llama", 4096, 11008, 32, 32, 32, 32000, 4096,
                  _HF.format("meta-llama/Llama-2-7b-hf"), _LLAMA2, 6_738_415_616),
        LlmConfig("llama2_13b", "llama", 5120, 13824, 40, 40, 40, 32000, 4096,
                  _HF.format("meta-llama/Llama-2-13b-hf"), _LLAMA2, 13_015_864_320),
        LlmConfig("llama2_70b", "llama", 8192, 28672, 64, 8, 80, 32000, 4096,
                  _HF.format("meta-llama/Llama-2-70b-hf"), _LLAMA2, 68_976_648_192),
        LlmConfig("llama3_8b", "llama", 4096, 14336, 32, 8, 32, 128256, 8192,
                  _HF.format("meta-llama/Meta-Llama-3-8B"), _LLAMA3, 8_030_261_248),
        LlmConfig("llama3_70b", "llama", 8192, 28672, 64, 8, 80, 128256, 8192,
                  _HF.format("meta-llama/Meta-Llama-3-70B"), _LLAMA3, 70_553_706_496),
        LlmConfig("opt_6.7b", "opt", 4096, 16384, 32, 32, 32, 50272, 2048,
                  _HF.format("facebook/opt-6.7b"), _OPT, 6_658_473_984),
    )
}
OPT_POSITION_OFFSET = 2
"""OPT's learned position table has max_position_embeddings + 2 rows (OPTLearnedPositionalEmbedding)."""


def _attention(prefix: str, c: LlmConfig, batch: int, q_len: int, kv_len: int) -> tuple[Layer, Layer]:
    """Scores and context: one GEMM per (batch element, KV head), the group's query heads along N."""
    groups, n = batch * c.kv_heads, c.group * q_len
    return (attention_scores(prefix, groups, c.head_dim, n, kv_len, 1),
            attention_context(prefix, groups, c.head_dim, n, kv_len, 1))


def _block(c: LlmConfig, index: int, batch: int, q_len: int, kv_len: int) -> list[Layer]:
    tokens, kv_dim, bias = batch * q_len, c.kv_heads * c.head_dim, c.family == "opt"
    proj = LayerKind.ATTN_PROJ
    if c.family == "opt":
        p, norm = f"model.decoder.layers.{index}", 2 * c.hidden  # LayerNorm gamma + beta
        out, ffn = f"{p}.self_attn.out_proj", [
            linear(f"{p}.fc1", c.intermediate, c.hidden, tokens, norm_params=norm),  # + final_layer_norm
            linear(f"{p}.fc2", c.hidden, c.intermediate, tokens),
        ]
    else:
        p, norm = f"model.layers.{index}", c.hidden  # RMSNorm weight
        out, ffn = f"{p}.self_attn.o_proj", [
            linear(f"{p}.mlp.gate_proj", c.intermediate, c.hidden, tokens, bias=False,
                   norm_params=norm),  # + post_attention_layernorm
            linear(f"{p}.mlp.up_proj", c.intermediate, c.hidden, tokens, bias=False),
            linear(f"{p}.mlp.down_proj", c.hidden, c.intermediate, tokens, bias=False),
        ]
    a = f"{p}.self_attn"
    return [
        linear(f"{a}.q_proj", c.heads * c.head_dim, c.hidden, tokens, proj, bias=bias, norm_params=norm),
        linear(f"{a}.k_proj", kv_dim, c.hidden, tokens, proj, bias=bias),
        linear(f"{a}.v_proj", kv_dim, c.hidden, tokens, proj, bias=bias),
        *_attention(a, c, batch, q_len, kv_len),
        linear(out, c.hidden, c.heads * c.head_dim, tokens, proj, bias=bias),
        *ffn,
    ]


def llm(model: str, batch: int, seq_len: int, kv_len: int, phase: str) -> Network:
    """The layer table of ``model`` (a key of ``CONFIGS``) for one forward pass of ``phase`` (module
    docstring): ``seq_len`` tokens per sequence attending ``kv_len`` keys."""
    c = CONFIGS[model]
    if phase not in PHASES:
        raise ValueError(f"{model}: phase={phase!r} is not one of: {', '.join(PHASES)}")
    if kv_len < seq_len:
        raise ValueError(f"{model}: kv_len={kv_len} < seq_len={seq_len}: the keys include the tokens of "
                         "this pass")
    layers: list[Layer] = []
    for index in range(c.layers):
        layers += _block(c, index, batch, seq_len, kv_len)
    if c.family == "opt":
        head = linear("lm_head", c.vocab, c.hidden, batch, bias=False, norm_params=2 * c.hidden)
        positions = c.max_positions + OPT_POSITION_OFFSET
        extras = (("model.decoder.embed_positions.weight", (positions, c.hidden)),)
    else:
        head = linear("lm_head", c.vocab, c.hidden, batch, bias=False, norm_params=c.hidden)  # + model.norm
        extras = (("model.embed_tokens.weight", (c.vocab, c.hidden)),)
    layers.append(head)
    return Network(model, tuple(layers), batch, seq_len=seq_len, extra_params=extras, kv_len=kv_len)


def default_lengths(phase: str) -> tuple[int | None, int | None]:
    """(seq_len, kv_len) defaults of a phase; None: the other's value (prefill's kv_len = its seq_len)."""
    return (DEFAULT_PREFILL_SEQ, None) if phase == PREFILL else (1, DEFAULT_DECODE_KV)

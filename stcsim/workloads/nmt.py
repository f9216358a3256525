"""The LSTM translation models of the papers, unrolled per time step (N = batch, repeat = steps).

Source and target lengths are both ``seq_len``. Each LSTM is its two gate GEMMs (``.ih`` input weights
4H x in, ``.hh`` recurrent weights 4H x H); TensorFlow cells carry one gate bias (on ``.ih``). Encoder
memory projections run once over all source positions (N = batch x seq_len); everything in the decoder
runs once per target step. Embedding tables are lookups (``extra_params``).

* :func:`nmt_wmt16`: the NMT of paper 001 (2-layer encoder, first bidirectional, 4-layer decoder).
* :func:`gnmt`: GNMT (Wu et al. 2016), paper 000's GNMT: 8 + 8 layers of 1024.
* :func:`nmt_iwslt`: tensorflow/nmt's IWSLT'15 En-Vi model (``standard_hparams/iwslt15.json``), paper 002.
* :func:`luong_nmt`: Luong, Pham & Manning (EMNLP 2015), paper 004's NMT [30]: 4 + 4 layers of 1000.
"""

from __future__ import annotations

from stcsim.workloads.build import attention as dot_product_attention
from stcsim.workloads.build import attention_context, attention_scores, linear, lstm
from stcsim.workloads.layer import Layer, LayerKind
from stcsim.workloads.network import Network

WMT16_BPE_VOCAB = 32000  # WMT16 En-De BPE with 32k merges (tensorflow/nmt recipe), source and target each
GNMT_WORDPIECES = 32000  # Wu et al. 2016: wordpiece model with a 32K vocabulary (WPM-32K)
IWSLT15_EN_VOCAB = 17191  # Stanford NMT IWSLT'15 vocab.en (the file tensorflow/nmt's recipe downloads)
IWSLT15_VI_VOCAB = 7709  # ... vocab.vi
LUONG_VOCAB = 50000  # Luong et al. 2015: "top 50K most frequent words for both languages"
LUONG_LOCAL_WINDOW = 10  # Luong et al. 2015: local attention window half-width D, "empirically set D = 10"


def _stack(
    prefix: str, hidden: int, inputs: list[int], batch: int, steps: int, first: int = 0
) -> list[Layer]:
    """LSTMs ``<prefix><first + i>`` with the given input sizes (one per layer), each ``hidden`` cells."""
    return [gemm for i, size in enumerate(inputs, start=first)
            for gemm in lstm(f"{prefix}{i}", hidden, size, batch, steps)]


def _memory_layer(batch: int, steps: int, keys: int, memory: int) -> Layer:
    """The attention key projection of all encoder outputs, once per sentence (no bias)."""
    return linear("attention.memory_layer", keys, memory, batch * steps, LayerKind.ATTN_PROJ, bias=False)


def _projection(name: str, vocab: int, hidden: int, batch: int, steps: int) -> Layer:
    """The per-step output projection to the target vocabulary (no bias, as in tensorflow/nmt)."""
    return linear(name, vocab, hidden, batch, repeat=steps, bias=False)


def nmt_wmt16(batch: int, seq_len: int, hidden: int) -> Network:
    """NMT of paper 001 in tensorflow/nmt's GNMT (v2) wiring with Luong (scaled dot-product) attention.

    Encoder: bidirectional LSTM (fw + bw, input = embedding) then one LSTM over their 2H concatenation.
    Decoder: 4 LSTMs; the bottom one takes [embedding; previous context], each upper one [output below;
    context of this step]; the attention query is the bottom decoder output. Embedding size = hidden.
    """
    h, steps = hidden, seq_len
    layers: list[Layer] = [
        *lstm("encoder.lstm0_fw", h, h, batch, steps),
        *lstm("encoder.lstm0_bw", h, h, batch, steps),
        *lstm("encoder.lstm1", h, 2 * h, batch, steps),
        _memory_layer(batch, steps, h, h),
        *lstm("decoder.lstm0", h, 2 * h, batch, steps),
        *dot_product_attention("attention", batch, 1, h, q_len=1, kv_len=steps, repeat=steps),
        *_stack("decoder.lstm", h, [2 * h] * 3, batch, steps, first=1),
        _projection("decoder.projection", WMT16_BPE_VOCAB, h, batch, steps),
    ]
    extras = (("encoder.embedding", (WMT16_BPE_VOCAB, h)), ("decoder.embedding", (WMT16_BPE_VOCAB, h)),
              ("attention.scale", ()))
    return Network("nmt_wmt16", tuple(layers), batch, seq_len=seq_len, hidden=hidden, extra_params=extras)


def gnmt(batch: int, seq_len: int, hidden: int) -> Network:
    """GNMT (Wu et al. 2016): 8 encoder layers (the bottom one bidirectional), 8 decoder layers, 1024 cells.

    Wu et al. fix the depths, the width, the bottom bidirectional layer, attention from the bottom decoder
    layer to all upper ones, and attention as "a feed forward network with one hidden layer"; the rest is
    wired as tensorflow/nmt's replication (``wmt16_gnmt_8_layer.json``: encoder ``gnmt``, attention
    ``normed_bahdanau``, architecture ``gnmt_v2``): each direction of the bidirectional layer has ``hidden``
    cells and the next layer reads their 2H concatenation; the bottom decoder LSTM reads [embedding;
    previous context], the upper ones [output below; context of this step]. Bahdanau attention: keys
    ``W_k m`` once per sentence, per step the query ``W_q h``, ``score = v . tanh(keys + query + b)``
    (``attention.v``: M = 1 over N = batch x source positions) and the context over the encoder outputs.
    Residual connections (from layer 3) add no GEMM. Embedding size = hidden; 32K wordpieces, separate
    source and target tables.
    """
    h, steps = hidden, seq_len
    layers: list[Layer] = [
        *lstm("encoder.lstm0_fw", h, h, batch, steps),
        *lstm("encoder.lstm0_bw", h, h, batch, steps),
        *_stack("encoder.lstm", h, [2 * h] + [h] * 6, batch, steps, first=1),
        _memory_layer(batch, steps, h, h),
        *lstm("decoder.lstm0", h, 2 * h, batch, steps),
        linear("attention.query_layer", h, h, batch, LayerKind.ATTN_PROJ, repeat=steps, bias=False),
        linear("attention.v", 1, h, batch * steps, LayerKind.ATTN_PROJ, repeat=steps, bias=False),
        attention_context("attention", batch, h, q_len=1, kv_len=steps, repeat=steps),
        *_stack("decoder.lstm", h, [2 * h] * 7, batch, steps, first=1),
        _projection("decoder.projection", GNMT_WORDPIECES, h, batch, steps),
    ]
    extras = (("encoder.embedding", (GNMT_WORDPIECES, h)), ("decoder.embedding", (GNMT_WORDPIECES, h)),
              ("attention.bias", (h,)), ("attention.g", ()))
    return Network("gnmt", tuple(layers), batch, seq_len=seq_len, hidden=hidden, extra_params=extras)


def nmt_iwslt(batch: int, seq_len: int, hidden: int) -> Network:
    """tensorflow/nmt's IWSLT'15 English-Vietnamese model (paper 002's NMT, its ref. [36]).

    ``standard_hparams/iwslt15.json``: ``encoder_type=bi`` with 2 encoder layers (one bidirectional layer,
    fw + bw), 2 decoder layers, 512 units (embedding 512), ``attention=scaled_luong``,
    ``attention_architecture=standard``, no residuals, separate vocabularies. The AttentionWrapper wraps the
    whole decoder stack: the bottom LSTM reads [embedding; previous attention output], the query is the top
    LSTM's output, keys are ``W_k`` of the 2H encoder outputs, the context is over the 2H outputs themselves,
    and the attention layer maps [top output; context] (3H) to H (no bias). English -> Vietnamese.
    """
    h, steps = hidden, seq_len
    layers: list[Layer] = [
        *lstm("encoder.lstm0_fw", h, h, batch, steps),
        *lstm("encoder.lstm0_bw", h, h, batch, steps),
        _memory_layer(batch, steps, h, 2 * h),
        *_stack("decoder.lstm", h, [2 * h, h], batch, steps),
        *dot_product_attention("attention", batch, 1, h, 1, steps, repeat=steps, value_dim=2 * h),
        linear("attention.attention_layer", h, 3 * h, batch, LayerKind.ATTN_PROJ, repeat=steps, bias=False),
        _projection("decoder.projection", IWSLT15_VI_VOCAB, h, batch, steps),
    ]
    extras = (("encoder.embedding", (IWSLT15_EN_VOCAB, h)), ("decoder.embedding", (IWSLT15_VI_VOCAB, h)),
              ("attention.scale", ()))
    return Network("nmt_iwslt", tuple(layers), batch, seq_len=seq_len, hidden=hidden, extra_params=extras)


LUONG_ATTENTION = ("global", "local-p")


def luong_nmt(batch: int, seq_len: int, hidden: int, attention: str = "global") -> Network:
    """Luong, Pham & Manning (EMNLP 2015): 4 + 4 LSTM layers, 1000 cells, 1000-d embeddings, 50K words.

    Input feeding: the bottom decoder LSTM reads [embedding; previous attentional vector h~]. Attention from
    the top decoder output ``h_t`` with the ``general`` score ``h_t . W_a h_s`` (``W_a h_s`` precomputed
    once per sentence as the memory layer), ``h~_t = tanh(W_c [c_t; h_t])``, ``p = softmax(W_s h~_t)`` (no
    biases, as the paper's equations). ``attention``: ``global`` (all source positions) or ``local-p``
    (a window of 2D + 1 = 21 positions around ``p_t = S sigmoid(v_p . tanh(W_p h_t))``; the paper does not
    give the size of ``W_p``, taken as H x H here).
    """
    h, steps = hidden, seq_len
    window = min(steps, 2 * LUONG_LOCAL_WINDOW + 1) if attention == "local-p" else steps
    layers: list[Layer] = [
        *_stack("encoder.lstm", h, [h] * 4, batch, steps),
        _memory_layer(batch, steps, h, h),
        *_stack("decoder.lstm", h, [2 * h, h, h, h], batch, steps),
    ]
    extras: list[tuple[str, tuple[int, ...]]] = [("encoder.embedding", (LUONG_VOCAB, h)),
                                                 ("decoder.embedding", (LUONG_VOCAB, h))]
    if attention == "local-p":
        layers.append(linear("attention.position_layer", h, h, batch, LayerKind.ATTN_PROJ, repeat=steps,
                             bias=False))
        extras.append(("attention.v_p", (h,)))
    layers += [
        attention_scores("attention", batch, h, q_len=1, kv_len=window, repeat=steps),
        attention_context("attention", batch, h, q_len=1, kv_len=window, repeat=steps),
        linear("attention.attention_layer", h, 2 * h, batch, LayerKind.ATTN_PROJ, repeat=steps, bias=False),
        _projection("decoder.softmax", LUONG_VOCAB, h, batch, steps),
    ]
    return Network("luong_nmt", tuple(layers), batch, seq_len=seq_len, hidden=hidden,
                   extra_params=tuple(extras))

"""Constructors that lower common layer types to ``Layer`` rows under the one GEMM convention."""

from __future__ import annotations

from stcsim.workloads.layer import ConvGeometry, Layer, LayerKind, out_size


def conv(
    name: str,
    batch: int,
    in_channels: int,
    out_channels: int,
    in_hw: tuple[int, int],
    kernel: int,
    stride: int = 1,
    padding: int = 0,
    groups: int = 1,
    bias: bool = False,
    batch_norm: bool = True,
) -> Layer:
    """A (grouped) square convolution lowered by im2col: ``groups`` GEMMs of (Cout/g, B*Ho*Wo, Cin/g*k*k).

    ``batch_norm`` adds the following BatchNorm's gamma and beta (2 * Cout) to the parameter count.
    """
    square = (kernel, kernel), (stride, stride), (padding, padding), (1, 1)
    geom = ConvGeometry(in_channels, out_channels, *square, groups, in_hw)
    oh, ow = geom.out_hw
    return Layer(
        name, LayerKind.CONV, m=out_channels // groups, n=batch * oh * ow,
        k=in_channels // groups * kernel * kernel, groups=groups, bias=bias,
        norm_params=2 * out_channels if batch_norm else 0, conv=geom,
    )


def depthwise(
    name: str, batch: int, channels: int, in_hw: tuple[int, int], kernel: int, stride: int, padding: int
) -> Layer:
    """A depthwise convolution followed by BatchNorm; not a GEMM (M = 1 per channel), kept for MACs/params."""
    geom = ConvGeometry(
        channels, channels, (kernel, kernel), (stride, stride), (padding, padding), (1, 1), channels, in_hw
    )
    oh, ow = geom.out_hw
    return Layer(
        name, LayerKind.DEPTHWISE, m=1, n=batch * oh * ow, k=kernel * kernel, groups=channels,
        norm_params=2 * channels, conv=geom,
    )


def linear(
    name: str,
    out_features: int,
    in_features: int,
    tokens: int,
    kind: LayerKind = LayerKind.FC,
    repeat: int = 1,
    bias: bool = True,
    norm_params: int = 0,
) -> Layer:
    """A weight GEMM (M=out_features, N=tokens, K=in_features); ``tokens`` is batch or batch x sequence."""
    return Layer(name, kind, m=out_features, n=tokens, k=in_features, repeat=repeat, bias=bias,
                 norm_params=norm_params)


def lstm(
    name: str, hidden: int, input_size: int, batch: int, steps: int, recurrent_bias: bool = False
) -> tuple[Layer, Layer]:
    """One LSTM (one direction of one layer) as its two per-time-step gate GEMMs.

    ``<name>.ih``: (4H, batch, input_size) and ``<name>.hh``: (4H, batch, H), each repeated ``steps`` times.
    The gate bias sits on ``.ih``; ``recurrent_bias`` adds PyTorch's second bias on ``.hh`` (TensorFlow
    cells, used by the papers' models, have one).
    """
    return (
        Layer(f"{name}.ih", LayerKind.LSTM, m=4 * hidden, n=batch, k=input_size, repeat=steps, bias=True),
        Layer(f"{name}.hh", LayerKind.LSTM, m=4 * hidden, n=batch, k=hidden, repeat=steps,
              bias=recurrent_bias),
    )


def attention(
    prefix: str, batch: int, heads: int, head_dim: int, q_len: int, kv_len: int, repeat: int = 1,
    value_dim: int | None = None,
) -> tuple[Layer, Layer]:
    """Dot-product attention's two activation GEMMs, one per (batch element, head), each layer's GEMMs one
    strided-batched launch (``Layer.batched``).

    ``<prefix>.scores`` = K Q^T: (M=kv_len, N=q_len, K=head_dim); ``<prefix>.context`` = V^T P^T:
    (M=value_dim, N=q_len, K=kv_len), ``value_dim`` = ``head_dim`` unless the values are wider than the
    keys (Luong attention over a bidirectional encoder). Neither has weights, so neither is prunable.
    """
    return (
        attention_scores(prefix, batch * heads, head_dim, q_len, kv_len, repeat),
        attention_context(prefix, batch * heads, value_dim or head_dim, q_len, kv_len, repeat),
    )


def attention_scores(prefix: str, groups: int, key_dim: int, q_len: int, kv_len: int, repeat: int) -> Layer:
    """``<prefix>.scores`` = K Q^T per group: (M=kv_len, N=q_len, K=key_dim), no weights; the ``groups``
    GEMMs of one execution are one batched launch."""
    return Layer(f"{prefix}.scores", LayerKind.ATTN_SCORE, m=kv_len, n=q_len, k=key_dim, groups=groups,
                 repeat=repeat, batched=True)


def attention_context(
    prefix: str, groups: int, value_dim: int, q_len: int, kv_len: int, repeat: int
) -> Layer:
    """``<prefix>.context`` = V^T P^T per group: (M=value_dim, N=q_len, K=kv_len), no weights; the
    ``groups`` GEMMs of one execution are one batched launch."""
    return Layer(f"{prefix}.context", LayerKind.ATTN_CONTEXT, m=value_dim, n=q_len, k=kv_len, groups=groups,
                 repeat=repeat, batched=True)


def pool(in_hw: tuple[int, int], kernel: int, stride: int, padding: int = 0) -> tuple[int, int]:
    """Output (height, width) of a max/avg pooling window (floor mode); ValueError if it does not fit."""
    return (out_size(in_hw[0], kernel, stride, padding), out_size(in_hw[1], kernel, stride, padding))

"""One network layer and the GEMM it lowers to.

Convention (one for every layer; see docs/workloads.md): a layer computes ``groups`` independent GEMMs
``out (M x N) = A (M x K) @ B (K x N)`` and is executed ``repeat`` times, where

* M = output features (conv filters per group, fc/LSTM/projection output features),
* K = reduction (conv: ``Cin/groups * kh * kw`` via im2col; fc/LSTM/projection: input features),
* N = batch x Hout x Wout (conv) or batch x tokens (fc, projections) or batch (one LSTM time step).

Attention score/context GEMMs multiply two activations (no weights); depthwise convolution is not a GEMM
(its per-channel "GEMM" has M = 1) and is kept in the table only for its MACs and parameters.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from math import prod


class LayerKind(str, enum.Enum):
    """What a layer computes; decides whether it has weights, is a GEMM and is prunable."""

    CONV = "conv"
    FC = "fc"
    LSTM = "lstm"
    ATTN_PROJ = "attn_proj"
    ATTN_SCORE = "attn_score"
    ATTN_CONTEXT = "attn_context"
    DEPTHWISE = "depthwise"


_WEIGHTED = frozenset(
    {LayerKind.CONV, LayerKind.FC, LayerKind.LSTM, LayerKind.ATTN_PROJ, LayerKind.DEPTHWISE}
)
_CONVOLUTIONS = frozenset({LayerKind.CONV, LayerKind.DEPTHWISE})


def out_size(size: int, kernel: int, stride: int, padding: int, dilation: int = 1) -> int:
    """Output length of a convolution/pooling window along one axis (PyTorch floor rule).

    Raises ValueError when the window does not fit, i.e. the output would be empty.
    """
    span = dilation * (kernel - 1) + 1
    if size + 2 * padding < span:
        raise ValueError(
            f"input of size {size} (padding {padding}) is smaller than the window {span} "
            f"(kernel {kernel}, dilation {dilation})"
        )
    return (size + 2 * padding - span) // stride + 1


def _check_positive(owner: str, **values: int) -> None:
    for label, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{owner}: {label} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class ConvGeometry:
    """Geometry of a 2-D convolution over a (batch, Cin, H, W) input; PyTorch semantics.

    ``out_hw`` is derived; constructing a geometry whose window does not fit the input raises ValueError.
    """

    in_channels: int
    out_channels: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    in_hw: tuple[int, int]
    out_hw: tuple[int, int] = field(init=False)

    def __post_init__(self) -> None:
        cin, cout, groups = self.in_channels, self.out_channels, self.groups
        _check_positive("conv", in_channels=cin, out_channels=cout, groups=groups)
        if cin % groups or cout % groups:
            raise ValueError(f"conv: channels {cin}->{cout} not divisible by groups {groups}")
        out_hw = tuple(
            out_size(self.in_hw[i], self.kernel[i], self.stride[i], self.padding[i], self.dilation[i])
            for i in range(2)
        )
        object.__setattr__(self, "out_hw", out_hw)

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        """PyTorch weight layout (Cout, Cin/groups, kh, kw)."""
        return (self.out_channels, self.in_channels // self.groups, self.kernel[0], self.kernel[1])

    def describe(self) -> str:
        """Short text such as ``k3x3 s2 p1`` (dilation shown only when not 1)."""
        kh, kw = self.kernel
        text = f"k{kh}x{kw} s{self.stride[0]} p{self.padding[0]}"
        if self.dilation != (1, 1):
            text += f" d{self.dilation[0]}"
        return text


@dataclass(frozen=True)
class Layer:
    """A layer as ``groups`` GEMMs of shape (M, N, K), executed ``repeat`` times.

    ``bias`` adds ``M * groups`` parameters; ``norm_params`` counts the parameters of the normalisation that
    follows the layer (BatchNorm or LayerNorm gamma and beta), so that totals match the published ones.
    Weights are counted once however often the layer repeats. ``batched``: the ``groups`` GEMMs of one
    execution run as one strided-batched launch (a batch count of ``groups``: attention's per-head GEMMs, as
    frameworks launch them), not as ``groups`` launches one after another.
    """

    name: str
    kind: LayerKind
    m: int
    n: int
    k: int
    groups: int = 1
    repeat: int = 1
    bias: bool = False
    norm_params: int = 0
    conv: ConvGeometry | None = None
    batched: bool = False

    def __post_init__(self) -> None:
        _check_positive(self.name, m=self.m, n=self.n, k=self.k, groups=self.groups, repeat=self.repeat)
        if self.norm_params < 0:
            raise ValueError(f"{self.name}: norm_params must be >= 0, got {self.norm_params}")
        if (self.conv is not None) != (self.kind in _CONVOLUTIONS):
            raise ValueError(f"{self.name}: conv/depthwise layers need conv geometry; other kinds take none")
        if self.bias and not self.has_weights:
            raise ValueError(f"{self.name}: a {self.kind.value} layer has no weights, so no bias")
        if self.conv is not None:
            self._check_conv(self.conv)

    def _check_conv(self, geom: ConvGeometry) -> None:
        kh, kw = geom.kernel
        oh, ow = geom.out_hw
        expected = (geom.out_channels // geom.groups, geom.in_channels // geom.groups * kh * kw, geom.groups)
        if (self.m, self.k, self.groups) != expected or self.n % (oh * ow):
            raise ValueError(f"{self.name}: GEMM (M={self.m}, K={self.k}, groups={self.groups}, N={self.n}) "
                             f"does not match its conv geometry (expects M, K, groups = {expected})")
        if self.kind is LayerKind.DEPTHWISE and not geom.groups == geom.in_channels == geom.out_channels:
            raise ValueError(f"{self.name}: depthwise conv needs groups == in_channels == out_channels")

    @property
    def has_weights(self) -> bool:
        """True when the layer owns a weight tensor (everything but attention score/context)."""
        return self.kind in _WEIGHTED

    @property
    def is_gemm(self) -> bool:
        """False for depthwise convolution, which runs as a per-channel stencil, not a GEMM."""
        return self.kind is not LayerKind.DEPTHWISE

    @property
    def prunable(self) -> bool:
        """True when the GEMM's A operand is a weight matrix that a sparsity pattern can prune."""
        return self.has_weights and self.is_gemm

    @property
    def weight_shape(self) -> tuple[int, ...] | None:
        """Weight shape, PyTorch layout: conv (Cout, Cin/groups, kh, kw), others (M, K); None if no weight."""
        if not self.has_weights:
            return None
        if self.conv is not None:
            return self.conv.weight_shape
        return (self.m * self.groups, self.k)

    @property
    def gemm_count(self) -> int:
        """GEMMs of shape (M, N, K) this layer runs in one forward pass: groups x repeat."""
        return self.groups * self.repeat

    @property
    def launch_batch(self) -> int:
        """GEMMs per launch: ``groups`` for a batched layer, else 1."""
        return self.groups if self.batched else 1

    @property
    def launches(self) -> int:
        """Kernel launches of one forward pass: ``repeat`` for a batched layer, else ``groups x repeat``."""
        return self.gemm_count // self.launch_batch

    @property
    def macs(self) -> int:
        """Multiply-accumulates of one forward pass."""
        return self.m * self.n * self.k * self.gemm_count

    @property
    def params(self) -> int:
        """Parameters: weight + bias + following normalisation."""
        shape = self.weight_shape
        weights = prod(shape) if shape is not None else 0
        return weights + (self.m * self.groups if self.bias else 0) + self.norm_params

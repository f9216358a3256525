"""The operands of a layer's GEMMs: weights as A (groups, M, K) and, for convs, im2col activations as B.

Orderings fix the convention exactly: K runs over (Cin within the group, kh, kw), the order of
``weight.reshape(Cout, -1)``; N runs over (batch, Hout, Wout); group g owns output channels
``g*M .. (g+1)*M - 1`` and input channels ``g*Cin/groups ..``, as in PyTorch grouped convolution.
"""

from __future__ import annotations

import numpy as np

from stcsim.workloads.layer import ConvGeometry, Layer


def gemm_operand(layer: Layer, weight: np.ndarray) -> np.ndarray:
    """The A operands of ``layer``: ``weight`` (PyTorch layout) reshaped to (groups, M, K)."""
    if layer.weight_shape is None:
        raise ValueError(f"{layer.name} is a {layer.kind.value} layer: its A operand is an activation")
    if weight.shape != layer.weight_shape:
        raise ValueError(f"{layer.name}: weight shape {weight.shape} != expected {layer.weight_shape}")
    return weight.reshape(layer.groups, layer.m, layer.k)


def im2col(x: np.ndarray, geom: ConvGeometry) -> np.ndarray:
    """The B operands of a convolution: input ``x`` (batch, Cin, H, W) unfolded to (groups, K, N).

    ``einsum("gmk,gkn->gmn", gemm_operand(layer, w), im2col(x, layer.conv))`` reshaped to
    (Cout, batch, Hout, Wout) is the convolution's output.
    """
    batch, channels, height, width = x.shape
    if (channels, height, width) != (geom.in_channels, *geom.in_hw):
        raise ValueError(f"input shape {x.shape[1:]} != (Cin, H, W) = {(geom.in_channels, *geom.in_hw)}")
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = geom.kernel, geom.stride, geom.dilation, geom.out_hw
    ph, pw = geom.padding
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    cols = np.empty((batch, channels, kh, kw, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
            columns = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
            cols[:, :, i, j] = padded[:, :, rows, columns]
    groups = geom.groups
    cols = cols.reshape(batch, groups, channels // groups, kh, kw, oh, ow)
    return cols.transpose(1, 2, 3, 4, 0, 5, 6).reshape(groups, channels // groups * kh * kw, batch * oh * ow)

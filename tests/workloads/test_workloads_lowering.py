"""The im2col lowering reproduces a direct convolution with the documented (M, N, K) orderings."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stcsim.workloads import ConvGeometry, gemm_operand, get_network, im2col
from stcsim.workloads.layer import Layer, LayerKind


def _direct_conv(x: np.ndarray, w: np.ndarray, geom: ConvGeometry) -> np.ndarray:
    """Textbook grouped convolution, loop by loop."""
    batch = x.shape[0]
    (oh, ow), (sh, sw), (ph, pw), (dh, dw) = geom.out_hw, geom.stride, geom.padding, geom.dilation
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    cin_g, cout_g = geom.in_channels // geom.groups, geom.out_channels // geom.groups
    out = np.zeros((batch, geom.out_channels, oh, ow))
    for o in range(geom.out_channels):
        first = o // cout_g * cin_g
        for y in range(oh):
            for x_ in range(ow):
                for i in range(geom.kernel[0]):
                    for j in range(geom.kernel[1]):
                        patch = padded[:, first:first + cin_g, y * sh + i * dh, x_ * sw + j * dw]
                        out[:, o, y, x_] += patch @ w[o, :, i, j]
    return out


def _pairs(low: int, high: int) -> st.SearchStrategy[tuple[int, int]]:
    return st.tuples(st.integers(low, high), st.integers(low, high))


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 2), groups=st.integers(1, 3), cin_g=st.integers(1, 3), cout_g=st.integers(1, 3),
       kernel=_pairs(1, 3), stride=_pairs(1, 2), padding=_pairs(0, 2), dilation=_pairs(1, 2), hw=_pairs(1, 7),
       seed=st.integers(0, 2**16))
def test_im2col_gemm_equals_direct_convolution(
    batch: int, groups: int, cin_g: int, cout_g: int, kernel: tuple[int, int], stride: tuple[int, int],
    padding: tuple[int, int], dilation: tuple[int, int], hw: tuple[int, int], seed: int,
) -> None:
    try:
        geom = ConvGeometry(cin_g * groups, cout_g * groups, kernel, stride, padding, dilation, groups, hw)
    except ValueError:
        assume(False)
    oh, ow = geom.out_hw
    layer = Layer("c", LayerKind.CONV, m=cout_g, n=batch * oh * ow, k=cin_g * kernel[0] * kernel[1],
                  groups=groups, conv=geom)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, geom.in_channels, *hw))
    w = rng.standard_normal(layer.weight_shape)
    cols = im2col(x, geom)
    assert cols.shape == (layer.groups, layer.k, layer.n)
    out = np.einsum("gmk,gkn->gmn", gemm_operand(layer, w), cols)
    out = out.reshape(geom.out_channels, batch, oh, ow).transpose(1, 0, 2, 3)
    np.testing.assert_allclose(out, _direct_conv(x, w, geom), rtol=1e-9, atol=1e-9)


def test_real_layer_operands_have_the_table_shapes() -> None:
    layer = get_network("resnext50_32x4d", batch=2, image_size=32).layer("layer2.0.conv2")
    x = np.zeros((2, layer.conv.in_channels, *layer.conv.in_hw), dtype=np.float32)
    assert im2col(x, layer.conv).shape == (32, layer.k, layer.n)
    assert gemm_operand(layer, np.zeros(layer.weight_shape)).shape == (32, layer.m, layer.k)


def test_operand_errors() -> None:
    net = get_network("bert_base", seq_len=8)
    with pytest.raises(ValueError, match="its A operand is an activation"):
        gemm_operand(net.layer("encoder.layer.0.attention.self.scores"), np.zeros(1))
    with pytest.raises(ValueError, match=r"weight shape \(2, 2\) != expected \(768, 768\)"):
        gemm_operand(net.layer("pooler.dense"), np.zeros((2, 2)))
    geom = get_network("resnet18").layer("conv1").conv
    with pytest.raises(ValueError, match=r"input shape \(3, 32, 32\) != \(Cin, H, W\) = \(3, 224, 224\)"):
        im2col(np.zeros((1, 3, 32, 32)), geom)

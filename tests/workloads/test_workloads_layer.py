"""Layer and Network invariants: the GEMM convention, weights, parameters, validation."""

import pytest

from stcsim.workloads import ConvGeometry, Layer, LayerKind, Network, get_network
from stcsim.workloads.build import conv, depthwise, linear
from stcsim.workloads.layer import out_size


def test_grouped_conv_is_groups_gemms_of_the_group_shape() -> None:
    layer = get_network("resnext50_32x4d").layer("layer1.0.conv2")
    assert (layer.m, layer.n, layer.k, layer.groups) == (4, 56 * 56, 4 * 9, 32)
    assert layer.weight_shape == (128, 4, 3, 3)
    assert layer.macs == 128 * 4 * 9 * 56 * 56
    assert layer.params == 128 * 4 * 9 + 2 * 128  # + BatchNorm gamma and beta


def test_conv_convention() -> None:
    layer = conv("c", batch=2, in_channels=16, out_channels=32, in_hw=(10, 12), kernel=3, stride=2, padding=1)
    assert layer.conv.out_hw == (5, 6)
    assert (layer.m, layer.n, layer.k) == (32, 2 * 5 * 6, 16 * 9)
    assert layer.prunable and layer.is_gemm and layer.conv.describe() == "k3x3 s2 p1"


def test_depthwise_is_not_a_gemm_but_counts() -> None:
    layer = depthwise("dw", batch=1, channels=8, in_hw=(6, 6), kernel=3, stride=1, padding=1)
    assert not layer.is_gemm and not layer.prunable and layer.has_weights
    assert layer.weight_shape == (8, 1, 3, 3)
    assert layer.macs == 8 * 9 * 36
    assert layer.params == 8 * 9 + 16


def test_dilation_and_window_errors() -> None:
    geom = ConvGeometry(4, 4, (3, 3), (1, 1), (0, 0), (2, 2), 1, (7, 7))
    assert geom.out_hw == (3, 3) and geom.describe() == "k3x3 s1 p0 d2"
    assert out_size(5, kernel=3, stride=2, padding=1) == 3
    with pytest.raises(ValueError, match="smaller than the window 5"):
        out_size(4, kernel=3, stride=1, padding=0, dilation=2)
    with pytest.raises(ValueError, match="not divisible by groups 3"):
        ConvGeometry(4, 6, (1, 1), (1, 1), (0, 0), (1, 1), 3, (4, 4))


def test_layer_validation() -> None:
    with pytest.raises(ValueError, match="m must be a positive integer"):
        Layer("x", LayerKind.FC, m=0, n=1, k=1)
    with pytest.raises(ValueError, match="need conv geometry"):
        Layer("x", LayerKind.CONV, m=1, n=1, k=1)
    with pytest.raises(ValueError, match="has no weights, so no bias"):
        Layer("x", LayerKind.ATTN_SCORE, m=1, n=1, k=1, bias=True)
    geom = ConvGeometry(4, 8, (3, 3), (1, 1), (1, 1), (1, 1), 1, (4, 4))
    with pytest.raises(ValueError, match="does not match its conv geometry"):
        Layer("x", LayerKind.CONV, m=8, n=16, k=4, conv=geom)


def test_linear_weights_and_repeat() -> None:
    layer = linear("fc", out_features=10, in_features=20, tokens=3, repeat=5)
    assert layer.weight_shape == (10, 20)
    assert layer.params == 10 * 20 + 10  # weights count once, however often the layer repeats
    assert layer.macs == 10 * 20 * 3 * 5 and layer.gemm_count == 5


def test_network_lookup_and_duplicates() -> None:
    layer = linear("fc", 2, 2, 1)
    net = Network("tiny", (layer,), batch=1, extra_params=(("table", (3, 4)),))
    assert net.layer("fc") is layer and net.params == 6 + 12
    with pytest.raises(KeyError, match="tiny has no layer 'nope'"):
        net.layer("nope")
    with pytest.raises(ValueError, match=r"duplicate layer names \['fc'\]"):
        Network("tiny", (layer, layer), batch=1)

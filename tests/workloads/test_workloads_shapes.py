"""Unique GEMM shapes: what the harness simulates, with total repeat counts."""

import pytest

from stcsim.workloads import LayerKind, Network, get_network, list_networks, unique_gemm_shapes
from stcsim.workloads.build import attention, linear


@pytest.mark.parametrize("name", list_networks())
def test_unique_shapes_cover_every_gemm(name: str) -> None:
    net = get_network(name, batch=2)
    shapes = unique_gemm_shapes(net)
    assert sum(shape.macs for shape in shapes) == net.gemm_macs
    gemm_layers = [layer for layer in net.layers if layer.is_gemm]
    assert sum(shape.count for shape in shapes) == sum(layer.gemm_count for layer in gemm_layers)
    assert len({(s.m, s.n, s.k, s.prunable) for s in shapes}) == len(shapes)


def test_resnet50_batch1_shapes() -> None:
    shapes = unique_gemm_shapes(get_network("resnet50", batch=1))
    assert len(shapes) == 21
    assert (shapes[0].m, shapes[0].n, shapes[0].k, shapes[0].count) == (64, 112 * 112, 147, 1)
    layer3 = next(s for s in shapes if (s.m, s.n, s.k) == (256, 196, 2304))
    assert layer3.count == 6 and layer3.layers[0] == "layer3.0.conv2"


def test_grouped_conv_counts_each_group() -> None:
    shapes = unique_gemm_shapes(get_network("resnext50_32x4d"))
    grouped = next(s for s in shapes if (s.m, s.n, s.k) == (4, 3136, 36))
    assert grouped.count == 3 * 32


def test_depthwise_layers_are_not_simulated_shapes() -> None:
    net = get_network("mobilenet_v1")
    names = {name for shape in unique_gemm_shapes(net) for name in shape.layers}
    assert not any(name.startswith("conv_dw_") for name in names)
    assert any(layer.kind is LayerKind.DEPTHWISE for layer in net.layers)


def test_prunable_distinguishes_equal_mnk() -> None:
    scores, _ = attention("att", batch=1, heads=1, head_dim=64, q_len=64, kv_len=64)
    net = Network("mixed", (linear("fc", 64, 64, 64), scores), batch=1)
    shapes = unique_gemm_shapes(net)
    assert [(s.prunable, s.count) for s in shapes] == [(True, 1), (False, 1)]


def test_bert_projections_collapse() -> None:
    shapes = unique_gemm_shapes(get_network("bert_base", batch=1, seq_len=128))
    proj = next(s for s in shapes if (s.m, s.n, s.k, s.prunable) == (768, 128, 768, True))
    assert proj.count == 12 * 4
    scores = next(s for s in shapes if (s.m, s.n, s.k) == (128, 128, 64))
    assert not scores.prunable and scores.count == 12 * 12

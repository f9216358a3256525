"""Whole-network pruning: every pattern on every network, every layer decided, none refused."""

import math
from collections import Counter

import numpy as np
import pytest

from stcsim.sparsity import registry
from stcsim.sparsity.policy import PrunePolicy, decide, prune_gemm
from stcsim.workloads import Network, get_network, list_networks
from stcsim.workloads.pruning import NO_WEIGHTS, NOT_A_GEMM, layer_decision, prune_network

SPARSITY = 0.75  # reachable by every registered pattern at its defaults (2:4 and TVW need >= 0.5)
PATTERNS = tuple(registry.get(name) for name in registry.names()) + tuple(
    registry.get(spec) for spec in ("shflbw:V=32", "vw:L=16,K=4,axis=col"))
UNIT = 64  # every pattern's shape unit divides 64, so a crop with the same residue mod 64 fits alike
CAP = 128  # dimensions above this are cropped to 64 + (dim mod 64) for the pruning run


def crop(size: int) -> int:
    """``size`` itself up to CAP, else a smaller size with the same residue modulo UNIT."""
    return size if size <= CAP else CAP - UNIT + size % UNIT


def test_every_pattern_prunes_every_network_at_batch_1() -> None:
    """Each (pattern, network, layer) gets a decision; every weight GEMM not run dense is pruned and encoded.

    Shapes are deduplicated per pattern; dimensions above CAP are pruned as a crop with the same residue
    modulo 64 (so the same fit / unfit case), and the count of cropped runs is part of the tally.
    """
    tally: Counter[str] = Counter()
    pruned: dict[tuple[str, int, int], str] = {}  # (pattern, run M, run K) -> "full" or "crop"
    rng = np.random.default_rng()
    for name in list_networks():
        net = get_network(name, batch=1)
        for pattern in PATTERNS:
            for layer in net.layers:
                decision = layer_decision(layer, pattern)
                tally[decision.action] += 1
                shape = (crop(layer.m), crop(layer.k))
                if decision.action == "dense" or (pattern.spec(), *shape) in pruned:
                    continue
                assert decide(pattern, shape, PrunePolicy(max_pad_ratio=math.inf)).action == decision.action
                w = rng.standard_normal(shape).astype(np.float32)
                result = prune_gemm(w, pattern, SPARSITY, PrunePolicy(max_pad_ratio=math.inf))
                assert result.fmt is not None and np.array_equal(pattern.decode(result.fmt), w * result.mask)
                pruned[(pattern.spec(), *shape)] = "crop" if shape != (layer.m, layer.k) else "full"
    combinations = sum(tally.values())
    runs = Counter(pruned.values())
    print(f"\n{combinations} (pattern, network, layer) combinations: {dict(tally)}; "
          f"{len(pruned)} distinct pruning runs ({runs['full']} full size, {runs['crop']} cropped)")
    n_layers = sum(len(get_network(name).layers) for name in list_networks())
    assert combinations == n_layers * len(PATTERNS)
    assert tally["as_is"] and tally["padded"] and tally["dense"]


def test_network_records_say_what_was_done_and_why() -> None:
    """MobileNet's depthwise convs and BERT's attention GEMMs run dense with their reason; fc pads."""
    shfl = registry.get("shflbw:V=64")
    full = get_network("mobilenet_v1")
    net = Network(full.name, (full.layer("conv1"), full.layer("conv_dw_1"), full.layer("fc")), batch=1)
    mobilenet = {r.layer.name: r for r in prune_network(net, shfl, SPARSITY, encode=False)}
    conv1 = mobilenet["conv1"].decision  # 32 rows padded to 64: x2, not more than max_pad_ratio
    assert (conv1.action, conv1.run_shape) == ("padded", (64, 27))
    assert mobilenet["conv_dw_1"].decision.reason == NOT_A_GEMM and mobilenet["conv_dw_1"].density == 1.0
    fc = mobilenet["fc"]
    assert (fc.decision.action, fc.decision.run_shape) == ("padded", (1024, 1024))
    assert fc.density == pytest.approx(0.25, abs=0.01)
    row = fc.as_row()
    assert (row["layer"], row["kind"], row["prune_action"], row["run_m"]) == ("fc", "fc", "padded", 1024)
    bert = get_network("bert_base:seq_len=8")
    scores = bert.layer("encoder.layer.0.attention.self.scores")
    assert layer_decision(scores, shfl).reason == NO_WEIGHTS


def test_grouped_conv_prunes_each_group() -> None:
    """ResNeXt's grouped 3x3 conv is 32 GEMMs; each is pruned on its own, with the layer's decision."""
    net = get_network("resnext50_32x4d", image_size=32)
    layer = net.layer("layer4.0.conv2")
    weights = {layer.name: np.random.default_rng().standard_normal(layer.weight_shape).astype(np.float32)}
    small = Network(net.name, (layer,), net.batch, image_size=32)
    (record,) = prune_network(small, registry.get("nm"), 0.5, weights=weights)
    assert len(record.gemms) == 32 and record.decision.action == "as_is"
    assert all(g.mask.shape == (32, 288) and g.density == pytest.approx(0.5) for g in record.gemms)

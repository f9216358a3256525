"""Tests of the whole-network pruning policy: pad or run dense, never refuse a shape, say why."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity import registry
from stcsim.sparsity.policy import PrunePolicy, decide, padded_shape, prune_gemm

from .strategies import PROPERTY, masked

SPARSITY = 0.75  # reachable by every registered pattern at its defaults


def test_unfit_shapes_pad_by_default() -> None:
    """The 1000-row classifier under Shfl-BW V=64 and ResNet-50's conv1 (K = 147) under vw L=16 pad."""
    classifier = decide(registry.get("shflbw:V=64"), (1000, 2048))
    assert (classifier.action, classifier.run_shape) == ("padded", (1024, 2048))
    assert "M=1000 is not a multiple of 64" in classifier.reason
    assert "zero-padded to 1024 x 2048" in classifier.reason
    conv1 = decide(registry.get("vw:L=16,K=4"), (64, 147))
    assert (conv1.action, conv1.run_shape) == ("padded", (64, 160))
    assert "K=147 is not a multiple of 16" in conv1.reason
    row = {"prune_action": "padded", "prune_reason": conv1.reason, "run_m": 64, "run_k": 160}
    assert conv1.as_row() == row


def test_dense_policy_tiny_layers_and_dense_pattern() -> None:
    """unfit=dense runs unfit GEMMs dense; a 16x pad is tiny; min_weights; the dense pattern; fits."""
    shfl = registry.get("shflbw:V=64")
    assert decide(shfl, (1000, 2048), PrunePolicy(unfit="dense")).reason.endswith("policy unfit=dense")
    tiny = decide(shfl, (4, 36))  # ResNeXt-50 layer1 grouped conv: 4 rows padded to 64
    assert tiny.action == "dense" and "multiplies the work by 16 > max_pad_ratio=2" in tiny.reason
    assert decide(shfl, (4, 36), PrunePolicy(max_pad_ratio=16)).action == "padded"
    small = decide(registry.get("tw"), (64, 27), PrunePolicy(min_weights=2000))
    assert small.action == "dense" and "1728 weights < min_weights=2000" in small.reason
    assert decide(registry.get("dense"), (3, 3)).action == "dense"
    fits = decide(registry.get("bw:B=16"), (64, 64))
    assert (fits.action, fits.run_shape) == ("as_is", (64, 64))


def test_bad_policy_options_are_named() -> None:
    """Every option is checked and named in the error."""
    with pytest.raises(ValueError, match="unfit must be one of"):
        PrunePolicy(unfit="skip")
    with pytest.raises(ValueError, match="max_pad_ratio must be >= 1"):
        PrunePolicy(max_pad_ratio=0.5)
    with pytest.raises(ValueError, match="min_weights must be an integer >= 0"):
        PrunePolicy(min_weights=-1)
    with pytest.raises(ValueError, match="takes no gradients"):
        prune_gemm(np.ones((4, 4)), registry.get("nm"), 0.5, gradients=np.ones((4, 4)))


@PROPERTY
@given(st.sampled_from(registry.names()), st.integers(1, 80), st.integers(1, 80),
       st.sampled_from(["pad", "dense"]), st.integers(0, 2**32 - 1))
def test_every_pattern_takes_every_shape(name: str, m: int, k: int, unfit: str, seed: int) -> None:
    """No shape is refused: the decision is consistent with the pattern's unit, and the format is exact."""
    pattern = registry.get(name)
    w = np.random.default_rng(seed).standard_normal((m, k)).astype(np.float32)
    result = prune_gemm(w, pattern, SPARSITY, PrunePolicy(unfit=unfit))
    decision = result.decision
    assert decision.shape == (m, k) and result.mask.shape == (m, k)
    unit = pattern.shape_unit()
    if decision.action == "dense":
        assert result.mask.all() and result.fmt is None and decision.run_shape == (m, k)
    else:
        assert decision.run_shape == padded_shape((m, k), unit)
        assert (decision.action == "as_is") == (decision.run_shape == (m, k))
        assert np.array_equal(pattern.decode(result.fmt), masked(w, result.mask))

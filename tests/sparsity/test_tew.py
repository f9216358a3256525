"""Tests of tile-element-wise (TEW) sparsity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from stcsim.sparsity.base import keep_count
from stcsim.sparsity.tew import TileElementWise
from stcsim.sparsity.tilewise import TileWise

from .strategies import PROPERTY, masked, sparsities, weight_matrices
from .test_tilewise import tiles_are_uniform


@PROPERTY
@given(weight_matrices(), sparsities, st.sampled_from([1, 4, 16]), st.sampled_from([0.0, 0.015, 0.1]))
def test_round_trip_constraint_and_sparsity(w: np.ndarray, s: float, g: int, delta: float) -> None:
    """TW part at s + delta, the restored delta is the largest pruned |w|, exact round trip."""
    assume(s + delta < 1)
    pattern = TileElementWise(g, delta)
    tw_mask, restored = pattern.prune_parts(w, s)
    assert np.array_equal(tw_mask, TileWise(g).prune(w, s + delta)) and tiles_are_uniform(tw_mask, g)
    assert not (tw_mask & restored).any()
    assert restored.sum() == min(keep_count(w.size, 1 - delta), (~tw_mask).sum())
    if restored.any() and (~tw_mask & ~restored).any():
        assert np.abs(w[restored]).min() >= np.abs(w[~tw_mask & ~restored]).max()
    mask = pattern.prune(w, s)
    fmt = pattern.encode(w, mask)
    assert np.array_equal(pattern.decode(fmt), masked(w, mask))


def test_encode_recovers_the_pruning_split() -> None:
    """For a mask from prune, the format's TW part holds the TW mask and the element-wise part the delta.

    (Restored elements that complete a whole tile segment may move to the TW part.)
    """
    w = np.random.default_rng(1).standard_normal((96, 200)).astype(np.float32)
    pattern = TileElementWise(G=16, delta=0.02)
    tw_mask, restored = pattern.prune_parts(w, 0.7)
    fmt = pattern.encode(w, tw_mask | restored)
    ew = sum(csr.values.size for csr in fmt.ew)
    assert restored.sum() == keep_count(w.size, 0.98) and restored.sum() - 16 <= ew <= restored.sum()
    assert fmt.tw.values.size + ew == (tw_mask | restored).sum()
    assert (fmt.tw.to_dense() != 0)[tw_mask].all()
    assert abs((tw_mask | restored).mean() - 0.3) < 16 / w.size


def test_bad_parameters() -> None:
    """sparsity + delta must stay below 1; delta must be in [0, 1)."""
    with pytest.raises(ValueError, match=r"sparsity must be in \[0, 0.9\)"):
        TileElementWise(delta=0.1).prune(np.ones((4, 4)), 0.95)
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        TileElementWise(delta=1.5)

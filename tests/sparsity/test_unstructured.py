"""Tests of unstructured magnitude pruning and CSR."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from stcsim.sparsity.base import keep_count
from stcsim.sparsity.unstructured import Unstructured

from .strategies import PROPERTY, masked, sparsities, weight_matrices


@PROPERTY
@given(weight_matrices(), sparsities)
def test_round_trip_and_exact_sparsity(w: np.ndarray, s: float) -> None:
    """decode(encode) == W*mask; exactly round((1-s)*MK) kept, all at least as large as any pruned."""
    pattern = Unstructured()
    mask = pattern.prune(w, s)
    assert mask.sum() == keep_count(w.size, s)
    if mask.any() and (~mask).any():
        assert np.abs(w[mask]).min() >= np.abs(w[~mask]).max()
    fmt = pattern.encode(w, mask)
    assert np.array_equal(pattern.decode(fmt), masked(w, mask))
    assert fmt.nbytes() == 2 * mask.sum() + 4 * mask.sum() + 4 * (w.shape[0] + 1)


def test_known_answer() -> None:
    """The largest magnitudes (sign ignored) survive."""
    w = np.array([[0.1, -5.0, 0.3], [4.0, -0.2, 0.0]])
    assert Unstructured().prune(w, 4 / 6).tolist() == [[False, True, False], [True, False, False]]


def test_global_threshold_across_layers() -> None:
    """One threshold over all layers: a layer of small weights can be pruned entirely."""
    small = np.full((2, 2), 0.01)
    large = np.arange(1.0, 9.0).reshape(2, 4)
    masks = Unstructured().prune_layers([small, large], sparsity=0.5)
    assert not masks[0].any()
    assert masks[1].tolist() == [[False, False, True, True], [True, True, True, True]]
    per_layer = Unstructured().prune(small, 0.5)
    assert per_layer.sum() == 2

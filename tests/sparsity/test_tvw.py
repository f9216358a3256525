"""Tests of tile-vector-wise (TVW) sparsity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.tvw import TileVectorWise, pack_groups_of_four

from .strategies import PROPERTY, masked, weight_matrices


@PROPERTY
@given(weight_matrices(), st.floats(0.5, 0.97), st.sampled_from([1, 2, 8, 16, 64]))
def test_round_trip_constraint_and_sparsity(w: np.ndarray, s: float, g: int) -> None:
    """Inside the TW selection, every row keeps min(2, real) of each 4 condensed columns of its tile."""
    pattern = TileVectorWise(g)
    selection = pattern.tile_selection(w, s)
    mask = pattern.prune(w, s)
    assert not (mask & ~selection.mask(w.shape)).any()
    for t, cols in enumerate(selection.columns):
        sub = mask[np.ix_(selection.tile_rows(t), cols)]
        for start in range(0, len(cols), 4):
            real = min(4, len(cols) - start)
            assert (sub[:, start : start + 4].sum(axis=1) == min(2, real)).all()
    tw_kept = int(selection.mask(w.shape).sum())
    tile_rows = sum(len(selection.tile_rows(t)) for t in range(len(selection.columns)))
    assert tw_kept / 2 <= mask.sum() <= tw_kept / 2 + tile_rows  # a partial last group keeps up to 2 of 2
    fmt = pattern.encode(w, mask)
    assert np.array_equal(pattern.decode(fmt), masked(w, mask))


def test_greedy_grouping_closes_a_group_when_a_row_would_exceed_two() -> None:
    """Columns 0, 1 are kept by row 0 and column 2 too: the group closes and pads after column 1."""
    block = np.array([[1, 1, 1, 0, 0], [0, 0, 0, 1, 1]], dtype=bool)
    assert pack_groups_of_four(block).tolist() == [0, 1, -1, -1, 2, 3, 4, -1]


def test_target_split_and_bad_sparsity() -> None:
    """75% target = 50% TW + 2:4; targets below 50% are impossible."""
    w = np.random.default_rng(0).standard_normal((64, 128))
    assert abs(TileVectorWise(16).prune(w, 0.75).mean() - 0.25) < 0.01
    with pytest.raises(ValueError, match=r"sparsity must be in \[0.5, 1\)"):
        TileVectorWise().prune(w, 0.4)
    with pytest.raises(ValueError, match="G must be >= 1"):
        TileVectorWise(0)


@PROPERTY
@given(weight_matrices(), st.floats(0.5, 0.97), st.sampled_from([1, 4, 16, 64]))
def test_original_order_reading_is_two_four_in_k(w: np.ndarray, s: float, g: int) -> None:
    """nm_order=original: the TW mask thinned to at most 2 of every 4 original K indices, best 2 kept."""
    pattern = TileVectorWise(g, nm_order="original")
    tw_mask = pattern.tile_selection(w, s).mask(w.shape)
    mask = pattern.prune(w, s)
    assert not (mask & ~tw_mask).any()
    pad = -w.shape[1] % 4
    groups = np.pad(mask, ((0, 0), (0, pad))).reshape(w.shape[0], -1, 4)
    tw_groups = np.pad(tw_mask, ((0, 0), (0, pad))).reshape(w.shape[0], -1, 4)
    assert (groups.sum(axis=-1) == np.minimum(2, tw_groups.sum(axis=-1))).all()
    fmt = pattern.encode(w, mask)
    assert np.array_equal(pattern.decode(fmt), masked(w, mask))


def test_original_order_falls_short_of_the_target() -> None:
    """At 75% the condensed reading hits the target; the literal original-order one keeps more (~34%)."""
    w = np.random.default_rng().standard_normal((512, 512))
    assert abs(TileVectorWise(nm_order="condensed").prune(w, 0.75).mean() - 0.25) < 0.005
    assert 0.31 < TileVectorWise(nm_order="original").prune(w, 0.75).mean() < 0.37
    with pytest.raises(ValueError, match="nm_order must be one of"):
        TileVectorWise(nm_order="rows")

"""Tests of tile-wise (TW) sparsity and the CTO format."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.base import keep_count
from stcsim.sparsity.tilewise import CTO, TileWise, tw_select

from .strategies import PROPERTY, masked, sparsities, weight_matrices


def tiles_are_uniform(mask: np.ndarray, g: int) -> bool:
    """Rows with a kept weight, G at a time, keep the same reduction columns."""
    rows = np.flatnonzero(mask.any(axis=1))
    return all((mask[rows[t : t + g]] == mask[rows[t]]).all() for t in range(0, len(rows), g))


@PROPERTY
@given(weight_matrices(), sparsities, st.sampled_from([1, 2, 4, 8, 16, 64]))
def test_round_trip_constraint_and_sparsity(w: np.ndarray, s: float, g: int) -> None:
    """Uniform tiles, TW-C at 1 - sqrt(1 - s), within half a segment of the target, exact round trip."""
    pattern = TileWise(g)
    mask = pattern.prune(w, s)
    assert tiles_are_uniform(mask, g)
    rows_kept = keep_count(w.shape[0], 1 - np.sqrt(1 - s))
    assert mask.any(axis=1).sum() <= rows_kept
    target = keep_count(w.size, s)
    assert abs(int(mask.sum()) - target) <= g / 2 + max(0, target - rows_kept * w.shape[1])
    fmt = pattern.encode(w, mask)
    assert np.array_equal(pattern.decode(fmt), masked(w, mask))
    n_tiles = len(fmt.cto.k_lengths)
    ints = mask.any(axis=1).sum() + n_tiles + fmt.cto.k_offsets.size
    assert fmt.nbytes() == 2 * mask.sum() + 4 * ints


def test_known_answer_column_then_row_pruning() -> None:
    """s_t = 0.75: TW-C keeps the 2 rows of largest norm (s = 0.5), TW-R the 2 best columns of that tile."""
    w = np.array(
        [
            [1.0, 1.0, 1.0, 1.0],
            [9.0, 0.0, 2.0, 0.0],
            [0.1, 0.1, 0.1, 0.1],
            [0.0, 1.0, 8.0, 3.0],
        ]
    )
    selection = tw_select(w, 0.75, G=2)
    assert selection.rows.tolist() == [1, 3] and [c.tolist() for c in selection.columns] == [[0, 2]]
    expected = [[0, 0, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0], [1, 0, 1, 0]]
    assert TileWise(2).prune(w, 0.75).astype(int).tolist() == expected


def test_cto_offsets_follow_the_paper_example() -> None:
    """Paper 002: kept indices (1, 2, 4) are stored as offsets (1, 1, 2) from positions (0, 1, 2)."""
    cto = CTO.build(np.array([1, 2, 4]), [np.array([1, 2, 4]), np.array([0, 3])], G=3)
    assert cto.row_offsets.tolist() == [1, 1, 2]
    assert cto.k_offsets.tolist() == [[1, 1, 2], [0, 2, 0]] and cto.k_lengths.tolist() == [3, 2]
    assert cto.tile_columns(1).tolist() == [0, 3] and cto.tile_rows(0).tolist() == [1, 2, 4]


def test_bad_parameters() -> None:
    """G must be >= 1; a tile keeping a column for some rows only cannot be encoded."""
    with pytest.raises(ValueError, match="G must be >= 1"):
        TileWise(0)
    with pytest.raises(ValueError, match="only some of its rows"):
        TileWise(2).encode(np.ones((2, 2)), np.array([[True, True], [True, False]]))

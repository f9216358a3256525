"""Tests of tile-wise (TW) sparsity and the CTO format."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from stcsim.sparsity.base import keep_count
from stcsim.sparsity.tew import TileElementWise
from stcsim.sparsity.tilewise import CTO, TileWise, tw_select
from stcsim.sparsity.tvw import TileVectorWise

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


@st.composite
def equal_column_weights(draw: st.DrawFn) -> tuple[np.ndarray, float, int]:
    """Weights whose kept rows all hold ``+-c_k`` in column ``k``, so every tile sees the same segment scores.

    ``R = keep_count(M, 1 - sqrt(1 - s))`` random rows have magnitude 1 (TW-C keeps exactly these, in
    original order), the others magnitude 0.5; ``R`` is never a multiple of ``G`` (a partial last tile).
    """
    g = draw(st.sampled_from([2, 4, 8, 16]))
    s = draw(st.floats(0.05, 0.95))
    rows = draw(st.integers(g + 1, 6 * g + 5))
    kept = keep_count(rows, 1 - np.sqrt(1 - s))
    assume(kept > g and kept % g)
    cols = draw(st.integers(1, 90))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    column_scale = rng.permutation(cols) + 1 + rng.random(cols) * 0.5  # distinct, fresh each example
    row_scale = np.full(rows, 0.5)
    row_scale[rng.choice(rows, kept, replace=False)] = 1.0
    signs = rng.choice([-1.0, 1.0], size=(rows, cols))
    return row_scale[:, None] * column_scale[None, :] * signs, s, g


@PROPERTY
@given(equal_column_weights())
def test_every_tile_partial_or_full_keeps_the_paper_split(case: tuple[np.ndarray, float, int]) -> None:
    """Paper 002 Alg. 3: TW-C keeps 1 - s of the rows, TW-R 1 - s of each tile's segments.

    ``s = 1 - sqrt(1 - s_t)`` for both stages. Every tile sees identical segment scores, so each tile,
    the partial last one included, keeps the same columns (the ``c_k``-largest, one more or less at the
    cut) and a fraction of its K within the rounding of the per-stage split. The old sum-over-rows score
    starved the partial tile here.
    """
    w, s_t, g = case
    s = 1 - np.sqrt(1 - s_t)
    selection = tw_select(w, s_t, g)
    rows, cols = len(selection.rows), w.shape[1]
    assert rows == keep_count(w.shape[0], s) and rows % g
    order = np.argsort(-np.abs(w[selection.rows[0]]), kind="stable")
    counts = [len(c) for c in selection.columns]
    assert max(counts) - min(counts) <= 1
    for kept in selection.columns:
        assert set(kept.tolist()) == set(order[: len(kept)].tolist())
    slack = 1 / cols + (g / 2 + 1) / (rows * cols) + 1 / rows
    assert all(abs(n / cols - (1 - s)) <= slack for n in counts), (counts, 1 - s)


@pytest.mark.parametrize("s_t,expected", [(0.5, [64] * 5 + [42]), (0.9, [64, 64, 34])])
def test_gaussian_partial_tile_is_not_starved(s_t: float, expected: list[int]) -> None:
    """512 x 512 Gaussian, G = 64 (issue 17): the partial tile keeps about as many columns as a full one."""
    w = np.random.default_rng().standard_normal((512, 512))
    selection = tw_select(w, s_t, 64)
    assert [len(selection.tile_rows(t)) for t in range(len(selection.columns))] == expected
    counts = np.array([len(c) for c in selection.columns])
    full = counts[:-1].mean()
    assert abs(full / 512 - np.sqrt(1 - s_t)) < 0.05
    assert counts[-1] > 0.75 * full  # un-normalised L2 kept 41 of ~400 and 1 of ~200


@PROPERTY
@given(weight_matrices(), st.floats(0.5, 0.95), st.sampled_from([2, 8, 64]), st.integers(0, 2**32 - 1))
def test_taylor_score_ranks_by_gradient_times_weight(w: np.ndarray, s: float, g: int, seed: int) -> None:
    """score=taylor ranks by (g w)^2: the same masks as the l2 score on the matrix g * w, for TW, TEW, TVW."""
    grads = np.random.default_rng(seed).standard_normal(w.shape)
    gw = grads * w.astype(np.float64)
    for pattern in (TileWise, TileElementWise, TileVectorWise):
        taylor = pattern(G=g, score="taylor").prune(w, s, gradients=grads)
        assert np.array_equal(taylor, pattern(G=g).prune(gw, s))


def test_score_errors() -> None:
    """taylor needs gradients of the weights' shape; l2 refuses gradients; unknown scores are named."""
    w = np.random.default_rng().standard_normal((8, 8))
    with pytest.raises(ValueError, match="score=taylor needs the loss gradients"):
        TileWise(score="taylor").prune(w, 0.5)
    with pytest.raises(ValueError, match="score=l2 ignores them"):
        TileWise().prune(w, 0.5, gradients=w)
    with pytest.raises(ValueError, match=r"gradients shape \(2, 2\) differs"):
        TileWise(score="taylor").prune(w, 0.5, gradients=np.ones((2, 2)))
    with pytest.raises(ValueError, match="score must be one of"):
        TileWise(score="l1")


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

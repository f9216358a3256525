"""Tests of N:M sparsity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.base import keep_count, pad_to
from stcsim.sparsity.nm import NM

from .strategies import PROPERTY, masked, weight_matrices

# an N:M pattern with a sparsity it can reach (at least 1 - N/M), drawn together: filtering the pairs
# afterwards rejected most draws and sometimes failed Hypothesis's filter health check
NM_AND_SPARSITY = st.sampled_from([(1, 2), (2, 4), (1, 4), (2, 8), (4, 8), (3, 5)]).flatmap(
    lambda nm: st.tuples(st.just(nm),
                         st.floats(min_value=1 - nm[0] / nm[1], max_value=0.97, allow_nan=False)))


@PROPERTY
@given(weight_matrices(), NM_AND_SPARSITY)
def test_round_trip_constraint_and_sparsity(w: np.ndarray, nm_s: tuple[tuple[int, int], float]) -> None:
    """At most N per group of M along K, exact target count, ascending indices, exact round trip."""
    (n, m), s = nm_s
    pattern = NM(n, m)
    mask = pattern.prune(w, s)
    groups = pad_to(mask, 1, m).reshape(w.shape[0], -1, m)
    assert groups.sum(axis=-1).max() <= n
    assert mask.sum() == keep_count(w.size, s)
    fmt = pattern.encode(w, mask)
    assert (np.diff(fmt.indices.astype(int), axis=-1) > 0).all()
    assert np.array_equal(pattern.decode(fmt), masked(w, mask))
    bits = int(np.ceil(np.log2(m)))
    assert fmt.nbytes() == 2 * fmt.values.size + -(-fmt.indices.size * bits // 8)


def test_two_four_known_answer_and_bytes() -> None:
    """2:4 keeps the two largest magnitudes of each group; 2-bit indices."""
    w = np.array([[0.5, -3.0, 2.0, 0.1, 9.0, 8.0, -7.0, 1.0]], dtype=np.float16)
    mask = NM(2, 4).prune(w, 0.5)
    assert mask.astype(int).tolist() == [[0, 1, 1, 0, 1, 1, 0, 0]]
    fmt = NM(2, 4).encode(w, mask)
    assert fmt.indices.tolist() == [[[1, 2], [0, 1]]] and fmt.values.tolist() == [[[-3.0, 2.0], [9.0, 8.0]]]
    assert fmt.nbytes() == 4 * 2 + 1  # four fp16 values + four 2-bit indices


def test_sparser_than_n_of_m_fills_lowest_unused_positions() -> None:
    """A group keeping one weight still has two distinct ascending indices (value 0 in the filler)."""
    w = np.array([[0.0, 0.0, 0.0, 5.0]])
    fmt = NM(2, 4).encode(w, np.array([[False, False, False, True]]))
    assert fmt.indices.tolist() == [[[0, 3]]] and fmt.values.tolist() == [[[0.0, 5.0]]]


def test_bad_parameters() -> None:
    """N > M, a target below 1 - N/M and an over-full group are rejected with what is allowed."""
    with pytest.raises(ValueError, match="1 <= N <= M"):
        NM(5, 4)
    with pytest.raises(ValueError, match=r"sparsity must be in \[0.5, 1\)"):
        NM(2, 4).prune(np.ones((2, 8)), 0.3)
    with pytest.raises(ValueError, match="more than N=2"):
        NM(2, 4).encode(np.ones((1, 4)), np.array([[True, True, True, False]]))


def test_group_positions_by_table_equal_the_sorted_ones() -> None:
    """Groups of up to SMALL_GROUP elements take their positions from a table of every mask: the same
    positions, flags and dtypes as sorting each group (``_group_positions``)."""
    from stcsim.sparsity import nm

    rng = np.random.default_rng(3)
    for n, m in ((2, 4), (1, 4), (2, 8), (4, 8), (1, 2), (3, 5)):
        for shape in ((37, 61), (16, 64), (1, 3)):
            mask = nm.top_n_per_group(rng.standard_normal(shape), n, m) & (rng.uniform(size=shape) < 0.8)
            table = nm.group_positions(mask, n, m)
            sorted_ = nm._group_positions(pad_to(mask, 1, m).reshape(shape[0], -1, m), n)
            for a, b in zip(table, sorted_, strict=True):
                assert a.dtype == b.dtype and (a == b).all(), (n, m, shape)
    over = np.zeros((2, 8), dtype=bool)
    over[1, 4:7] = True
    with pytest.raises(ValueError, match="a group of 4 keeps 3 weights, more than N=2"):
        nm.group_positions(over, 2, 4)


def test_top_n_per_group_ranks_as_the_float64_sort() -> None:
    """The N:M mask equals a stable float64 sort of every group's magnitudes, whatever the weights' dtype
    (float16/32 rank in float32, exactly), with ties, signed zeros, NaN and a padded last group."""
    from stcsim.sparsity import nm

    def sorted_mask(w: np.ndarray, n: int, m: int) -> np.ndarray:
        scores = np.abs(np.asarray(w, dtype=np.float64))
        padded = np.where(pad_to(np.ones(scores.shape, dtype=bool), 1, m), pad_to(scores, 1, m), -1.0)
        order = np.argsort(-padded.reshape(-1, m), axis=1, kind="stable")[:, :n]
        keep = np.zeros(padded.reshape(-1, m).shape, dtype=bool)
        np.put_along_axis(keep, order, True, axis=1)
        return keep.reshape(padded.shape)[:, : w.shape[1]]

    rng = np.random.default_rng(5)
    for dtype in (np.float16, np.float32, np.float64):
        for shape in ((33, 70), (16, 64), (5, 3)):
            for w in (rng.standard_normal(shape), rng.integers(-2, 3, shape).astype(float)):
                w = w.astype(dtype)
                w[0, :2] = (0.0, -0.0)
                w[-1, -1] = np.nan
                for n, m in ((2, 4), (1, 4), (3, 5), (4, 16)):
                    assert (nm.top_n_per_group(w, n, m) == sorted_mask(w, n, m)).all(), (dtype, shape, n, m)


def test_top_n_per_group_in_row_blocks_is_the_whole_matrix_mask(monkeypatch) -> None:
    """Ranked BLOCK_ELEMENTS at a time (rows are independent), the mask of ranking the matrix at once, ties
    (zeros) and a padded last group included."""
    from stcsim.sparsity import base, nm

    rng = np.random.default_rng()
    for dtype in (np.float16, np.float32, np.float64):
        w = rng.standard_normal((50, 61)).astype(dtype)
        w[::3, ::5] = 0
        whole = nm.top_n_per_group(w, 2, 4)
        monkeypatch.setattr(base, "BLOCK_ELEMENTS", 200)  # 3 rows a block
        assert np.array_equal(nm.top_n_per_group(w, 2, 4), whole), dtype
        monkeypatch.undo()

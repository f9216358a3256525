"""Tests of the magnitude selection primitives."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stcsim.sparsity.select import (
    l2_norm,
    magnitude,
    rank_magnitude,
    select_groups,
    top_k_flat,
    top_k_per_row,
    trim_to_count,
)


def test_top_k_ties_keep_lower_index() -> None:
    """Equal scores: the lower index wins, deterministically."""
    assert top_k_flat(np.array([1.0, 3.0, 3.0, 2.0]), 1).tolist() == [False, True, False, False]
    assert top_k_per_row(np.array([[2.0, 2.0, 1.0], [0.0, 5.0, 5.0]]), 1).tolist() == [
        [True, False, False],
        [False, True, False],
    ]


def _top_k_by_sort(scores: np.ndarray, k: int) -> np.ndarray:
    keep = np.zeros(scores.size, dtype=bool)
    keep[np.argsort(-scores.ravel(), kind="stable")[: max(k, 0)]] = True
    return keep.reshape(scores.shape)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.0, 2.5, 7.0, float("nan"), float("inf")]), min_size=1,
                max_size=40), st.integers(-1, 45))
def test_top_k_flat_is_the_stable_sort_mask(values: list[float], k: int) -> None:
    """The partition-based selection keeps exactly what the stable sort of the negated scores keeps: ties
    (many repeated values here) at the lower indices, NaN last, every k from none to more than all."""
    scores = np.array(values).reshape(1, -1)
    assert np.array_equal(top_k_flat(scores, k), _top_k_by_sort(scores, k))


def test_top_k_flat_on_a_large_random_layer() -> None:
    """Fresh random magnitudes with coarse values (many ties): the same mask as the sort."""
    scores = np.abs(np.random.default_rng().integers(-50, 50, (300, 700))).astype(np.float64)
    for k in (1, 2100, 105000, 209999):
        assert np.array_equal(top_k_flat(scores, k), _top_k_by_sort(scores, k))


def test_select_groups_takes_closest_prefix() -> None:
    """Groups are taken by score; the prefix whose size is closest to the target is kept."""
    keep = select_groups(np.array([1.0, 9.0, 5.0]), np.array([4, 4, 2]), target=7)
    assert keep.tolist() == [False, True, True]  # sizes 4 + 2 = 6 is closest to 7
    assert not select_groups(np.array([1.0]), np.array([10]), target=4).any()


def test_trim_and_norm() -> None:
    """trim_to_count drops the smallest kept magnitudes; l2_norm is float64."""
    w = np.array([[1.0, -4.0, 2.0, 3.0]])
    assert trim_to_count(w, np.array([[True, True, True, False]]), 2).tolist() == [[False, True, True, False]]
    assert l2_norm(np.array([[3.0, 4.0]], dtype=np.float16), 1).tolist() == [5.0]


def test_short_rows_rank_as_a_stable_sort_does() -> None:
    """Rows of up to SHORT_ROW scores are ranked by comparison: the mask of the stable sort, ties (also
    0.0 and -0.0) to the lower index; rows holding a NaN take the sort."""
    rng = np.random.default_rng(7)
    for width in range(1, 10):
        signed_zeros = np.where(rng.uniform(size=(400, width)) < 0.5, 0.0, -0.0)
        padded = signed_zeros - (rng.uniform(size=(400, width)) < 0.2)  # -1.0: a padded group's filler
        for scores in (rng.uniform(0, 1, (400, width)), rng.integers(0, 3, (400, width)).astype(np.float64),
                       signed_zeros, padded):
            for k in range(width + 2):
                order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
                want = np.zeros(scores.shape, dtype=bool)
                np.put_along_axis(want, order, True, axis=1)
                assert (top_k_per_row(scores, k) == want).all(), (width, k)
    with_nan = np.array([[1.0, np.nan, 2.0, 0.5]])
    assert top_k_per_row(with_nan, 2).tolist() == [[True, False, True, False]]  # the sort puts NaN last



@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 2**32 - 1),
       st.sampled_from([np.float16, np.float32, np.float64]), st.integers(0, 1600))
def test_rank_magnitude_ranks_as_the_float64_magnitude(rows, cols, seed, dtype, k):
    # values on a coarse grid (many ties, signed zeros) in each float dtype
    rng = np.random.default_rng(seed)
    w = (rng.integers(-6, 7, (rows, cols)) / 4.0).astype(dtype)
    w[rng.random(w.shape) < 0.1] = -0.0
    k = min(k, w.size)
    assert rank_magnitude(w).dtype == w.dtype
    assert np.array_equal(top_k_flat(rank_magnitude(w), k), top_k_flat(magnitude(w), k))

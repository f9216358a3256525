"""Tests of the magnitude selection primitives."""

from __future__ import annotations

import numpy as np

from stcsim.sparsity.select import l2_norm, select_groups, top_k_flat, top_k_per_row, trim_to_count


def test_top_k_ties_keep_lower_index() -> None:
    """Equal scores: the lower index wins, deterministically."""
    assert top_k_flat(np.array([1.0, 3.0, 3.0, 2.0]), 1).tolist() == [False, True, False, False]
    assert top_k_per_row(np.array([[2.0, 2.0, 1.0], [0.0, 5.0, 5.0]]), 1).tolist() == [
        [True, False, False],
        [False, True, False],
    ]


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

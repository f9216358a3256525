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

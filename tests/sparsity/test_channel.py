"""Tests of channel ("unified") sparsity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from stcsim.sparsity.base import keep_count
from stcsim.sparsity.channel import Channel

from .strategies import PROPERTY, masked, sparsities, weight_matrices


@PROPERTY
@given(weight_matrices(), sparsities)
def test_round_trip_constraint_and_sparsity(w: np.ndarray, s: float) -> None:
    """Whole reduction columns, round((1-s)*K) of them, exact round trip."""
    mask = Channel().prune(w, s)
    assert (mask.all(axis=0) | ~mask.any(axis=0)).all()
    assert mask.all(axis=0).sum() == keep_count(w.shape[1], s)
    fmt = Channel().encode(w, mask)
    assert np.array_equal(Channel().decode(fmt), masked(w, mask))
    assert fmt.nbytes() == 2 * mask.sum() + 4 * len(fmt.columns)


def test_known_answer_by_column_l2_norm() -> None:
    """Column 1 (norm 5) beats column 0 (one element of 4, norm 4)."""
    w = np.array([[4.0, 3.0, 0.1], [0.0, 4.0, 0.1]])
    assert Channel().prune(w, 2 / 3).tolist() == [[False, True, False], [False, True, False]]


def test_partial_column_is_rejected() -> None:
    """Only whole columns can be encoded."""
    with pytest.raises(ValueError, match="whole columns"):
        Channel().encode(np.ones((2, 2)), np.array([[True, False], [False, False]]))

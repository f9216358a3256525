"""Tests of balanced K-Means."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.kmeans import balanced_kmeans

from .strategies import PROPERTY


@PROPERTY
@given(st.integers(1, 8), st.integers(1, 8), st.integers(1, 20), st.integers(0, 1000))
def test_groups_have_exactly_v_members_and_are_deterministic(k: int, v: int, dim: int, seed: int) -> None:
    """Every label is used exactly V times; the same seed gives the same labels."""
    points = np.random.default_rng(seed).random((k * v, dim)) < 0.5
    labels = balanced_kmeans(points, v, seed)
    assert sorted(np.bincount(labels, minlength=k).tolist()) == [v] * k
    assert np.array_equal(labels, balanced_kmeans(points, v, seed))


def test_recovers_planted_groups() -> None:
    """Four distinct mask rows, each repeated 8 times and shuffled, come back as the four groups."""
    rng = np.random.default_rng(3)
    base = rng.random((4, 40)) < 0.3
    points = np.repeat(base, 8, axis=0)[rng.permutation(32)]
    labels = balanced_kmeans(points, 8, seed=0)
    for c in range(4):
        assert (points[labels == c] == points[labels == c][0]).all()


def test_group_size_must_divide() -> None:
    """V must divide the number of points."""
    with pytest.raises(ValueError, match="must be >= 1 and divide"):
        balanced_kmeans(np.zeros((10, 3)), 4)

"""Hypothesis strategies and settings shared by the sparsity tests."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def weight_matrices(draw: st.DrawFn, max_rows: int = 40, max_cols: int = 70) -> np.ndarray:
    """Random M x K weights of random dtype; sometimes small integers (many ties and exact zeros)."""
    rows = draw(st.integers(1, max_rows))
    cols = draw(st.integers(1, max_cols))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.float16, np.float32, np.float64]))
    if draw(st.booleans()):
        return rng.integers(-3, 4, size=(rows, cols)).astype(dtype)
    return rng.standard_normal((rows, cols)).astype(dtype)


sparsities = st.floats(min_value=0.0, max_value=0.97, allow_nan=False)


def masked(weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``W * mask`` in W's dtype."""
    return np.where(mask, weights, np.zeros((), dtype=weights.dtype))

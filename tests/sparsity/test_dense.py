"""Tests of the dense baseline."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from stcsim.sparsity.dense import Dense

from .strategies import PROPERTY, masked, sparsities, weight_matrices


@PROPERTY
@given(weight_matrices(), sparsities)
def test_dense_keeps_everything_and_round_trips(w: np.ndarray, s: float) -> None:
    """All weights kept whatever the target; bytes are M*K*2."""
    mask = Dense().prune(w, s)
    assert mask.all()
    fmt = Dense().encode(w, mask)
    assert np.array_equal(Dense().decode(fmt), masked(w, mask))
    assert fmt.nbytes() == w.size * 2 and fmt.nbytes(value_bytes=4) == w.size * 4

"""Tests of vector-wise pruning and the Fig. 5 encoding of paper 001."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.base import keep_count
from stcsim.sparsity.vectorwise import VectorWise, compression_ratio, to_vectors

from .strategies import PROPERTY, masked, sparsities, weight_matrices


@PROPERTY
@given(weight_matrices(), sparsities, st.sampled_from([2, 4, 8, 16]), st.sampled_from(["row", "col"]))
def test_round_trip_constraint_and_sparsity(w: np.ndarray, s: float, L: int, axis: str) -> None:
    """At most K per L-vector along the axis, exactly the target count, exact round trip."""
    pattern = VectorWise(L=L, axis=axis)
    k = pattern.kept_per_vector(s)
    mask = pattern.prune(w, s)
    assert to_vectors(mask, L, axis).sum(axis=-1).max(initial=0) <= k
    assert mask.sum() == keep_count(w.size, s)
    fmt = pattern.encode(w, mask)
    assert np.array_equal(pattern.decode(fmt), masked(w, mask))
    n_vectors = fmt.values.shape[0] * fmt.values.shape[1]
    assert fmt.nbytes() == 2 * n_vectors * fmt.K + -(-n_vectors * fmt.K * int(np.log2(L)) // 8)


def test_known_answer_row_and_column_vectors() -> None:
    """Top-2 of each 4-vector, along rows (reduction dim) or along columns."""
    w = np.array([[1.0, 5.0, -2.0, 8.0, 3.0, 0.0, -7.0, 4.0]])
    expected = [[0, 1, 0, 1, 0, 0, 1, 1]]
    assert VectorWise(L=4, K=2).prune(w, 0.5).astype(int).tolist() == expected
    assert VectorWise(L=4, K=2, axis="col").prune(w.T, 0.5).T.astype(int).tolist() == expected


def test_fig5_example_compression_ratio() -> None:
    """4x8 FP16, L=8, K=2: P*L/((P + log2 L)*K) = 128/38 = 3.37x, also from the encoded matrix."""
    assert compression_ratio(8, 2) == pytest.approx(3.368, abs=1e-3)
    assert round(compression_ratio(8, 2), 2) == 3.37
    w = np.zeros((4, 8), dtype=np.float16)
    w[[0, 0, 1, 2, 2, 3, 3], [1, 6, 2, 0, 5, 3, 4]] = np.arange(1, 8)  # row 1 has a single non-zero
    pattern = VectorWise(L=8, K=2)
    fmt = pattern.encode(w, w != 0)
    assert fmt.values.shape == (4, 1, 2)
    assert fmt.values[1, 0].tolist() == [3.0, 0.0] and fmt.offsets[1, 0].tolist() == [2, 0]  # zero-padded
    assert fmt.compression_ratio() == pytest.approx(128 / 38)
    assert fmt.nbytes() == 4 * 2 * 2 + 3  # 8 fp16 values + 8 offsets of 3 bits
    assert np.array_equal(pattern.decode(fmt), w)


def test_bad_parameters() -> None:
    """K > L, a target below 1 - K/L and a mask breaking the K limit are rejected."""
    with pytest.raises(ValueError, match=r"K must be in \[1, L=4\]"):
        VectorWise(L=4, K=5)
    with pytest.raises(ValueError, match="axis"):
        VectorWise(axis="diag")
    with pytest.raises(ValueError, match=r"sparsity must be in \[0.75, 1\)"):
        VectorWise(L=16, K=4).prune(np.ones((2, 16)), 0.5)
    with pytest.raises(ValueError, match="more than K=1"):
        VectorWise(L=4, K=1).encode(np.ones((1, 4)), np.array([[True, True, False, False]]))

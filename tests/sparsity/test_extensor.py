"""Tests of the ExTensor chunk pattern and format."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.base import keep_count
from stcsim.sparsity.extensor import ExTensor

from .strategies import PROPERTY, masked, sparsities, weight_matrices


@PROPERTY
@given(weight_matrices(), sparsities, st.sampled_from([16, 32, 48, 64]), st.sampled_from(["greedy", "dp"]))
def test_round_trip_and_chunk_layout(w: np.ndarray, s: float, max_l: int, planner: str) -> None:
    """Unstructured mask; chunks <= maxL, rows padded to the longest row, exact round trip, bytes."""
    pattern = ExTensor(maxL=max_l, planner=planner)
    mask = pattern.prune(w, s)
    assert mask.sum() == keep_count(w.size, s)
    fmt = pattern.encode(w, mask)
    assert np.array_equal(pattern.decode(fmt), masked(w, mask))
    value_count, coord_bits = 0, 0
    for chunk in fmt.chunks:
        assert chunk.width <= max_l and chunk.values.shape == chunk.coords.shape
        assert chunk.values.shape[0] == 16
        sub = np.zeros((16, chunk.width), dtype=bool)
        top = 16 * chunk.slice_index
        rows = mask[top : top + 16, chunk.start : chunk.start + chunk.width]
        sub[: rows.shape[0], : rows.shape[1]] = rows
        assert chunk.values.shape[1] == sub.sum(axis=1).max()
        assert (chunk.coords < chunk.width).all()
        value_count += chunk.values.size
        coord_bits += chunk.coords.size * int(np.ceil(np.log2(chunk.width)))
    assert fmt.nbytes() == 2 * value_count + -(-coord_bits // 8) + len(fmt.chunks)


def test_known_chunk_encoding() -> None:
    """Coordinates are chunk-relative (re-based after merging), padded with value 0 at coordinate 0."""
    w = np.zeros((16, 32), dtype=np.float32)
    w[:, 3] = 1.0
    w[:, 20] = 2.0
    w[0, 25] = 3.0
    fmt = ExTensor(maxL=32).encode(w, w != 0)
    (chunk,) = fmt.chunks
    assert (chunk.start, chunk.width) == (0, 32)
    assert chunk.coords[0].tolist() == [3, 20, 25] and chunk.values[0].tolist() == [1.0, 2.0, 3.0]
    assert chunk.coords[1].tolist() == [3, 20, 0] and chunk.values[1].tolist() == [1.0, 2.0, 0.0]


def test_bad_parameters() -> None:
    """maxL, planner, reading and tensor_cores are validated with the allowed values."""
    with pytest.raises(ValueError, match="multiple of 16"):
        ExTensor(maxL=40)
    with pytest.raises(ValueError, match="planner must be one of"):
        ExTensor(planner="ilp")
    with pytest.raises(ValueError, match="phase_skip"):
        ExTensor(reading="sometimes")
    with pytest.raises(ValueError, match="tensor_cores"):
        ExTensor(tensor_cores=-1)

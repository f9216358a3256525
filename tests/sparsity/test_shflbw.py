"""Tests of Shfl-BW sparsity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.base import keep_count
from stcsim.sparsity.shflbw import ShflBW

from .strategies import PROPERTY, masked, sparsities, weight_matrices


def is_shfl_bw(mask: np.ndarray, v: int, padded_rows: int) -> bool:
    """Rows form groups of V identical masks once the padding rows fill incomplete groups."""
    _, counts = np.unique(mask, axis=0, return_counts=True)
    return int(sum(-c % v for c in counts)) <= padded_rows - mask.shape[0]


@PROPERTY
@given(weight_matrices(max_rows=48, max_cols=40), sparsities, st.data())
def test_round_trip_constraint_and_sparsity(w: np.ndarray, s: float, data: st.DataObject) -> None:
    """Groups of V identical rows, round((1-s)*K) columns per row, exact round trip."""
    v = data.draw(st.sampled_from([1, 2, 3, 8, 16, 24, 32, 64]))
    padded = -(-w.shape[0] // np.lcm(16, v)) * np.lcm(16, v)
    pattern = ShflBW(V=v, seed=data.draw(st.integers(0, 3)))
    mask = pattern.prune(w, s)
    assert is_shfl_bw(mask, v, padded)
    assert (mask.sum(axis=1) == keep_count(w.shape[1], s)).all()
    fmt = pattern.encode(w, mask)
    assert np.array_equal(pattern.decode(fmt), masked(w, mask))
    assert len(fmt.row_indices) == padded and sorted(fmt.row_indices.tolist()) == list(range(padded))
    n_groups = padded // v
    assert fmt.nbytes() == 2 * fmt.values.size + 4 * (padded + n_groups + 1 + len(fmt.col_indices))


def test_known_answer_planted_row_groups() -> None:
    """Even rows are large in columns 0-7 (largest 0-3), odd rows in 8-15 (largest 8-11).

    At 75% sparsity the beta = 50% mask is exactly columns 0-7 / 8-15, K-Means puts the even and the odd
    rows into the two groups of V = 16 and each group keeps its four strongest columns.
    """
    rng = np.random.default_rng(0)
    w = rng.uniform(0.0, 0.1, size=(32, 16))
    w[0::2, 0:8] += 1.0
    w[0::2, 0:4] += 5.0
    w[1::2, 8:16] += 1.0
    w[1::2, 8:12] += 5.0
    mask = ShflBW(V=16).prune(w, 0.75)
    cols = np.arange(16)
    assert (mask[0::2] == (cols < 4)).all()
    assert (mask[1::2] == ((cols >= 8) & (cols < 12))).all()
    fmt = ShflBW(V=16).encode(w, mask)
    groups = [fmt.col_indices[a:b].tolist() for a, b in zip(fmt.col_ptr[:-1], fmt.col_ptr[1:], strict=True)]
    assert sorted(groups) == [[0, 1, 2, 3], [8, 9, 10, 11]]
    assert sorted(fmt.row_indices[:16] % 2) == [fmt.row_indices[0] % 2] * 16  # one parity per group


def test_bad_parameters() -> None:
    """V must be >= 1; a non-Shfl-BW mask cannot be encoded."""
    with pytest.raises(ValueError, match="V must be >= 1"):
        ShflBW(V=0)
    with pytest.raises(ValueError, match="groups of V identical rows"):
        ShflBW(V=16).encode(np.ones((16, 4)), np.eye(16, 4, dtype=bool))


def test_rows_pad_to_whole_groups() -> None:
    """The 1000-row classifier at V = 32 and 64 (issue 17: it used to raise) runs as 1024 rows."""
    w = np.random.default_rng().standard_normal((1000, 48))
    for v in (32, 64):
        pattern = ShflBW(V=v)
        assert pattern.padded_rows(1000) == 1024 and pattern.shape_unit() == (np.lcm(16, v), 1)
        mask = pattern.prune(w, 0.75)
        assert mask.shape == w.shape and (mask.sum(axis=1) == 12).all() and is_shfl_bw(mask, v, 1024)
        fmt = pattern.encode(w, mask)
        assert len(fmt.row_indices) == 1024 and np.array_equal(pattern.decode(fmt), masked(w, mask))
    assert ShflBW(V=24).padded_rows(40) == 48 and ShflBW(V=64).padded_rows(40) == 64

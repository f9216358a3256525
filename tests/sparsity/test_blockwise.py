"""Tests of block-wise sparsity and BSR."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.base import keep_count
from stcsim.sparsity.blockwise import BlockWise, to_blocks

from .strategies import PROPERTY, masked, sparsities, weight_matrices


@PROPERTY
@given(weight_matrices(), sparsities, st.sampled_from([1, 2, 4, 8, 16]))
def test_round_trip_constraint_and_sparsity(w: np.ndarray, s: float, b: int) -> None:
    """Whole blocks only, within half a block of the target, exact round trip, BSR bytes."""
    pattern = BlockWise(b)
    mask = pattern.prune(w, s)
    blocks = to_blocks(mask, b)
    real = to_blocks(np.ones(w.shape, dtype=bool), b)
    assert np.all(blocks.all(axis=(2, 3)) | ~blocks.any(axis=(2, 3)) | (blocks == real).all(axis=(2, 3)))
    assert abs(int(mask.sum()) - keep_count(w.size, s)) <= b * b / 2
    fmt = pattern.encode(w, mask)
    assert np.array_equal(pattern.decode(fmt), masked(w, mask))
    n_blocks = len(fmt.indices)
    assert fmt.nbytes() == 2 * n_blocks * b * b + 4 * n_blocks + 4 * (blocks.shape[0] + 1)


def test_known_answer_by_l2_norm() -> None:
    """The block with the largest L2 norm wins even if another block has the largest element."""
    w = np.zeros((4, 4))
    w[0, 0] = 3.0  # block (0, 0): norm 3
    w[2:, 2:] = 2.0  # block (1, 1): norm 4
    rows, cols = BlockWise(2).prune(w, 0.75).nonzero()
    assert rows.tolist() == [2, 2, 3, 3] and cols.tolist() == [2, 3, 2, 3]


def test_bad_parameters() -> None:
    """B must be >= 1; a partly kept block cannot be encoded."""
    with pytest.raises(ValueError, match="B must be >= 1"):
        BlockWise(0)
    with pytest.raises(ValueError, match="part of a 2x2 block"):
        BlockWise(2).encode(np.ones((2, 2)), np.array([[True, False], [True, True]]))


def test_edge_blocks_rank_on_equal_terms() -> None:
    """A 70 x 70 matrix of one magnitude, B = 16: blocks are kept in index order, edge blocks included.

    With a plain L2 norm the 6-wide edge blocks would all rank last; per element they tie with the full ones.
    """
    w = np.random.default_rng().choice([-1.0, 1.0], size=(70, 70))
    mask = BlockWise(16).prune(w, 0.5)
    kept = to_blocks(mask, 16).any(axis=(2, 3))
    assert kept.ravel()[:10].all() and not kept.ravel()[12:].any()  # 25 blocks, index order, half kept
    assert kept[0, 4]  # the first edge block (16 x 6) is among the kept ones

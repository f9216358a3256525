"""Tests of the PhaseLat latency model of ExTensor (paper 004)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.extensor_latency import BlockSkip, MaskIndex, chunk_latencies, phase_latencies

from .strategies import PROPERTY

FIG5_ROWS = [
    [1, 3, 9, 10, 11, 16, 22, 29],
    [0, 2, 8, 10, 17],
    [11, 31],
    [0, 11, 27, 51],
]


@pytest.mark.parametrize(
    ("reading", "expected"),
    [(BlockSkip.LITERAL, [36, 33]), (BlockSkip.ROW_SKIP, [18, 7]), (BlockSkip.PHASE_SKIP, [28, 17])],
)
def test_fig5_example_three_readings(reading: BlockSkip, expected: list[int]) -> None:
    """Fig. 5 of paper 004: a wmma.smma.64 chunk, Kmax = 8, two phases, phase 1 using blocks 0, 1 and 3.

    Reconstruction: the extracted figure text keeps only the coordinate rows [1 3 9 10 | 11 16 22 29],
    [0 2 8 10 | 17], [11 31] and [0 11 27 51] and shows "..." for the other twelve rows, which are lost.
    These four rows are used alone as a 4-row chunk (N_row = 4) with L = 64; the sums over them, before
    the +2 of each phase, are 36/33 (literal), 18/7 (row_skip) and 28/17 (phase_skip).
    """
    assert [p - 2 for p in phase_latencies(FIG5_ROWS, 64, reading)] == expected


def test_smma16_with_four_nonzeros_per_row() -> None:
    """A wmma.smma.16 with 4 non-zeros in each of 16 rows: one phase of 16 * 4 + 2 = 66 cycles."""
    rows = [[0, 5, 9, 15]] * 16
    assert {phase_latencies(rows, 16, r)[0] for r in BlockSkip} == {66}


def test_empty_chunk_costs_nothing_and_inputs_are_checked() -> None:
    """No non-zero -> no phase; bad coordinates and widths are rejected."""
    assert chunk_latencies(np.zeros((2, 16, 32), dtype=bool), BlockSkip.LITERAL).tolist() == [0, 0]
    with pytest.raises(ValueError, match=r"in \[0, 16\)"):
        phase_latencies([[3, 16]], 16, BlockSkip.LITERAL)
    with pytest.raises(ValueError, match="multiple of 16"):
        chunk_latencies(np.ones((1, 16, 24), dtype=bool), BlockSkip.LITERAL)


@PROPERTY
@given(st.integers(1, 4), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1))
def test_readings_are_ordered(blocks: int, density: float, seed: int) -> None:
    """literal >= phase_skip >= row_skip: each charges a superset of the next one's blocks."""
    chunks = np.random.default_rng(seed).random((5, 16, 16 * blocks)) < density
    lit, phase, row = (chunk_latencies(chunks, r) for r in ("literal", "phase_skip", "row_skip"))
    assert (lit >= phase).all() and (phase >= row).all()


@PROPERTY
@given(st.integers(1, 3), st.integers(1, 8), st.sampled_from([0.0, 0.05, 0.2, 0.5, 0.9, 1.0]),
       st.sampled_from(list(BlockSkip)), st.integers(0, 2**32 - 1))
def test_mask_index_latencies_equal_the_dense_chunks(slices: int, blocks: int, density: float,
                                                     reading: BlockSkip, seed: int) -> None:
    """MaskIndex.latencies (from the non-zeros) gives chunk_latencies of every window cut out densely, for
    every width and start, on random masks from empty to full."""
    mask = np.random.default_rng(seed).random((16 * slices, 16 * blocks)) < density
    index = MaskIndex(mask, 16)
    for width in range(1, blocks + 1):
        s = np.repeat(np.arange(slices), blocks - width + 1)
        b = np.tile(np.arange(blocks - width + 1), slices)
        windows = np.stack([mask[16 * i : 16 * i + 16, 16 * j : 16 * (j + width)]
                            for i, j in zip(s, b, strict=True)])
        assert np.array_equal(index.latencies(s, b, width, reading), chunk_latencies(windows, reading))


def test_mask_index_refuses_a_ragged_mask_and_chunks_past_the_end() -> None:
    with pytest.raises(ValueError, match="multiple of 16"):
        MaskIndex(np.zeros((15, 16), dtype=bool), 16)
    with pytest.raises(ValueError, match="within the 2 blocks"):
        MaskIndex(np.zeros((16, 32), dtype=bool), 16).latencies(np.array([0]), np.array([1]), 2, "literal")

"""Tests of the PhaseLat latency model of ExTensor (paper 004)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.extensor_latency import BlockSkip, chunk_latencies, phase_latencies

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

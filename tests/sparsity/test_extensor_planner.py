"""Tests of the ExTensor chunk planners (greedy Algorithm 1, fixed, and the DP oracle)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stcsim.sparsity.extensor_latency import BlockSkip
from stcsim.sparsity.extensor_planner import dp_plan, greedy_plan, latency_table, plan_cost, plan_matrix

from .strategies import PROPERTY


@st.composite
def masks(draw: st.DrawFn) -> np.ndarray:
    """Random boolean M x K masks of random density."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = (draw(st.integers(1, 40)), draw(st.integers(1, 160)))
    return rng.random(shape) < draw(st.floats(0.0, 0.6))


@PROPERTY
@given(masks(), st.sampled_from(list(BlockSkip)), st.sampled_from([16, 32, 48, 64]))
def test_dp_le_greedy_le_all_16(mask: np.ndarray, reading: BlockSkip, max_l: int) -> None:
    """Per slice: DP <= greedy <= all-16 chunks; widths are multiples of 16, <= maxL, cover the slice."""
    plans = {p: plan_matrix(mask, max_l, reading, p) for p in ("fixed", "greedy", "dp")}
    width = -(-mask.shape[1] // 16) * 16
    assert len(plans["greedy"]) == -(-mask.shape[0] // 16)
    for fixed, greedy, dp in zip(plans["fixed"], plans["greedy"], plans["dp"], strict=True):
        assert dp.latency <= greedy.latency <= fixed.latency
        for plan in (greedy, dp):
            assert sum(plan.widths) == width and all(16 <= w <= max_l and w % 16 == 0 for w in plan.widths)


@PROPERTY
@given(masks(), st.sampled_from(list(BlockSkip)))
def test_dp_is_optimal_by_enumeration(mask: np.ndarray, reading: BlockSkip) -> None:
    """On slices of up to 6 blocks the DP matches the best of all compositions into widths <= 4 blocks."""
    table = latency_table(np.pad(mask[:16, :96], ((0, 0), (0, -mask[:, :96].shape[1] % 16))), 4, reading)
    n = table.shape[0]
    best = min(
        plan_cost(table, list(c))
        for k in range(1, n + 1)
        for c in itertools.product(range(1, 5), repeat=k)
        if sum(c) == n
    )
    assert plan_cost(table, dp_plan(table)) == best


def test_greedy_merges_when_it_pays() -> None:
    """One non-zero per row in each of two blocks: 2 * 34 cycles as two smma.16, 66 as one smma.32."""
    mask = np.zeros((16, 32), dtype=bool)
    mask[:, [3, 20]] = True
    for reading in BlockSkip:
        table = latency_table(mask, 4, reading)
        assert table[0, 0] == table[1, 0] == 34 and table[0, 1] == 66
        assert greedy_plan(table) == [2]


def test_results_are_per_slice_and_ntc_is_an_integer_stop() -> None:
    """Each slice keeps its own plan; T // n_slices chunks per slice stops the merging early."""
    mask = np.zeros((32, 64), dtype=bool)
    mask[:16, ::16] = True  # slice 0: one non-zero per row in each block -> merging pays
    mask[16:, :4] = True  # slice 1: four non-zeros per row in block 0 only -> nothing to merge
    plans = plan_matrix(mask, 64, BlockSkip.PHASE_SKIP, "greedy")
    assert plans[0].widths == (64,) and plans[1].widths == (16, 16, 16, 16)
    limited = plan_matrix(mask, 64, BlockSkip.PHASE_SKIP, "greedy", tensor_cores=5)  # Ntc = 5 // 2 = 2
    assert len(limited[0].widths) == 2


def test_bad_parameters() -> None:
    """maxL must be a multiple of 16, the planner known, tensor_cores positive."""
    mask = np.ones((16, 16), dtype=bool)
    with pytest.raises(ValueError, match="multiple of 16"):
        plan_matrix(mask, 40)
    with pytest.raises(ValueError, match="planner must be one of"):
        plan_matrix(mask, 64, planner="ilp")
    with pytest.raises(ValueError, match="tensor_cores"):
        plan_matrix(mask, 64, tensor_cores=0)


def _greedy_by_scan(table: np.ndarray, ntc: int | None) -> list[int]:
    """Algorithm 1 (fixed) as the listing runs it: every step scans all adjacent pairs for the first largest
    positive gain (the oracle of the heap-based greedy_plan)."""
    starts, widths = list(range(table.shape[0])), [1] * table.shape[0]
    while ntc is None or len(widths) > ntc:
        best_gain, best = 0, -1
        for i in range(len(widths) - 1):
            merged = widths[i] + widths[i + 1]
            if merged <= table.shape[1]:
                gain = table[starts[i], widths[i] - 1] + table[starts[i + 1], widths[i + 1] - 1]
                gain -= table[starts[i], merged - 1]
                if gain > best_gain:
                    best_gain, best = gain, i
        if best < 0:
            break
        widths[best] += widths.pop(best + 1)
        starts.pop(best + 1)
    return widths


@PROPERTY
@given(st.integers(0, 2**32 - 1), st.integers(1, 70), st.integers(1, 5), st.sampled_from([None, 1, 2, 5]),
       st.booleans())
def test_greedy_plan_is_the_listing_scan(seed: int, blocks: int, max_blocks: int, ntc: int | None,
                                         from_mask: bool) -> None:
    """The heap-based greedy merges exactly what the scan does, ties (small integer tables) included."""
    rng = np.random.default_rng(seed)
    if from_mask:
        table = latency_table(rng.random((16, 16 * blocks)) < rng.choice([0.05, 0.2, 0.6]), max_blocks,
                              BlockSkip.PHASE_SKIP)
    else:
        table = rng.integers(0, 6, (blocks, max_blocks))
    assert greedy_plan(table, ntc) == _greedy_by_scan(table, ntc)

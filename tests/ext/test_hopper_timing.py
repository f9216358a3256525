"""Timing of the Hopper extension on the h100 config, measured by %clock64 differences as the
microbenchmarks of benchmarks/micro do, and compared with the H100's
(results/reference/h100_hopper_micro.csv).

A warpgroup's wgmma.mma_async does its math in 16 N 16 / (hopper.wgmma_fma_per_cycle / 4) cycles (wgmma.sp:
twice the K at hopper.wgmma_sparse_speedup_pct); it occupies the Tensor Core pipes for the longer of that and
the fetch of its shared-memory operands at hopper.wgmma_operand_bytes_per_cycle, runs asynchronously (a chain
on one accumulator does not wait for the previous result) and completes at wgmma.wait_group its math time plus
hopper.wgmma_latency (wgmma_sp_latency) after issue. A TMA box load completes its mbarrier phase
hopper.tma_latency + bytes / hopper.tma_bytes_per_cycle after issue."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.micro.hopper_sim import comparison, read_measured, simulate, tma_clock, wgmma_clock
from stcsim.config import load_config

MEASURED = Path(__file__).parents[2] / "results" / "reference" / "h100_hopper_micro.csv"
CLOCK_OVERHEAD = 4  # fence/commit/wait between the clock reads of the wgmma chain
TMA_INSTRUCTIONS = 6  # expect_tx/try_wait between the clock reads of the TMA kernel, besides its branch


def _keys() -> dict:
    return load_config("h100").flat()


def _math(k: dict, n: int, sparse: bool) -> int:
    math = -(-16 * n * 16 // (k["hopper.wgmma_fma_per_cycle"] // 4))
    return -(-2 * math * 100 // k["hopper.wgmma_sparse_speedup_pct"]) if sparse else math


def _busy(k: dict, n: int, sparse: bool) -> int:
    fetch = 64 * 16 * 2 + n * (32 if sparse else 16) * 2
    return max(_math(k, n, sparse), -(-fetch // k["hopper.wgmma_operand_bytes_per_cycle"]))


def _interval(n: int, sparse: bool) -> float:
    return (wgmma_clock("h100", n, 8, sparse) - wgmma_clock("h100", n, 4, sparse)) / 4


@pytest.mark.parametrize("n", [8, 64, 256])
@pytest.mark.parametrize("sparse", [False, True])
def test_wgmma_issue_interval_per_n(n: int, sparse: bool) -> None:
    """A chain of wgmma on one accumulator costs its pipe occupancy per instruction (the longer of math and
    operand fetch), not its latency."""
    busy = _busy(_keys(), n, sparse)
    assert busy <= _interval(n, sparse) <= busy + 1  # the warpgroup's rendezvous may add a cycle


def test_small_n_is_bound_by_the_operand_fetch_and_large_n_by_the_math() -> None:
    """Dense: N = 8 takes (2048 + 256) / 128 = 18 cycles, not N/2 = 4; N = 256 takes its math N/2 = 128.
    Sparse (twice B): fetch-bound at every N, so its speedup at N = 256 is 2 x 128 / 144, not 2."""
    k = _keys()
    assert _math(k, 8, False) < _busy(k, 8, False) <= _interval(8, False)
    assert _busy(k, 256, False) == _math(k, 256, False) == 128
    ratio = 2 * _interval(256, False) / _interval(256, True)
    assert 1.7 < ratio < 1.85


def test_wait_group_waits_for_math_plus_latency() -> None:
    """One wgmma then wait_group 0: its math time plus hopper.wgmma_latency (sparse: wgmma_sp_latency), at
    every N, whether the pipe occupancy is math- or fetch-bound."""
    k = _keys()
    for sparse, key in ((False, "hopper.wgmma_latency"), (True, "hopper.wgmma_sp_latency")):
        for n in (8, 64, 256):
            expect = _math(k, n, sparse) + k[key] + CLOCK_OVERHEAD
            assert wgmma_clock("h100", n, 1, sparse) == expect


def test_tma_latency_and_bandwidth() -> None:
    """Issue to try_wait success: hopper.tma_latency + bytes / hopper.tma_bytes_per_cycle (plus the
    instructions between the clock reads)."""
    k = _keys()
    lat, bw = k["hopper.tma_latency"], k["hopper.tma_bytes_per_cycle"]
    for rows in (8, 256):
        overhead = TMA_INSTRUCTIONS + k["units.branch.latency"]
        assert tma_clock("h100", rows) == lat + -(-64 * rows * 2 // bw) + overhead


def test_simulated_microbenchmarks_match_the_h100() -> None:
    """Every cycle row of the committed silicon CSV within 6% on the h100 config (docs/calibration.md)."""
    table = comparison(simulate("h100"), read_measured(MEASURED))
    assert len(table) == 30
    worst = max(table, key=lambda row: abs(row[4]))
    assert abs(worst[4]) < 6.0, worst
    assert sum(abs(row[4]) for row in table) / len(table) < 2.5

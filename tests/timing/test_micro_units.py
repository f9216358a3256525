"""Execution units: dependent-chain latency, issue intervals, WAW, branches, sub-cores and schedulers."""

from __future__ import annotations

import pytest
from microkit import cases, check


@pytest.mark.parametrize(("bench_id", "config"), cases("latency"))
def test_latency(bench_id: str, config: str) -> None:
    """Per-instruction latency of each unit class (and kernel end = last completion) matches the config."""
    check(bench_id, config)


@pytest.mark.parametrize(("bench_id", "config"), cases("throughput"))
def test_throughput(bench_id: str, config: str) -> None:
    """Issue intervals, WAW waits, one issue per warp / per scheduler per cycle, sub-core sharing."""
    check(bench_id, config)

"""Occupancy: CTAs per SM limited by threads, registers, shared memory and CTA slots, and the waves."""

from __future__ import annotations

import pytest
from microkit import cases, check

from benchmarks.micro.launch import CONFIGS, flat
from benchmarks.micro.occupancy import ctas_per_sm, shared_case


@pytest.mark.parametrize(("bench_id", "config"), cases("occupancy"))
def test_occupancy(bench_id: str, config: str) -> None:
    """max_ctas_per_sm matches the contract's formula; exactly num_sms x c CTAs start in the first wave."""
    check(bench_id, config)


@pytest.mark.parametrize("config", CONFIGS)
def test_cases_exercise_the_rounding(config: str) -> None:
    """The occupancy cases are chosen so that the allocation granularities change the answer."""
    cfg = flat(config)
    assert ctas_per_sm(cfg, 673, 32, 0) < cfg["sm.max_threads"] // 673  # warp rounding of threads
    assert ctas_per_sm(cfg, 96, 170, 0) < cfg["sm.registers"] // (96 * 170)  # register allocation unit
    s = shared_case(cfg)
    assert ctas_per_sm(cfg, 32, 32, s) < cfg["sm.shared_mem_bytes"] // (
        s + cfg["sm.shared_reserved_per_cta_bytes"]
    )

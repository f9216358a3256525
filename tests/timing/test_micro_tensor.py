"""Tensor Cores: wmma and mma.sync latency (dependent chains) and issue interval (independent streams)."""

from __future__ import annotations

import pytest
from microkit import cases, check

from benchmarks.micro import measure
from benchmarks.micro.launch import flat
from benchmarks.micro.tensor import PAPER_WMMA_V100


@pytest.mark.parametrize(("bench_id", "config"), cases("tensor"))
def test_tensor(bench_id: str, config: str) -> None:
    """Each warp-level MMA shape times as its config keys say."""
    check(bench_id, config)


def test_wmma_is_40_cycles_on_v100() -> None:
    """Paper 001 Fig. 13(a): a dependent wmma.mma m16n16k16 (f32 accumulate) takes 40 cycles on a V100."""
    assert flat("v100")["tensor.wmma_m16n16k16_f32.latency"] == PAPER_WMMA_V100
    r = measure("lat.wmma.f32", "v100")
    assert r.value == PAPER_WMMA_V100
    assert r.checks["gpu_sim_cycle"].measured == PAPER_WMMA_V100

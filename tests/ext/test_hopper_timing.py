"""Timing of the Hopper extension on the h100 config, measured by %clock64 differences as the
microbenchmarks of benchmarks/micro do: a warpgroup's wgmma.mma_async occupies each sub-core's Tensor Core
pipe 16 N 16 / (hopper.wgmma_fma_per_cycle / 4) cycles (wgmma.sp: the same for twice the K at the 200%
sparse rate); it runs asynchronously (a chain on one accumulator does not wait for the previous result) and
completes at wgmma.wait_group, hopper.wgmma_latency cycles after its occupancy. A TMA box load completes
its mbarrier phase hopper.tma_latency + bytes / hopper.tma_bytes_per_cycle after issue. The PTX is that of
benchmarks/micro/hopper.py, which measures the same on an H100."""

from __future__ import annotations

import pytest

from benchmarks.micro.hopper import tma_clock_ptx, wgmma_chain_ptx
from stcsim.config import load_config
from stcsim.sim import Engine, TensorMap


def _cycles(n: int, count: int, sparse: bool = False) -> int:
    eng = Engine("h100")
    eng.load_ptx(wgmma_chain_ptx(n, count, sparse))
    out = eng.malloc(1024)
    eng.launch("chain", 1, 128, [out])
    return int(eng.copy_from(out, 1, "uint64")[0])


def _keys() -> dict:
    return load_config("h100").flat()


@pytest.mark.parametrize("n", [64, 256])
@pytest.mark.parametrize("sparse", [False, True])
def test_wgmma_issue_interval_per_n(n: int, sparse: bool) -> None:
    """A chain of wgmma on one accumulator costs its Tensor Core occupancy per instruction, not its
    latency."""
    k = _keys()
    busy = -(-16 * n * 16 // (k["hopper.wgmma_fma_per_cycle"] // 4))
    if sparse:
        busy = -(-2 * busy * 100 // k["hopper.wgmma_sparse_speedup_pct"])
    per = (_cycles(n, 8, sparse) - _cycles(n, 4, sparse)) / 4
    assert busy <= per <= busy + 2  # the warpgroup's rendezvous may add a cycle


def test_wait_group_waits_for_the_latency() -> None:
    """One wgmma then wait_group 0: its occupancy plus hopper.wgmma_latency (the difference of two N cancels
    the fixed cost)."""
    k = _keys()
    per_sub = k["hopper.wgmma_fma_per_cycle"] // 4
    grow = (_cycles(256, 1) - _cycles(64, 1))
    assert grow == 16 * (256 - 64) * 16 // per_sub
    assert _cycles(64, 1) >= 16 * 64 * 16 // per_sub + k["hopper.wgmma_latency"]


def _tma_cycles(rows: int) -> int:
    eng = Engine("h100")
    eng.load_ptx(tma_clock_ptx(64 * rows * 2))
    src = eng.malloc(256 * 64 * 2)
    out = eng.malloc(64)
    tmap = TensorMap("u16", src, (64, 256), (128,), (64, rows), swizzle="128B")
    eng.launch("tmaclk", 1, 1, [tmap, out])
    return int(eng.copy_from(out, 1, "uint64")[0])


def test_tma_latency_and_bandwidth() -> None:
    """Issue to try_wait success: hopper.tma_latency + bytes / hopper.tma_bytes_per_cycle (plus the
    instructions between the clock reads)."""
    k = _keys()
    small, large = _tma_cycles(8), _tma_cycles(256)
    bw = k["hopper.tma_bytes_per_cycle"]
    assert large - small == 64 * (256 - 8) * 2 // bw
    assert k["hopper.tma_latency"] + 1024 // bw <= small <= k["hopper.tma_latency"] + 1024 // bw + 20

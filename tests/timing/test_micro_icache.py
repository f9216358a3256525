"""Instruction fetch (icache.*): straight-line code of n FMAs in 8 chains
(benchmarks/calibration/icache_probe.py), one warp, clock64 per pass. The contract the config promises: a
cold pass streams its lines at icache.fill_cycles each while the code is within what the level above the L1
holds at launch (icache.l15_bytes); a warm pass of code that fits the L0 runs at the issue rate; code past
the L0 refills every line from the L1 each pass (fill_cycles), code past the L1 from L2 (l2_fill_cycles),
and a cold line past l15_bytes comes from DRAM (dram_fill_cycles). A GPU without the model (v100) pays
nothing. Every launch's output is checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.calibration.icache_probe import CHAINS, REPS, straight_ptx
from stcsim.config import load_config
from stcsim.sim import Engine

A, B = np.float32(0.999), np.float32(0.5)


def reference(n: int, threads: int) -> np.ndarray:
    """What each thread stores: its 8 chains summed after REPS passes of f = fma(f, A, B), n / 8 per chain."""
    f = np.arange(threads, dtype=np.float64)[:, None] + np.arange(CHAINS, dtype=np.float64)[None, :]
    f = f.astype(np.float32)
    for _ in range(REPS * n // CHAINS):  # the product of two floats is exact in float64: one rounding, as fma
        f = (f.astype(np.float64) * A + B).astype(np.float32)
    return f.sum(axis=1, dtype=np.float32)


def passes(config: str, n: int, ctas: int = 1, threads: int = 32) -> tuple[np.ndarray, dict]:
    """Cycles of each pass (thread 0 of CTA 0) and the launch's stats; the output checked against numpy."""
    eng = Engine(config)
    eng.load_ptx(straight_ptx(n))
    out = eng.malloc(4 * ctas * threads)
    clk = eng.malloc(8 * ctas * (REPS + 1))
    stats = eng.launch(f"icache_{n}", (ctas, 1, 1), (threads, 1, 1), [out, clk, REPS, A, B])
    got = eng.copy_from(out, (ctas, threads), np.float32)
    np.testing.assert_allclose(got, np.broadcast_to(reference(n, threads), got.shape), rtol=1e-5)
    return np.diff(eng.copy_from(clk, (REPS + 1,), np.int64)), stats


@pytest.fixture(scope="module")
def ic() -> dict:
    """The h100 icache keys."""
    flat = load_config("h100").flat()
    assert flat["icache.enabled"]
    return {k.split(".", 1)[1]: v for k, v in flat.items() if k.startswith("icache.")}


def lines(n: int, ic: dict) -> float:
    """Lines of code of n instructions."""
    return n * ic["instruction_bytes"] / ic["line_bytes"]


def streamed(n: int, ic: dict, cycles_per_line: float) -> object:
    """A pass streaming the lines of n FMAs at `cycles_per_line`, give or take 4 lines: the body starts
    inside a line and the loop's tail (clock, store, counter, branch) adds up to two."""
    return pytest.approx(lines(n, ic) * cycles_per_line, abs=4 * cycles_per_line)


def test_cold_code_streams_at_the_fill_rate_and_warm_code_at_the_issue_rate(ic: dict) -> None:
    n = 1024  # 16 KiB: inside the L0 and the level above the L1
    assert n * ic["instruction_bytes"] < min(ic["l0_bytes"], ic["l15_bytes"])
    p, stats = passes("h100", n)
    assert p[0] == streamed(n, ic, ic["fill_cycles"])
    assert p[1:].max() < 1.03 * n + 20  # one FMA per cycle from 8 chains, plus the loop's few instructions
    assert stats["stall_fetch"] > 0
    # each line filled once in REPS passes; the prologue and epilogue add a few lines
    assert lines(n, ic) <= stats["icache_l0_misses"] <= lines(n, ic) + 8


def test_code_past_the_l0_refills_every_pass_from_the_l1(ic: dict) -> None:
    n = 4096  # 64 KiB: past the 32 KiB L0, inside the L1
    assert ic["l0_bytes"] < n * ic["instruction_bytes"] < ic["l1_bytes"]
    p, _ = passes("h100", n)
    assert p[2] == streamed(n, ic, ic["fill_cycles"])  # pass 2 also waits for a prefetch of the epilogue


def test_code_past_the_l1_comes_from_l2_and_cold_lines_past_the_l15_bytes_from_dram(ic: dict) -> None:
    n = 16384  # 256 KiB
    assert n * ic["instruction_bytes"] > ic["l1_bytes"]
    p, stats = passes("h100", n)
    warm = ic["l15_bytes"] / ic["line_bytes"]
    cold = warm * ic["fill_cycles"] + (lines(n, ic) - warm) * ic["dram_fill_cycles"]
    assert p[0] == pytest.approx(cold, abs=4 * ic["dram_fill_cycles"])
    assert p[2] == streamed(n, ic, ic["l2_fill_cycles"])
    assert stats["icache_l1_misses"] >= REPS * lines(n, ic) - 8


def test_warps_of_other_sub_cores_share_the_l1_fills(ic: dict) -> None:
    one, _ = passes("h100", 1024)
    four, stats = passes("h100", 1024, threads=128)
    assert four[0] <= one[0] + 2 * ic["fill_cycles"]  # the other sub-cores trail by a line, no more
    assert lines(1024, ic) <= stats["icache_l1_misses"] <= lines(1024, ic) + 8  # one L1 fill per line
    assert stats["icache_l0_misses"] >= 4 * lines(1024, ic)  # and one L0 fill per line and sub-core


def test_a_gpu_without_the_model_fetches_for_free() -> None:
    assert not load_config("v100").flat()["icache.enabled"]
    p, stats = passes("v100", 1024)
    assert p[0] - p[1] <= 8
    assert stats["stall_fetch"] == 0
    assert stats["icache_l0_misses"] == 0


def conflict_ptx(pad: int, loops: int = 3) -> str:
    """PTX: warp w of the CTA loops over block `w // 4` (mod `loops`; each block 13 instructions: two lines),
    `pad` never-executed instructions after each so that the blocks start 15 + pad instructions (16 B each)
    apart."""
    fmas = "\n".join(["  fma.rn.f32 %f1, %f1, 0f3F7FBE77, 0f3F000000;"] * 10)
    body = f"{fmas}\n  add.u32 %r4, %r4, 1;\n  setp.lt.u32 %p2, %r4, %r1;"
    pads = "\n".join("  fma.rn.f32 %f2, %f2, %f2, %f2;" for _ in range(pad))
    blocks = "\n".join(f"L{i}:\n{body}\n  @%p2 bra L{i};\n  bra DONE;\n{pads}" for i in range(loops))
    dispatch = "\n".join(f"  setp.eq.u32 %p1, %r5, {i};\n  @%p1 bra L{i};" for i in range(loops))
    return f"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry conflict(.param .u64 out, .param .u32 iters)
{{
  .reg .pred %p<3>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u32 %r1, [iters];
  mov.u32 %r2, %tid.x;
  shr.u32 %r3, %r2, 7;
  rem.u32 %r5, %r3, {loops};
  cvt.rn.f32.u32 %f1, %r2;
  mov.f32 %f2, %f1;
  mov.u32 %r4, 0;
{dispatch}
{blocks}
DONE:
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f1;
  ret;
}}
"""


def test_warps_whose_loops_share_an_l0_entry_all_progress(ic: dict) -> None:
    """Warps 0, 4 and 8 share sub-core 0; their loops lie one L0 apart (the same direct-mapped entries). Each
    refill evicts another warp's line, but a line fetched for a warp reaches that warp's instruction buffer:
    all finish (without it, three warps re-request each other's evicted lines for ever)."""
    pad = ic["l0_bytes"] // ic["instruction_bytes"] - 15
    iters, threads = 200, 384
    eng = Engine("h100", max_cycles=int(iters * 2 * 12 * ic["fill_cycles"]) + 20_000)
    eng.load_ptx(conflict_ptx(pad))
    out = eng.malloc(4 * threads)
    stats = eng.launch("conflict", 1, threads, [out, iters])
    f, a = np.arange(threads, dtype=np.float32), np.uint32(0x3F7FBE77).view(np.float32)
    for _ in range(10 * iters):
        f = (f.astype(np.float64) * a + 0.5).astype(np.float32)
    np.testing.assert_allclose(eng.copy_from(out, threads, np.float32), f, rtol=1e-5)
    assert stats["icache_l0_misses"] >= 3 * iters  # the loops do evict each other

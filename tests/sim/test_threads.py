"""One launch on several host threads (issue 48): `Engine(..., threads=N)` gives the stats and the device
memory of `threads=1`, bit for bit, on every kind of launch -- a multi-wave GEMM, a memory kernel (which
also stores %clock64), global atomics whose old values depend on the order the L2 sees them in, a barrier-
and shared-atomic-heavy kernel, a sampled launch -- the watchdog still stops a kernel that never ends, and a
fault on any thread reaches the caller.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stcsim.kernels import KERNELS, GemmProblem
from stcsim.kernels.protocol import as_pattern
from stcsim.kernels.run import launch
from stcsim.kernels.verify import random_operands
from stcsim.sim import Engine, LaunchError, SimFault, WatchdogError

pytestmark = pytest.mark.sim_only

THREADS = (1, 2, 3)

PTX = """.version 8.0
.target sm_80
.address_size 64

.visible .entry stream(.param .u64 x, .param .u64 y, .param .u64 clk, .param .u32 n)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<8>;
\t.reg .f32 %f<4>;
\t.reg .b64 %rd<10>;
\tld.param.u64 %rd1, [x];
\tld.param.u64 %rd2, [y];
\tld.param.u64 %rd3, [clk];
\tld.param.u32 %r1, [n];
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r3, %ntid.x;
\tmov.u32 %r4, %tid.x;
\tmad.lo.s32 %r5, %r2, %r3, %r4;
\tsetp.ge.u32 %p1, %r5, %r1;
\t@%p1 bra $L_end;
\tmul.lo.u32 %r6, %r5, 97;
\trem.u32 %r6, %r6, %r1;
\tmul.wide.u32 %rd4, %r6, 4;
\tadd.s64 %rd5, %rd1, %rd4;
\tmul.wide.u32 %rd4, %r5, 4;
\tadd.s64 %rd6, %rd2, %rd4;
\tld.global.f32 %f1, [%rd5];
\tld.global.f32 %f2, [%rd6];
\tfma.rn.f32 %f3, %f1, 0f40000000, %f2;
\tst.global.f32 [%rd6], %f3;
\tmov.u64 %rd7, %clock64;
\tmul.wide.u32 %rd8, %r5, 8;
\tadd.s64 %rd9, %rd3, %rd8;
\tst.global.u64 [%rd9], %rd7;
$L_end:
\tret;
}

.visible .entry atomics(.param .u64 counters, .param .u64 out, .param .u32 n)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<10>;
\t.reg .b64 %rd<8>;
\tld.param.u64 %rd1, [counters];
\tld.param.u64 %rd2, [out];
\tld.param.u32 %r1, [n];
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r3, %ntid.x;
\tmov.u32 %r4, %tid.x;
\tmad.lo.s32 %r5, %r2, %r3, %r4;
\tsetp.ge.u32 %p1, %r5, %r1;
\t@%p1 bra $L_end;
\tand.b32 %r6, %r5, 7;
\tmul.wide.u32 %rd3, %r6, 4;
\tadd.s64 %rd4, %rd1, %rd3;
\tatom.global.add.u32 %r7, [%rd4], 1;
\tmul.wide.u32 %rd5, %r5, 4;
\tadd.s64 %rd6, %rd2, %rd5;
\tst.global.u32 [%rd6], %r7;
$L_end:
\tret;
}

.visible .entry barriers(.param .u64 out, .param .u32 rounds)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<16>;
\t.reg .b64 %rd<4>;
\t.shared .align 4 .b32 buf[256];
\t.shared .align 4 .b32 cnt[1];
\tld.param.u64 %rd1, [out];
\tld.param.u32 %r1, [rounds];
\tmov.u32 %r2, %tid.x;
\tmov.u32 %r3, %ctaid.x;
\tmov.u32 %r4, buf;
\tshl.b32 %r5, %r2, 2;
\tadd.s32 %r6, %r4, %r5;
\tadd.s32 %r7, %r2, 1;
\tand.b32 %r7, %r7, 255;
\tshl.b32 %r8, %r7, 2;
\tadd.s32 %r9, %r4, %r8;
\tadd.s32 %r10, %r2, %r3;
\tmov.u32 %r11, 0;
\tmov.u32 %r14, cnt;
$L_loop:
\tst.shared.u32 [%r6], %r10;
\tbar.sync 0;
\tld.shared.u32 %r12, [%r9];
\tatom.shared.add.u32 %r13, [%r14], %r12;
\tadd.s32 %r10, %r10, %r12;
\txor.b32 %r10, %r10, %r13;
\tbar.sync 0;
\tadd.s32 %r11, %r11, 1;
\tsetp.lt.u32 %p1, %r11, %r1;
\t@%p1 bra $L_loop;
\tmov.u32 %r15, %ntid.x;
\tmad.lo.s32 %r15, %r3, %r15, %r2;
\tmul.wide.u32 %rd2, %r15, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r10;
\tret;
}

.visible .entry oob(.param .u32 bad)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<6>;
\t.shared .align 4 .b32 buf[64];
\tld.param.u32 %r1, [bad];
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r5, 0;
$L_wait:
\tadd.s32 %r5, %r5, 1;
\tsetp.lt.u32 %p1, %r5, 50;
\t@%p1 bra $L_wait;
\tsetp.eq.u32 %p1, %r2, %r1;
\tmov.u32 %r3, buf;
\t@%p1 add.s32 %r3, %r3, 100000;
\tld.shared.u32 %r4, [%r3];
\tret;
}

.visible .entry spin()
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<2>;
\tmov.u32 %r1, %tid.x;
\tsetp.ge.u32 %p1, %r1, 32;
\t@%p1 bra $L_spin;
\tbar.sync 0;
\tret;
$L_spin: bra.uni $L_spin;
}
"""


def _small_h100(tmp_path: Path) -> str:
    """h100 with 8 SMs (4 clusters): a GEMM of a few hundred CTAs runs in several waves."""
    overlay = tmp_path / "eight_sms.yaml"
    overlay.write_text("gpu:\n  n_clusters: 4\n")
    return f"h100+{overlay}"


def _gemm(config: str, name: str, problem: GemmProblem, threads: int, sample: float = 0.0) -> tuple[Any, Any]:
    kernel = KERNELS[name]
    a, b = random_operands(problem, np.random.default_rng(5))
    operands = kernel.prepare(a, b, as_pattern("dense"), 0.0)
    return launch(kernel, Engine(config, threads=threads), operands, sample=sample)


def _same(runs: list[tuple[dict[str, Any], list[np.ndarray]]]) -> None:
    """Every run's stats and memory equal the first's (threads=1), exactly."""
    stats0, mem0 = runs[0]
    for threads, (stats, mem) in zip(THREADS[1:], runs[1:], strict=True):
        keys = stats0.keys() | stats.keys()
        diff = {k: (stats0.get(k), stats.get(k)) for k in keys if stats0.get(k) != stats.get(k)}
        assert not diff, f"threads={threads}: stats differ from threads=1: {diff}"
        for i, (a, b) in enumerate(zip(mem0, mem, strict=True)):
            assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)), (
                f"threads={threads}: buffer {i} differs from threads=1")


def _ptx_runs(config: str, kernel: str, grid: int, block: int, buffers: list[np.ndarray],
              scalars: list[Any]) -> list[tuple[dict[str, Any], list[np.ndarray]]]:
    runs = []
    for threads in THREADS:
        eng = Engine(config, threads=threads, ptxas_facts=False)
        eng.load_ptx(PTX)
        ptrs = []
        for buf in buffers:
            ptrs.append(eng.malloc(buf.nbytes))
            eng.copy_to(ptrs[-1], buf)
        stats = eng.launch(kernel, (grid, 1, 1), (block, 1, 1), [*ptrs, *scalars])
        runs.append((stats, [eng.copy_from(p, b.shape, b.dtype) for p, b in zip(ptrs, buffers, strict=True)]))
    return runs


def test_multi_wave_gemm_is_bit_identical(tmp_path: Path) -> None:
    config = _small_h100(tmp_path)
    problem = GemmProblem(1024, 1024, 128)
    runs = []
    for threads in THREADS:
        c, stats = _gemm(config, "gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3", problem, threads)
        runs.append((stats, [c]))
    stats = runs[0][0]
    assert stats["grid_ctas"] > 2 * stats["max_ctas_per_sm"] * 8, "not several waves on 8 SMs"
    _same(runs)


def test_wmma_gemm_full_h100_is_bit_identical() -> None:
    runs = []
    for threads in THREADS:
        c, stats = _gemm("h100", "gemm_wmma_f16_f32_tile64x64x32_warp32x32", GemmProblem(512, 768, 128),
                         threads)
        runs.append((stats, [c]))
    _same(runs)


@pytest.mark.parametrize("config", ["h100", "v100"])
def test_memory_kernel_is_bit_identical(config: str) -> None:
    n = 1 << 15
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    _same(_ptx_runs(config, "stream", n // 128, 128, [x, y, np.zeros(n, np.uint64)], [np.uint32(n)]))


def test_global_atomics_are_bit_identical() -> None:
    n = 1 << 14
    runs = _ptx_runs("h100", "atomics", n // 256, 256, [np.zeros(8, np.uint32), np.zeros(n, np.uint32)],
                     [np.uint32(n)])
    assert runs[0][1][0].sum() == n  # every update landed
    _same(runs)


def test_barrier_heavy_kernel_is_bit_identical() -> None:
    ctas = 300
    _same(_ptx_runs("h100", "barriers", ctas, 256, [np.zeros(ctas * 256, np.uint32)], [np.uint32(24)]))


def test_sampled_launch_is_bit_identical() -> None:
    runs = []
    for threads in THREADS:
        c, stats = _gemm("v100", "gemm_simt_f32_f32_tile32x32x8_warp32x16_thread4x4",
                         GemmProblem(1024, 1024, 64), threads, sample=0.05)
        runs.append((stats, [c]))
    assert "sample_mode" in runs[0][0]
    _same(runs)


def test_watchdog_stops_a_kernel_that_never_ends_on_threads() -> None:
    eng = Engine("h100", threads=2, max_cycles=200_000, ptxas_facts=False)
    eng.load_ptx(PTX)
    with pytest.raises(WatchdogError, match="max_cycles"):
        eng.launch("spin", (16, 1, 1), (64, 1, 1), [])


def test_a_fault_on_a_pool_thread_is_raised_and_the_engine_stays_usable() -> None:
    """A shared-memory fault raised while the SMs run on their own (any thread) reaches the caller with
    the one-thread message; the next launch on the engine runs."""
    messages, cycles = [], []
    for threads in THREADS:
        eng = Engine("h100", threads=threads, ptxas_facts=False)
        eng.load_ptx(PTX)
        with pytest.raises(SimFault, match="out-of-bounds shared read") as err:
            eng.launch("oob", (300, 1, 1), (64, 1, 1), [np.uint32(77)])
        messages.append(str(err.value))
        cycles.append(eng.launch("oob", (300, 1, 1), (64, 1, 1), [np.uint32(100000)])["gpu_sim_cycle"])
    assert len(set(messages)) == 1 and len(set(cycles)) == 1


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_threads_must_be_a_positive_int(bad: Any) -> None:
    with pytest.raises(LaunchError, match="threads"):
        Engine("h100", threads=bad)

"""Hopper microbenchmarks (wgmma, TMA): the PTX the engine's timing tests (tests/ext/test_hopper_timing.py)
run, and their silicon run on an H100 that measures the hopper.* config keys (results/reference/
h100_hopper_micro.csv; benchmarks/micro/hopper_sim.py runs the same on the engine and compares).

    python -m benchmarks.micro.hopper --out results/gpu/hopper_micro.csv     # on an sm_90 GPU with CuPy

Rows (name, n, value, unit): wgmma issue interval per N (cycles per warpgroup instruction, %clock64
difference of an 8- and a 4-instruction chain on one accumulator) dense and sparse, wgmma latency (one
instruction to wgmma.wait_group 0), whole-GPU wgmma TFLOP/s (N = 256, 4 CTAs per SM looping), TMA latency
per box size (issue to try_wait success, one CTA) and cuBLAS fp16 GEMM TFLOP/s at 4096^3 (torch, if
installed). benchmarks/gpu/hopper_micro.sh wraps it in one device call.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stcsim.harness.files import write_csv_atomic

KEEP_LOOP = 8  # wgmma per loop iteration of the throughput kernel


def _wgmma(n: int, sparse: bool) -> str:
    d = "{" + ",".join(f"%f{i}" for i in range(n // 2)) + "}"
    if sparse:
        return (f"wgmma.mma_async.sp.sync.aligned.m64n{n}k32.f32.f16.f16 {d}, %rd2, %rd3, %r3, 0, "
                "1, 1, 1, 0, 0;")
    return f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {d}, %rd2, %rd3, 1, 1, 1, 0, 0;"


def _fold(n: int) -> str:
    """Adds every accumulator into %f0 and stores it per thread (so that ptxas keeps every wgmma)."""
    adds = "\n".join(f"  add.f32 %f0, %f0, %f{i};" for i in range(1, n // 2))
    return f"""{adds}
  mul.wide.u32 %rd8, %r4, 4;
  add.s64 %rd9, %rd7, %rd8;
  st.global.f32 [%rd9+8], %f0;"""


def wgmma_chain_ptx(n: int, count: int, sparse: bool) -> str:
    """One warpgroup: `count` wgmma on one accumulator (descriptors of zeroed shared memory, K-major, no
    swizzle), commit, wait 0; thread 0 stores the %clock64 difference at out[0]."""
    body = "\n".join(f"  {_wgmma(n, sparse)}" for _ in range(count))
    zero = "\n".join(f"  mov.f32 %f{i}, 0f00000000;" for i in range(n // 2))
    return f"""
.version 8.7
.target sm_90a
.address_size 64
.visible .entry chain(.param .u64 out)
{{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<{n // 2}>;
  .reg .b64 %rd<10>;
  .shared .align 1024 .b8 smem[16384];
  mov.u32 %r1, smem;
  shr.u32 %r2, %r1, 4;
  cvt.u64.u32 %rd2, %r2;
  or.b64 %rd3, %rd2, 0x1000080000;
  or.b64 %rd2, %rd2, 0x1000080000;
  mov.u32 %r3, 0;
  mov.u32 %r4, %tid.x;
  ld.param.u64 %rd7, [out];
{zero}
  wgmma.fence.sync.aligned;
  mov.u64 %rd4, %clock64;
{body}
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  mov.u64 %rd5, %clock64;
  sub.s64 %rd6, %rd5, %rd4;
  setp.ne.u32 %p1, %r4, 0;
  @!%p1 st.global.u64 [%rd7], %rd6;
{_fold(n)}
  ret;
}}
"""


def wgmma_loop_ptx(n: int, sparse: bool) -> str:
    """Each CTA (one warpgroup) runs `iters` x KEEP_LOOP wgmma; for whole-GPU throughput."""
    body = "\n".join(f"  {_wgmma(n, sparse)}" for _ in range(KEEP_LOOP))
    zero = "\n".join(f"  mov.f32 %f{i}, 0f00000000;" for i in range(n // 2))
    return f"""
.version 8.7
.target sm_90a
.address_size 64
.visible .entry loop(.param .u64 out, .param .u32 iters)
{{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<{n // 2}>;
  .reg .b64 %rd<10>;
  .shared .align 1024 .b8 smem[16384];
  mov.u32 %r1, smem;
  shr.u32 %r2, %r1, 4;
  cvt.u64.u32 %rd2, %r2;
  or.b64 %rd3, %rd2, 0x1000080000;
  or.b64 %rd2, %rd2, 0x1000080000;
  mov.u32 %r3, 0;
  mov.u32 %r4, %tid.x;
  ld.param.u64 %rd7, [out];
  ld.param.u32 %r5, [iters];
{zero}
  wgmma.fence.sync.aligned;
$LOOP:
{body}
  wgmma.commit_group.sync.aligned;
  sub.u32 %r5, %r5, 1;
  setp.ne.u32 %p1, %r5, 0;
  @%p1 bra $LOOP;
  wgmma.wait_group.sync.aligned 0;
{_fold(n)}
  ret;
}}
"""


def tma_clock_ptx(nbytes: int) -> str:
    """Thread 0: %clock64 around one 2D TMA box load (issue to try_wait.parity success) into out[0], after
    a first load of the same box has brought it into L2 (the engine's L2 starts every launch cold; on silicon
    the warm-up launch left it there as well)."""

    def copy_and_wait(label: str, parity: int) -> str:
        return f"""  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], {nbytes};
  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
      [%r3], [%rd2, {{%r4, %r4}}], [%r2];
${label}:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], {parity};
  @!%p1 bra ${label};"""

    return f"""
.version 8.7
.target sm_90a
.address_size 64
.visible .entry tmaclk(.param .align 64 .b8 tmap[128], .param .u64 out)
{{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .shared .align 1024 .b8 buf[{nbytes}];
  .shared .align 8 .b64 bar;
  mov.u32 %r2, bar;
  mov.u32 %r3, buf;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
  fence.proxy.async.shared::cta;
  mov.b64 %rd1, tmap;
  cvta.param.u64 %rd2, %rd1;
  mov.u32 %r4, 0;
{copy_and_wait("WARM", 0)}
  mov.u64 %rd3, %clock64;
{copy_and_wait("WAIT", 1)}
  mov.u64 %rd4, %clock64;
  sub.s64 %rd5, %rd4, %rd3;
  ld.param.u64 %rd6, [out];
  ld.shared.u32 %r5, [%r3];
  st.global.u64 [%rd6], %rd5;
  st.global.u32 [%rd6+8], %r5;
  ret;
}}
"""


class _Gpu:
    """PTX modules on the GPU through CuPy."""

    def __init__(self) -> None:
        import cupy

        self.cp = cupy
        self._tmp = tempfile.TemporaryDirectory()
        self._n = 0

    def func(self, ptx: str, name: str) -> Any:
        self._n += 1
        path = Path(self._tmp.name, f"m{self._n}.ptx")
        path.write_text(ptx)
        return self.cp.RawModule(path=str(path)).get_function(name)

    def clock(self, ptx: str, name: str, args: tuple, threads: int = 128) -> int:
        out = self.cp.zeros(1024, self.cp.uint64)
        f = self.func(ptx, name)
        for _ in range(2):  # warm-up, then measured
            f((1,), (threads,), (*args, out) if args else (out,))
        self.cp.cuda.runtime.deviceSynchronize()
        return int(out[0].get())


def _wgmma_rows(gpu: _Gpu) -> list[tuple[str, int, float, str]]:
    rows = []
    for sparse in (False, True):
        tag = "wgmma_sp" if sparse else "wgmma"
        for n in (8, 16, 32, 64, 128, 256):
            c8 = gpu.clock(wgmma_chain_ptx(n, 8, sparse), "chain", ())
            c4 = gpu.clock(wgmma_chain_ptx(n, 4, sparse), "chain", ())
            rows.append((f"{tag}_interval", n, (c8 - c4) / 4, "cycles"))
            one = gpu.clock(wgmma_chain_ptx(n, 1, sparse), "chain", ())
            rows.append((f"{tag}_latency", n, float(one), "cycles"))
        cp = gpu.cp
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        f = gpu.func(wgmma_loop_ptx(256, sparse), "loop")
        out = cp.zeros(1024, cp.float32)
        iters = 4096
        grid = 4 * sms
        f((grid,), (128,), (out, np.uint32(iters)))
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        f((grid,), (128,), (out, np.uint32(iters)))
        end.record()
        end.synchronize()
        ms = cp.cuda.get_elapsed_time(start, end)
        flops = 2.0 * 64 * 256 * (32 if sparse else 16) * KEEP_LOOP * iters * grid
        rows.append((f"{tag}_tflops_dense_equivalent", 256, flops / ms / 1e9, "TFLOP/s"))
    return rows


def _tma_rows(gpu: _Gpu) -> list[tuple[str, int, float, str]]:
    from stcsim.sim.tensor_map import TensorMap

    cp = gpu.cp
    rows = []
    src = cp.asarray(np.random.default_rng(0).integers(1, 2**16, (256, 64), dtype=np.uint16))
    for h in (8, 16, 32, 64, 128, 256):
        nbytes = 64 * h * 2
        tmap = TensorMap("u16", src.data.ptr, (64, 256), (128,), (64, h), swizzle="128B")
        raw = np.frombuffer(tmap.driver_encode(), np.dtype((np.void, 128)))[0]
        cycles = gpu.clock(tma_clock_ptx(nbytes), "tmaclk", (raw,), 1)
        rows.append(("tma_latency", nbytes, float(cycles), "cycles"))
    return rows


def _cublas_rows() -> list[tuple[str, int, float, str]]:
    try:
        import torch
    except ImportError:
        return []
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        torch.matmul(a, b)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end) / 20
    return [("cublas_fp16_gemm_tflops", 4096, 2 * 4096**3 / ms / 1e9, "TFLOP/s")]


def main(argv: list[str] | None = None) -> int:
    """Runs every Hopper silicon microbenchmark; writes the CSV (errors of one group are reported, the
    others still run)."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("hopper_micro.csv"))
    args = parser.parse_args(argv)
    gpu = _Gpu()
    rows: list[tuple[str, int, float, str]] = []
    for group in (_wgmma_rows, _tma_rows):
        try:
            rows += group(gpu)
        except Exception as exc:  # noqa: BLE001  (report and go on: one device call measures everything)
            print(f"{group.__name__} failed: {type(exc).__name__}: {exc}")
    try:
        rows += _cublas_rows()
    except Exception as exc:  # noqa: BLE001
        print(f"cublas failed: {type(exc).__name__}: {exc}")
    # object columns and \r\n line ends: the bytes the csv module's writer gave the files already measured
    table = pd.DataFrame(rows, columns=["name", "n_or_bytes", "value", "unit"], dtype=object)
    write_csv_atomic(table, args.out, lineterminator="\r\n")
    for r in rows:
        print(*r, sep=",")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

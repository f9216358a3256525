"""TMA streaming bandwidth: many CTAs copying 2D boxes from global into shared memory as fast as the copy
engines and the memory system allow, the traffic pattern of a TMA-fed GEMM without its math. Thread 0 of
each CTA keeps ``stages`` box copies in flight (one mbarrier each: wait for a stage, refill it with the
next box), over a 2D u16 tensor of 64-element (128-byte) rows; CTA c copies boxes c * iters .. (c + 1) *
iters - 1 (or its own range of ``slice`` boxes over and over), each ``box_rows`` rows, wrapping around the
tensor. Bytes over time give the rate at which L2 (a tensor that fits it) or DRAM (one that does not) feeds
TMA, on silicon and on the engine; the capacity cases give L2's usable size (the strided ones with rows
16 KiB apart, as a GEMM operand's), the queue cases how one CTA's and one SM's copies overlap (copies in
flight x box size x CTAs per SM).

    python -m benchmarks.micro.tma_stream --out tma_stream.csv            # on an sm_90 GPU with CuPy
    python -m benchmarks.micro.tma_stream --simulate h100 --out sim.csv   # the same cases on the engine

Rows: case, CTAs, copies in flight, box bytes, tensor bytes, bytes copied, time (silicon: the median of
CUDA-event-timed launches after a warm-up, microseconds; engine: cycles, and its DRAM reads), and the rate.
benchmarks/gpu/tma_stream.sh also runs the silicon side under ``ncu --clock-control none`` (caches flushed
before each launch, as the engine starts cold) for cycles at the clock the card ran.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stcsim.harness.files import write_csv_atomic

STAGES = 4
BOX_ROWS = 64  # 64 x 64 u16 = 8 KiB per copy: four stages stay within 48 KiB of static shared memory
BOX_BYTES = 64 * BOX_ROWS * 2


@dataclass(frozen=True)
class Case:
    """One launch: `ctas` CTAs of `iters` box copies each over a tensor of `tensor_bytes`."""

    name: str
    ctas: int
    iters: int
    tensor_bytes: int
    slice: int = 0  # boxes of each CTA's own range, read over and over (0: iters, each read once)
    stages: int = STAGES  # copies in flight per CTA (a power of two)
    box_rows: int = BOX_ROWS  # rows of 128 bytes per copy
    pitch: int = 128  # bytes from one row of the tensor to the next (128: contiguous)
    cheap_index: bool = False  # the loop's box index by masks (power-of-two sizes), not two rem.u32

    def __post_init__(self) -> None:
        if self.cheap_index and (self.boxes & (self.boxes - 1) or self.rows & (self.rows - 1)):
            raise ValueError(f"{self.name}: a cheap index needs power-of-two boxes and rows")

    @property
    def box_bytes(self) -> int:
        """Bytes of one copy."""
        return 128 * self.box_rows

    def kernel_ptx(self) -> str:
        """The kernel this case launches (`ptx` of its stages, box and index)."""
        return ptx(self.stages, self.box_rows, self.cheap_index)

    @property
    def boxes(self) -> int:
        """Boxes of each CTA's range."""
        return self.slice or self.iters

    @property
    def rows(self) -> int:
        """Rows of 128 bytes in the tensor, `pitch` bytes apart."""
        return self.tensor_bytes // self.pitch


def cases(sms: int) -> list[Case]:
    """One CTA (the copy engine alone), then 1 and 4 CTAs per SM over an L2-resident tensor (16 MiB) and
    over one that lives in DRAM (1 GiB)."""
    mib = 1 << 20
    return [Case("one_cta_l2", 1, 256, 16 * mib), Case("sms_l2", sms, 256, 16 * mib),
            Case("4x_sms_l2", 4 * sms, 64, 16 * mib), Case("sms_dram", sms, 256, 1024 * mib),
            Case("4x_sms_dram", 4 * sms, 64, 1024 * mib)]


def capacity_cases(sms: int) -> list[Case]:
    """Each of `sms` CTAs reads its own range of `slice` boxes twice, all ranges together a footprint of
    about 16 to 66 MB: the second pass hits in L2 as far as the footprint fits (DRAM reads of one footprint,
    on silicon under ncu's cache flush, as the engine's cold start), or misses (up to two)."""
    return [Case(f"capacity_{n}", sms, 2 * n, sms * n * BOX_BYTES, n) for n in (16, 24, 32, 40, 48, 64)]


def strided_cases(sms: int) -> list[Case]:
    """The capacity cases with rows 16 KiB apart (a K = 8192 f16 operand's row pitch; 128 bytes of each row
    read), about 8.6 to 35 MB read in all: where a cache's set index takes the line address's low bits, such
    rows crowd into a few sets of each slice."""
    pitch = 16 * 1024
    return [Case(f"strided_capacity_{n}", sms, 2 * n, sms * n * BOX_BYTES * (pitch // 128), n, pitch=pitch)
            for n in (8, 16, 24, 32)]


def queue_cases(sms: int) -> list[Case]:
    """How a CTA's and an SM's copies overlap: 1, 2 or 4 copies in flight per CTA of 4, 8 or 16 KiB, one CTA
    alone and 1, 2 or 4 CTAs per SM, over a 4 MiB tensor read 16 times (about 64 MiB copied per launch: the
    first pass from DRAM, the rest from L2)."""
    out = []
    for per_sm in (0, 1, 2, 4):
        ctas = per_sm * sms or 1
        for stages in (1, 2, 4):
            for rows in (32, 64, 128):
                if stages * rows * 128 > 48 * 1024:  # static shared memory
                    continue
                iters = max(stages, (64 << 20) // (ctas * rows * 128)) if per_sm else 256
                out.append(Case(f"queue_{per_sm}x_s{stages}_b{rows * 128 // 1024}k", ctas, iters, 4 << 20,
                                stages=stages, box_rows=rows))
    return out


def issue_cases() -> list[Case]:
    """Whether one CTA's copies are limited by its issuing thread or by the copy engine: the one-CTA queue
    cases of 8 KiB with the loop's two ``rem.u32`` (a dependent chain of a few dozen SASS instructions on
    silicon) replaced by masks, and a launch of one copy (the launch overhead the event timing includes)."""
    out = [Case(f"issue_s{stages}_b8k_cheap", 1, 256, 4 << 20, stages=stages, box_rows=64, cheap_index=True)
           for stages in (1, 2, 4)]
    return [*out, Case("launch_one_copy", 1, 1, 4 << 20, stages=1, box_rows=64)]


def ptx(stages: int = STAGES, box_rows: int = BOX_ROWS, cheap_index: bool = False) -> str:
    """The kernel: tmastream(tensor map, iters, rows of the tensor, boxes of each CTA's range), keeping
    `stages` copies of `box_rows` rows of 128 bytes in flight (`cheap_index`: the loop wraps the box index
    with masks, for power-of-two sizes)."""
    box_bytes = 128 * box_rows
    init = "\n".join(f"  mbarrier.init.shared::cta.b64 [%r2+{8 * s}], 1;" for s in range(stages))
    prologue = "\n".join(f"""  rem.u32 %r16, {s}, %r9;
  add.u32 %r16, %r7, %r16;
  mul.lo.u32 %r16, %r16, {box_rows};
  rem.u32 %r16, %r16, %r5;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2+{8 * s}], {box_bytes};
  add.u32 %r14, %r3, {s * box_bytes};
  add.u32 %r13, %r2, {8 * s};
  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
      [%r14], [%rd2, {{%r8, %r16}}], [%r13];"""
                         for s in range(stages))
    log_s = stages.bit_length() - 1
    wrap_slice = "and.b32 %r16, %r15, %r17;" if cheap_index else "rem.u32 %r16, %r15, %r9;"
    wrap_rows = "and.b32 %r16, %r16, %r18;" if cheap_index else "rem.u32 %r16, %r16, %r5;"
    return f"""
.version 8.7
.target sm_90a
.address_size 64
.visible .entry tmastream(.param .align 64 .b8 tmap[128], .param .u32 iters, .param .u32 rows,
    .param .u32 slice)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<4>;
  .shared .align 1024 .b8 buf[{stages * box_bytes}];
  .shared .align 8 .b64 bar[{stages}];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $END;
  mov.u32 %r2, bar;
  mov.u32 %r3, buf;
{init}
  fence.mbarrier_init.release.cluster;
  fence.proxy.async.shared::cta;
  mov.b64 %rd1, tmap;
  cvta.param.u64 %rd2, %rd1;
  ld.param.u32 %r4, [iters];
  ld.param.u32 %r5, [rows];
  ld.param.u32 %r9, [slice];
  mov.u32 %r6, %ctaid.x;
  mul.lo.u32 %r7, %r6, %r9;
  mov.u32 %r8, 0;
  sub.u32 %r17, %r9, 1;
  sub.u32 %r18, %r5, 1;
{prologue}
  mov.u32 %r10, 0;
$LOOP:
  and.b32 %r11, %r10, {stages - 1};
  shr.u32 %r12, %r10, {log_s};
  and.b32 %r12, %r12, 1;
  mad.lo.u32 %r13, %r11, 8, %r2;
  mad.lo.u32 %r14, %r11, {box_bytes}, %r3;
$WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r13], %r12;
  @!%p2 bra $WAIT;
  add.u32 %r15, %r10, {stages};
  setp.lt.u32 %p3, %r15, %r4;
  @!%p3 bra $NEXT;
  {wrap_slice}
  add.u32 %r16, %r7, %r16;
  mul.lo.u32 %r16, %r16, {box_rows};
  {wrap_rows}
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r13], {box_bytes};
  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
      [%r14], [%rd2, {{%r8, %r16}}], [%r13];
$NEXT:
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p3, %r10, %r4;
  @%p3 bra $LOOP;
$END:
  ret;
}}
"""


def _row(case: Case, value: float, unit: str, rate: float, rate_unit: str) -> dict[str, object]:
    return {"case": case.name, "ctas": case.ctas, "stages": case.stages, "box_bytes": case.box_bytes,
            "tensor_bytes": case.tensor_bytes, "bytes": _bytes(case), "value": value, "unit": unit,
            "rate": rate, "rate_unit": rate_unit}


def _bytes(case: Case) -> int:
    return case.ctas * case.iters * case.box_bytes


def all_cases(sms: int) -> list[Case]:
    """Every case, in launch order."""
    return cases(sms) + capacity_cases(sms) + strided_cases(sms) + queue_cases(sms) + issue_cases()


def selected_cases(sms: int, prefixes: str = "") -> list[Case]:
    """The cases whose names start with one of the comma-separated `prefixes` (all for none)."""
    chosen = [p for p in prefixes.split(",") if p]
    found = [c for c in all_cases(sms) if not chosen or c.name.startswith(tuple(chosen))]
    if not found:
        raise ValueError(f"no case starts with {prefixes!r}")
    return found


def run_silicon(repeats: int = 5, prefixes: str = "") -> list[dict[str, object]]:
    """Every case on the GPU through CuPy: event-timed launches after a warm-up, the median."""
    import cupy as cp

    from stcsim.sim.tensor_map import TensorMap

    with tempfile.TemporaryDirectory() as tmp:
        funcs: dict[tuple[int, int, bool], Any] = {}

        def kernel(case: Case) -> Any:
            key = (case.stages, case.box_rows, case.cheap_index)
            if key not in funcs:
                path = Path(tmp, f"tma_stream_{key[0]}_{key[1]}_{int(key[2])}.ptx")
                path.write_text(case.kernel_ptx())
                funcs[key] = cp.RawModule(path=str(path)).get_function("tmastream")
            return funcs[key]

        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        rows = []
        for case in selected_cases(sms, prefixes):
            func = kernel(case)
            src = cp.random.randint(1, 2**15, case.tensor_bytes // 2, dtype=cp.uint16)  # never zeros
            box = (64, case.box_rows)
            tmap = TensorMap("u16", src.data.ptr, (64, case.rows), (case.pitch,), box, swizzle="128B")
            raw = np.frombuffer(tmap.driver_encode(), np.dtype((np.void, 128)))[0]
            args = (raw, np.uint32(case.iters), np.uint32(case.rows), np.uint32(case.boxes))
            func((case.ctas,), (32,), args)
            times = []
            for _ in range(repeats):
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                func((case.ctas,), (32,), args)
                end.record()
                end.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
            us = statistics.median(times)
            row = _row(case, us, "us", _bytes(case) / us / 1e6, "TB/s")
            rows.append(row)
            print(row, flush=True)
            del src
    return rows


def simulate_case(config: Any, case: Case) -> dict[str, Any]:
    """One case on a fresh engine of `config` (a spec or a resolved GpuConfig; cycles only): the launch's
    stats."""
    from stcsim.sim import Engine, TensorMap

    eng = Engine(config)
    eng.load_ptx(case.kernel_ptx())
    src = eng.malloc(case.tensor_bytes)
    tmap = TensorMap("u16", src, (64, case.rows), (case.pitch,), (64, case.box_rows), swizzle="128B")
    args = [tmap, np.uint32(case.iters), np.uint32(case.rows), np.uint32(case.boxes)]
    return eng.launch("tmastream", case.ctas, 32, args, values=False)


def run_engine(config: str, prefixes: str = "") -> list[dict[str, object]]:
    """Every case (or those `prefixes` select) on the engine (132 SMs for h100): cycles, bytes per cycle."""
    from stcsim.sim import Engine

    rows = []
    sms = int(Engine(config).gpu_config.get("gpu.num_sms"))
    for case in selected_cases(sms, prefixes):
        stats = simulate_case(config, case)
        cycles = float(stats["gpu_sim_cycle"])
        row = _row(case, cycles, "cycles", _bytes(case) / cycles, "B/cycle")
        row["dram_read_bytes"] = float(stats["dram_read_bytes"])
        rows.append(row)
        print(row, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """CLI: silicon (default) or --simulate CONFIG; writes --out."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--simulate", metavar="CONFIG", help="run the cases on the engine instead of the GPU")
    ap.add_argument("--repeats", type=int, default=5, help="timed launches per case (silicon)")
    ap.add_argument("--cases", default="", help="only the cases whose names start with one of these "
                                                "comma-separated prefixes")
    a = ap.parse_args(argv)
    try:
        selected_cases(1, a.cases)  # the names do not depend on the number of SMs
    except ValueError as err:
        ap.error(str(err))
    rows: list[dict[str, Any]] = (run_engine(a.simulate, a.cases) if a.simulate
                                  else run_silicon(a.repeats, a.cases))
    write_csv_atomic(pd.DataFrame(rows), a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Silicon probe of the L1 data cache's capacity against the kernel's shared-memory demand (issue 43).

The SM's 256 KB of unified SRAM is split per kernel between shared memory and the L1 data cache; CUDA's
driver picks the shared carve-out (0, 8, 16, 32, 64, 100, 132, 164, 196 or 228 KB on sm_90) for each kernel
("to avoid shared memory occupancy bottlenecks", CUDA Programming Guide, compute capability 7.x-9.0), and
GPGPU-Sim/Accel-Sim's adaptive cache gives the L1 what the smallest carve-out holding the kernel's shared
memory leaves. This probe measures what the H100 gives: one CTA (`threads` threads, `shared` bytes of
dynamic shared memory) reads a footprint of `footprint` bytes `PASSES` times (16 bytes a thread, a warp
512 contiguous bytes); the passes after the first hit the L1 only while the footprint fits it.

Thread 0 reads clock64 around passes 2..PASSES (`cycles`); under Nsight Compute the L1's tag hits and misses
of global loads give the hit rate (`run_l1_carveout.sh`). `simulate` runs the same PTX on the engine.

    python -m benchmarks.calibration.l1_carveout_probe run --out DIR        # GPU machine (CuPy)
    python -m benchmarks.calibration.l1_carveout_probe collect --plain DIR/l1_carveout.csv --ncu NCU.csv \
        --out FILE --meta "date: ..."                                       # one table of both
    python -m benchmarks.calibration.l1_carveout_probe simulate --out FILE [--config h100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

KB = 1024
PASSES = 8
FOOTPRINTS_KB = (16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240)
# (threads per CTA, dynamic shared bytes per CTA): one CTA of 1024 threads with a demand inside each
# carve-out (the 1 KB per CTA the system reserves included), then small CTAs whose shared memory at full
# occupancy (32 CTAs of 64 threads, 8 of 256) would need a larger carve-out than one CTA does.
SETUPS = ((1024, 0), (1024, 6 * KB), (1024, 12 * KB), (1024, 24 * KB), (1024, 60 * KB), (1024, 96 * KB),
          (1024, 160 * KB), (1024, 226 * KB), (64, 4 * KB), (256, 4 * KB))


def probe_ptx() -> str:
    """PTX of `l1_sweep(src, n16, passes, out, clk)`: every thread sums src's 16-byte words tid, tid + ntid,
    ... below n16, `passes` times; thread 0 stores the clock64 cycles of passes 2.. into clk[0]."""
    return """.version 8.0
.target sm_80
.address_size 64
.extern .shared .align 16 .b8 dyn[];
.visible .entry l1_sweep(.param .u64 src, .param .u32 n16, .param .u32 passes, .param .u64 out,
                         .param .u64 clk)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .f32 %f<12>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [src];
  ld.param.u32 %r1, [n16];
  ld.param.u32 %r2, [passes];
  ld.param.u64 %rd2, [out];
  ld.param.u64 %rd3, [clk];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %ntid.x;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r5, 0;
  mov.u64 %rd4, 0;
PASS:
  setp.ne.u32 %p1, %r5, 1;
  @%p1 bra BODY;
  bar.sync 0;
  mov.u64 %rd4, %clock64;
BODY:
  mov.u32 %r6, %r3;
  setp.ge.u32 %p2, %r6, %r1;
  @%p2 bra NEXT;
READ:
  mul.wide.u32 %rd5, %r6, 16;
  add.u64 %rd6, %rd1, %rd5;
  ld.global.v4.f32 {%f2, %f3, %f4, %f5}, [%rd6];
  add.f32 %f1, %f1, %f2;
  add.u32 %r6, %r6, %r4;
  setp.lt.u32 %p2, %r6, %r1;
  @%p2 bra READ;
NEXT:
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p3, %r5, %r2;
  @%p3 bra PASS;
  bar.sync 0;
  mov.u64 %rd7, %clock64;
  sub.u64 %rd8, %rd7, %rd4;
  mul.wide.u32 %rd9, %r3, 4;
  add.u64 %rd10, %rd2, %rd9;
  st.global.f32 [%rd10], %f1;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra DONE;
  st.global.u64 [%rd3], %rd8;
DONE:
  ret;
}
"""


def cases() -> list[tuple[int, int, int]]:
    """Every (threads, shared bytes, footprint bytes) the probe launches, in launch order."""
    return [(t, s, f * KB) for t, s in SETUPS for f in FOOTPRINTS_KB]


def _launch_all(launch: Callable[[int, int, int], int]) -> list[dict[str, Any]]:
    """Every case through `launch(threads, shared, footprint)` (its timed cycles): one row each."""
    rows = []
    for threads, shared, footprint in cases():
        cycles = launch(threads, shared, footprint)
        sectors = (PASSES - 1) * footprint // 32
        rows.append({"threads": threads, "shared_bytes": shared, "footprint_bytes": footprint,
                     "passes": PASSES, "cycles": cycles, "cycles_per_sector": cycles / sectors})
        print(f"{threads} threads, {shared // KB} KB shared, {footprint // KB} KB: {cycles} cycles",
              file=sys.stderr)
    return rows


def run(out: Path) -> None:
    """Every case on the GPU (one launch each, in `cases` order: ncu's launch IDs) -> out/l1_carveout.csv."""
    import cupy as cp

    most = max(f for _, _, f in cases())
    src = cp.random.default_rng(0).random(most // 4, dtype=cp.float32)
    out_buf = cp.zeros(1024, cp.float32)
    clk = cp.zeros(1, cp.int64)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "l1_sweep.ptx")
        path.write_text(probe_ptx())
        fn = cp.RawModule(path=str(path)).get_function("l1_sweep")
    fn.max_dynamic_shared_size_bytes = max(s for _, s in SETUPS)

    def launch(threads: int, shared: int, footprint: int) -> int:
        fn((1,), (threads,), (src, np.uint32(footprint // 16), np.uint32(PASSES), out_buf, clk),
           shared_mem=shared)
        cp.cuda.runtime.deviceSynchronize()
        return int(clk.get()[0])

    rows = _launch_all(launch)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "l1_carveout.csv", index=False)


def collect(plain_csv: Path, ncu_csv: Path) -> pd.DataFrame:
    """The plain run's cycles beside ncu's L1 hit rate and the carve-out the driver chose, per case (ncu's
    launches of `l1_sweep` in `cases` order; CuPy's own kernels left out)."""
    from stcsim.experiments.calibrate import read_ncu_csv

    plain = pd.read_csv(plain_csv)
    ncu = read_ncu_csv(ncu_csv.read_text())
    ncu = ncu[ncu["kernel_name"] == "l1_sweep"].reset_index(drop=True)
    if len(ncu) != len(plain):
        raise ValueError(f"{ncu_csv}: {len(ncu)} l1_sweep launches, {plain_csv}: {len(plain)} cases")
    hit = ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"]
    miss = ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum"]
    plain["carveout_bytes"] = ncu["launch__shared_mem_config_size"].astype(int)
    plain["l1_bytes"] = 256 * KB - plain["carveout_bytes"]
    plain["l1_hit_rate"] = (hit / (hit + miss)).round(4)
    return plain


def simulate(config: str = "h100") -> pd.DataFrame:
    """The same launches on the engine, with its L1 hits and misses."""
    from stcsim.sim import Engine

    eng = Engine(config)
    eng.load_ptx(probe_ptx())
    most = max(f for _, _, f in cases())
    src = eng.malloc(most)
    eng.copy_to(src, np.random.default_rng(0).random(most // 4, dtype=np.float32))
    out_buf, clk = eng.malloc(4 * 1024), eng.malloc(8)
    hits: list[tuple[float, float]] = []

    def launch(threads: int, shared: int, footprint: int) -> int:
        stats = eng.launch("l1_sweep", 1, threads, [src, footprint // 16, PASSES, out_buf, clk],
                           shared_bytes=shared)
        hits.append((stats.get("l1d_hits", 0.0), stats.get("l1d_misses", 0.0)))
        return int(eng.copy_from(clk, 1, np.int64)[0])

    frame = pd.DataFrame(_launch_all(launch))
    frame["l1_hits"] = [h for h, _ in hits]
    frame["l1_misses"] = [m for _, m in hits]
    return frame


def main(argv: list[str] | None = None) -> int:
    """CLI: run (GPU) | simulate."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("collect")
    c.add_argument("--plain", type=Path, required=True)
    c.add_argument("--ncu", type=Path, required=True)
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--meta", action="append", default=[], help="a '# ' header line (repeatable)")
    s = sub.add_parser("simulate")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--config", default="h100")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        run(a.out)
    elif a.cmd == "collect":
        frame = collect(a.plain, a.ncu)
        with open(a.out, "w") as f:
            f.writelines(f"# {m}\n" for m in a.meta)
            frame.to_csv(f, index=False)
    else:
        frame = simulate(a.config)
        frame.to_csv(a.out, index=False)
        print(frame.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

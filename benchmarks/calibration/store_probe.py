"""Silicon probe of global-store throughput by access shape (issue 11: the GEMM epilogues).

Each warp stores `iters` times to its own L2-resident rows (4 row blocks, revisited), in one of four shapes:
  coalesced   32 lanes x 4 B contiguous: 4 full 32-B sectors per warp instruction
  mma_c       the mma accumulator layout, one element per lane (lane / 4 = row, 8 B apart in a row): 8
              sectors, each half written (16 of 32 B)
  mma_c_v2    the same rows, both elements of the pair (st.v2): 8 full sectors
  scattered   one 32-B sector per lane: 32 sectors, 4 B each
Thread 0 of each warp reads clock64 around the loop; the table gives, per CTA (median over CTAs), its
slowest warp's cycles per store instruction and the sectors per cycle its SM wrote, for 1 CTA (one SM) and
one CTA per SM, of 4, 8 and 16 warps.

    python -m benchmarks.calibration.store_probe run --out DIR             # GPU machine (CuPy)
    python -m benchmarks.calibration.store_probe simulate --silicon DIR/stores.csv --out FILE
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

MODES = ("coalesced", "mma_c", "mma_c_v2", "scattered")
SECTORS = {"coalesced": 4, "mma_c": 8, "mma_c_v2": 8, "scattered": 32}
PITCH = 1024  # bytes per row (a 256-column f32 matrix)
ITERS = 256  # stores per warp
UNROLL = 8  # stores per loop iteration
GEOMETRIES = ((1, 128), (1, 256), (1, 512), (132, 128), (132, 256), (132, 512))


def store_ptx() -> str:
    """PTX of one kernel per mode, `st_<mode>(buf, clk, iters, mode)` (mode numbered as MODES)."""
    return ".version 8.0\n.target sm_70\n.address_size 64\n" + "".join(_kernel(m) for m in MODES)


def _kernel(mode: str) -> str:
    """UNROLL stores per loop iteration, to 4 row blocks x 2 column halves of the warp's rows."""
    offsets = [(k % 4) * 8 * PITCH + (k // 4) * (PITCH // 2) for k in range(UNROLL)]
    v2 = mode == "mma_c_v2"
    op = "st.global.v2.f32 [%rd4+{}], {{%f1, %f2}};" if v2 else "st.global.f32 [%rd4+{}], %f1;"
    stores = "\n".join("  " + op.format(o) for o in offsets)
    return f"""
.visible .entry st_{mode}(.param .u64 buf, .param .u64 clk, .param .u32 iters, .param .u32 mode)
{{
  .reg .pred %p<6>;
  .reg .b32 %r<20>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [buf];
  ld.param.u64 %rd2, [clk];
  ld.param.u32 %r1, [iters];
  ld.param.u32 %r2, [mode];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r3, %tid.x;
  and.b32 %r4, %r3, 31;
  shr.u32 %r5, %r3, 5;
  mov.u32 %r6, %ctaid.x;
  mov.u32 %r7, %ntid.x;
  shr.u32 %r7, %r7, 5;
  mad.lo.u32 %r8, %r6, %r7, %r5;
  cvt.rn.f32.u32 %f1, %r3;
  add.f32 %f2, %f1, 0f3F800000;
  // each warp: its own 32 rows of {PITCH} B
  mul.wide.u32 %rd3, %r8, {32 * PITCH};
  add.u64 %rd4, %rd1, %rd3;
  // lane offset by mode
  shl.b32 %r9, %r4, 2;
  shr.u32 %r10, %r4, 2;
  and.b32 %r11, %r4, 3;
  mul.lo.u32 %r12, %r10, {PITCH};
  shl.b32 %r13, %r11, 3;
  add.u32 %r14, %r12, %r13;
  shl.b32 %r15, %r4, 5;
  setp.eq.u32 %p1, %r2, 0;
  setp.eq.u32 %p2, %r2, 3;
  selp.b32 %r16, %r15, %r14, %p2;
  selp.b32 %r16, %r9, %r16, %p1;
  cvt.u64.u32 %rd5, %r16;
  add.u64 %rd4, %rd4, %rd5;
  setp.eq.u32 %p3, %r2, 2;
  setp.eq.u32 %p4, %r4, 0;
  mov.u32 %r17, 0;
  bar.sync 0;
  mov.u64 %rd6, %clock64;
LOOP:
{stores}
  add.u32 %r17, %r17, {UNROLL};
  setp.lt.u32 %p5, %r17, %r1;
  @%p5 bra LOOP;
  mov.u64 %rd9, %clock64;
  sub.u64 %rd10, %rd9, %rd6;
  mul.wide.u32 %rd11, %r8, 8;
  add.u64 %rd12, %rd2, %rd11;
  @%p4 st.global.u64 [%rd12], %rd10;
  ret;
}}
"""


def _launch_all(launch: Callable[[int, int, int], np.ndarray]) -> list[dict[str, Any]]:
    """Every mode x geometry through `launch(ctas, threads, mode)` (per-warp loop cycles): one row each."""
    rows = []
    for mode_id, mode in enumerate(MODES):
        for ctas, threads in GEOMETRIES:
            warps = threads // 32
            cycles = launch(ctas, threads, mode_id).reshape(ctas, warps)
            # the CTA's stores all done: its slowest warp (schedulers need not share the path evenly)
            per_store = float(np.median(cycles.max(axis=1))) / ITERS
            rows.append({"mode": mode, "ctas": ctas, "warps_per_cta": warps, "sectors": SECTORS[mode],
                         "cycles_per_store": per_store,
                         "median_warp_cycles_per_store": float(np.median(cycles)) / ITERS,
                         "sectors_per_cycle_per_sm": warps * SECTORS[mode] / per_store})
            print(f"{mode} {ctas}x{threads}: {per_store:.1f} cycles/store", file=sys.stderr)
    return rows


def run(out: Path) -> None:
    """Every mode x geometry on the GPU (a warm-up launch, then the measured one) -> out/stores.csv."""
    import cupy as cp

    max_warps = max(c * t // 32 for c, t in GEOMETRIES)
    buf = cp.zeros(max_warps * 32 * PITCH // 4, cp.float32)
    clk = cp.zeros(max_warps, cp.int64)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "st.ptx")
        path.write_text(store_ptx())
        mod = cp.RawModule(path=str(path))

        def launch(ctas: int, threads: int, mode: int) -> np.ndarray:
            fn = mod.get_function(f"st_{MODES[mode]}")
            for _ in range(2):
                fn((ctas,), (threads,), (buf, clk, np.uint32(ITERS), np.uint32(mode)))
            cp.cuda.runtime.deviceSynchronize()
            return cp.asnumpy(clk[: ctas * threads // 32])

        rows = _launch_all(launch)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "stores.csv", index=False)


def simulate(config: str = "h100") -> pd.DataFrame:
    """The same launches on the engine."""
    from stcsim.sim import Engine

    eng = Engine(config)
    eng.load_ptx(store_ptx())
    max_warps = max(c * t // 32 for c, t in GEOMETRIES)
    buf = eng.malloc(max_warps * 32 * PITCH)
    clk = eng.malloc(8 * max_warps)

    def launch(ctas: int, threads: int, mode: int) -> np.ndarray:
        eng.launch(f"st_{MODES[mode]}", ctas, threads, [buf, clk, ITERS, mode])
        return eng.copy_from(clk, ctas * threads // 32, np.int64)

    return pd.DataFrame(_launch_all(launch))


def main(argv: list[str] | None = None) -> int:
    """CLI: run (GPU) | simulate."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("simulate")
    s.add_argument("--silicon", type=Path, required=True)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--config", default="h100")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        run(a.out)
    else:
        silicon = pd.read_csv(a.silicon, comment="#")
        sim = simulate(a.config)
        keys = ["mode", "ctas", "warps_per_cta", "sectors"]
        sim = sim.drop(columns=["median_warp_cycles_per_store"])
        both = silicon.merge(sim, on=keys, suffixes=("_silicon", "_sim"))
        both.to_csv(a.out, index=False)
        print(both.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

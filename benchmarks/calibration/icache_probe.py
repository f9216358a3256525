"""Silicon probe of instruction fetch (issue 11: the cold start of kernels with large code).

Kernels of straight-line code: `n` fma.rn.f32 in 8 independent chains (one warp issues them at about one per
cycle once fetched; ptxas turns each into one 16-byte FFMA), run `reps` times by a loop. Thread 0 of each CTA
writes clock64 at the start and after every pass, so pass 1 shows the cold fetch of the code and later
passes the warm one (or the capacity misses of code larger than the instruction caches). Under ncu
(`--cache-control all`, as the calibration suite is measured) each launch also gets gpc__cycles_elapsed.max.

    ncu --clock-control none --metrics gpc__cycles_elapsed.max --csv --log-file ncu.csv \\
        python -m benchmarks.calibration.icache_probe run --out DIR          # GPU machine, CuPy
    python -m benchmarks.calibration.icache_probe collect --dir DIR --ncu ncu.csv
    python -m benchmarks.calibration.icache_probe simulate --out results/calibration/h100_icache_probe_sim.csv
    python -m benchmarks.calibration.icache_probe ptx --n 1024               # the PTX of one kernel

`run` writes DIR/clocks.csv (one row per launch and CTA: pass cycles) and DIR/order.csv (the launch order);
`collect` joins ncu's cycles per launch into DIR/icache.csv; `simulate` runs the rows of the committed silicon
table (results/reference/h100_icache_probe.csv) on the engine's h100 config (geometries of at most
SIM_MAX_WARP_INSTS warp instructions) and writes sim vs silicon per row.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np
import pandas as pd

CHAINS = 8
SIZES = (64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536)  # fma per pass (SASS FFMA, 16 B each)
GEOMETRIES = ((1, 32), (1, 128), (132, 32), (132, 128), (264, 256))  # (CTAs, threads per CTA)
REPS = 4
REFERENCE = Path(__file__).resolve().parents[2] / "results" / "reference" / "h100_icache_probe.csv"
SIM_MAX_WARP_INSTS = 5_000_000


def straight_ptx(n: int) -> str:
    """PTX of `icache_<n>`: a loop of `reps` passes over `n` fma in CHAINS independent chains, clock64 of
    thread 0 stored (per CTA) at the start and after each pass to clk[cta * (reps + 1) + i]."""
    chains = "\n".join(
        f"  fma.rn.f32 %f{i % CHAINS + 1}, %f{i % CHAINS + 1}, %f9, %f10;" for i in range(n))
    inits = "\n".join(f"  add.f32 %f{c + 1}, %f0, 0f{np.float32(c).view(np.uint32):08X};"
                      for c in range(CHAINS))
    sums = "\n".join(f"  add.f32 %f0, %f0, %f{c + 1};" for c in range(CHAINS))
    return f""".version 8.0
.target sm_70
.address_size 64

.visible .entry icache_{n}(.param .u64 out, .param .u64 clk, .param .u32 reps, .param .f32 a, .param .f32 b)
{{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .f32 %f<12>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [clk];
  ld.param.u32 %r1, [reps];
  ld.param.f32 %f9, [a];
  ld.param.f32 %f10, [b];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r7, %ntid.x;
  cvt.rn.f32.u32 %f0, %r2;
{inits}
  setp.eq.u32 %p1, %r2, 0;
  add.u32 %r4, %r1, 1;
  mul.lo.u32 %r4, %r4, %r3;
  mul.wide.u32 %rd3, %r4, 8;
  add.u64 %rd4, %rd2, %rd3;
  mov.u64 %rd5, %clock64;
  @%p1 st.global.u64 [%rd4], %rd5;
  mov.u32 %r5, 0;
LOOP:
{chains}
  mov.u64 %rd6, %clock64;
  add.u64 %rd4, %rd4, 8;
  @%p1 st.global.u64 [%rd4], %rd6;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p2, %r5, %r1;
  @%p2 bra LOOP;
  mov.f32 %f0, 0f00000000;
{sums}
  mad.lo.u32 %r6, %r3, %r7, %r2;
  mul.wide.u32 %rd7, %r6, 4;
  add.u64 %rd8, %rd1, %rd7;
  st.global.f32 [%rd8], %f0;
  ret;
}}
"""


def run(out: Path) -> None:
    """Every size x geometry twice (a warm-up and a measured launch, as the calibration suite), clocks of
    the measured launch to out/clocks.csv, launch order to out/order.csv. Needs CuPy (not the engine)."""
    import tempfile

    import cupy as cp

    out.mkdir(parents=True, exist_ok=True)
    o = cp.zeros(max(g * b for g, b in GEOMETRIES), cp.float32)
    clk = cp.zeros(max(g for g, _ in GEOMETRIES) * (REPS + 1), cp.int64)
    rows, order, launch = [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for n in SIZES:
            path = Path(tmp, f"icache_{n}.ptx")
            path.write_text(straight_ptx(n))
            fn = cp.RawModule(path=str(path)).get_function(f"icache_{n}")
            for ctas, threads in GEOMETRIES:
                for _ in range(2):
                    fn((ctas,), (threads,), (o, clk, np.uint32(REPS), np.float32(0.999), np.float32(0.5)))
                cp.cuda.runtime.deviceSynchronize()
                order += [(launch, n, ctas, threads, "warmup"), (launch + 1, n, ctas, threads, "measured")]
                launch += 2
                c = cp.asnumpy(clk[: ctas * (REPS + 1)]).reshape(ctas, REPS + 1)
                if not np.isfinite(cp.asnumpy(o[: ctas * threads])).all():
                    raise RuntimeError(f"icache_{n}: non-finite output")
                for cta in range(ctas):
                    d = np.diff(c[cta])
                    rows.append({"n": n, "ctas": ctas, "threads": threads, "cta": cta,
                                 **{f"pass{i + 1}": int(d[i]) for i in range(REPS)}})
            print(f"n={n} done", file=sys.stderr)
    pd.DataFrame(rows).to_csv(out / "clocks.csv", index=False)
    with open(out / "order.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["launch", "n", "ctas", "threads", "role"])
        w.writerows(order)


def collect(out: Path, ncu_csv: Path, meta: dict[str, str]) -> pd.DataFrame:
    """Per measured launch: ncu cycles and the clock64 passes (median and max over CTAs), after the `meta`
    columns (date, gpu, driver, clock, protocol) -> out/icache.csv."""
    from stcsim.experiments.calibrate import read_ncu_csv

    ncu = read_ncu_csv(ncu_csv.read_text()).reset_index(drop=True)
    order = pd.read_csv(out / "order.csv")
    order["ncu_cycles"] = ncu["gpc__cycles_elapsed.max"].to_numpy()[: len(order)]
    meas = order[order["role"] == "measured"].drop(columns=["role", "launch"])
    clocks = pd.read_csv(out / "clocks.csv")
    passes = [c for c in clocks.columns if c.startswith("pass")]
    agg = clocks.groupby(["n", "ctas", "threads"])[passes].agg(["median", "max"])
    agg.columns = [f"{p}_{s}" for p, s in agg.columns]
    table = meas.merge(agg.reset_index(), on=["n", "ctas", "threads"])
    for i, (key, value) in enumerate(meta.items()):
        table.insert(i, key, value)
    table.to_csv(out / "icache.csv", index=False)
    return table


def simulate(reference: Path = REFERENCE, config: str = "h100") -> pd.DataFrame:
    """Each silicon row (n, ctas, threads) on the engine: ncu-comparable gpu_sim_cycle and thread 0's pass
    cycles of CTA 0 (the silicon columns are medians over CTAs), with the relative error of each."""
    from stcsim.sim import Engine

    silicon = pd.read_csv(reference)
    rows = []
    for n, group in silicon.groupby("n"):
        eng = Engine(config)
        eng.load_ptx(straight_ptx(int(n)))
        o = eng.malloc(4 * int((group["ctas"] * group["threads"]).max()))
        clk = eng.malloc(8 * int(group["ctas"].max()) * (REPS + 1))
        for r in group.itertuples():
            if n * REPS * r.ctas * (r.threads // 32) > SIM_MAX_WARP_INSTS:
                continue
            stats = eng.launch(f"icache_{n}", (r.ctas, 1, 1), (r.threads, 1, 1),
                               [o, clk, REPS, np.float32(0.999), np.float32(0.5)])
            d = np.diff(eng.copy_from(clk, (REPS + 1,), np.int64))
            row = {"n": n, "ctas": r.ctas, "threads": r.threads,
                   "measured_cycles": r.ncu_cycles, "sim_cycles": stats["gpu_sim_cycle"]}
            for i in range(REPS):
                row[f"measured_pass{i + 1}"] = getattr(r, f"pass{i + 1}_median")
                row[f"sim_pass{i + 1}"] = int(d[i])
            rows.append(row)
            print(f"n={n} {r.ctas}x{r.threads}: {stats['gpu_sim_cycle']:.0f} cycles", file=sys.stderr)
    out = pd.DataFrame(rows)
    out["rel_error"] = out["sim_cycles"] / out["measured_cycles"] - 1
    out["rel_error_pass1"] = out["sim_pass1"] / out["measured_pass1"] - 1
    out["rel_error_pass2"] = out["sim_pass2"] / out["measured_pass2"] - 1
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: run | collect | simulate | ptx."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("collect")
    c.add_argument("--dir", type=Path, required=True)
    c.add_argument("--ncu", type=Path, required=True)
    c.add_argument("--meta", action="append", default=[], help="key=value column, e.g. gpu=H100 (repeat)")
    s = sub.add_parser("simulate")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--config", default="h100")
    p = sub.add_parser("ptx")
    p.add_argument("--n", type=int, required=True)
    a = ap.parse_args(argv)
    if a.cmd == "run":
        run(a.out)
    elif a.cmd == "collect":
        meta = dict(m.split("=", 1) for m in a.meta)
        print(collect(a.dir, a.ncu, meta).to_string(index=False))
    elif a.cmd == "simulate":
        table = simulate(config=a.config)
        table.to_csv(a.out, index=False)
        cols = ["n", "ctas", "threads", "rel_error", "rel_error_pass1", "rel_error_pass2"]
        print(table[cols].to_string(index=False, float_format=lambda v: f"{v:+.3f}"))
    else:
        print(straight_ptx(a.n), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

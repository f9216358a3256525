"""The silicon atomics probes (benchmarks/calibration/probes.cu), simulated: sim vs silicon per row.

Compiles probes.cu to PTX (nvcc -ptx, sm_90; no GPU needed), runs ``atom_red_u32`` (global) and the
shared-memory ``atom_shared_u64`` / ``atom_shared_f32`` (compare-and-swap loops in SASS) on the engine over
bins x warp pattern, and compares their throughput with the H100's (results/reference/h100_probe_atomics*.csv,
the mean of the runs). Three global rows set the h100 atomic keys (one word: l2.atomic_update_cycles; 1M
random words: l2.atomic_rounds_per_cycle; 1M words a line per warp: l2.atomic_words_per_cycle); every other
row checks the model (the shared rows have no key of their own: the loop's round trip comes from the smem,
int and branch latencies).
The throughput of a simulated launch is taken from two launches (2 and 6 iterations per thread; the shared
probes 1 and 3), so the
launch's fixed costs cancel.

    python -m benchmarks.calibration.simulate_probes --out results/calibration/h100_probe_atomics_sim.csv
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.calibration.silicon_probes import BLOCK, GRID, MODES, PROBES

REFERENCE = Path(__file__).resolve().parents[2] / "results" / "reference"
CLOCK_GHZ = 1.98  # the H100's SM clock while the probes ran (the CSVs' sm_clock_mhz)
BINS = (1, 2, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 1 << 20)
SHARED_BINS = (1, 16, 256, 4096)
KERNELS = ("atom_red_u32", "atom_shared_u64", "atom_shared_f32")


def probes_ptx() -> str:
    """probes.cu compiled to PTX for sm_90."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "probes.ptx"
        subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-ptx", str(PROBES), "-o", str(out)], check=True)
        return out.read_text()


def silicon_rates() -> pd.DataFrame:
    """Mean atomics per ns of each probe kernel over the silicon runs, by bench, bins and pattern."""
    runs = [pd.read_csv(p, comment="#") for p in sorted(REFERENCE.glob("h100_probe_atomics*.csv"))]
    return pd.concat(runs).groupby(["bench", "bins", "pattern"], as_index=False).atomics_per_ns.mean()


def simulated_rate(ptx: str, config: str, kernel: str, bins: int, mode: int) -> float:
    """Simulated atomics per ns (at CLOCK_GHZ) of `kernel` on `bins` words in warp pattern `mode`."""
    from stcsim.sim import Engine

    eng = Engine(config)
    eng.load_ptx(ptx)
    shared = kernel.startswith("atom_shared")
    dtype = {"atom_red_u32": np.uint32, "atom_shared_u64": np.uint64, "atom_shared_f32": np.float32}[kernel]
    words = 1 if shared else max(bins, 32)
    buf = eng.malloc(words * 8)
    eng.copy_to(buf, np.zeros(words, dtype))
    sink = eng.malloc(64)
    iters = (1, 3) if shared else (2, 6)
    cycles = []
    for it in iters:
        args = [buf, bins - 1, it, mode] if shared else [buf, sink, bins - 1, it, mode]
        cycles.append(float(eng.launch(kernel, GRID, BLOCK, args)["gpu_sim_cycle"]))
    if not shared:
        updated = int(eng.copy_from(buf, words, dtype).sum())
        if updated != GRID * BLOCK * sum(iters):
            raise AssertionError(f"{bins} bins, {MODES[mode]}: {updated} updates landed")
    return GRID * BLOCK * (iters[1] - iters[0]) / (cycles[1] - cycles[0]) * CLOCK_GHZ


def compare(config: str, bins: tuple[int, ...], kernels: tuple[str, ...] = KERNELS) -> pd.DataFrame:
    """Sim vs silicon throughput for each kernel x bins x pattern; time_ratio = silicon rate / sim rate."""
    ptx, silicon, rows = probes_ptx(), silicon_rates(), []
    for kernel in kernels:
        for b in bins if kernel == "atom_red_u32" else [x for x in bins if x in SHARED_BINS]:
            for mode, pattern in MODES.items():
                if pattern == "streamed" or (pattern == "line_per_warp" and b < 64):
                    continue
                sim = simulated_rate(ptx, config, kernel, b, mode)
                meas = silicon[(silicon.bench == kernel) & (silicon.bins == b) & (silicon.pattern == pattern)]
                sil = float(meas.atomics_per_ns.iloc[0]) if len(meas) else float("nan")
                rows.append({"bench": kernel, "bins": b, "pattern": pattern, "sim_per_ns": sim,
                             "silicon_per_ns": sil, "time_ratio": sil / sim})
                print(f"{kernel:16s} {b:8d} {pattern:14s} sim {sim:8.2f}/ns  silicon {sil:8.2f}/ns  "
                      f"sim/silicon time {sil / sim:5.2f}", flush=True)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """Simulates the atomics probes and writes the comparison CSV."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="h100")
    ap.add_argument("--bins", default=",".join(map(str, BINS)), help="comma-separated bin counts")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="comma-separated probe kernels")
    ap.add_argument("--out", help="CSV to write (atomically)")
    a = ap.parse_args(argv)
    df = compare(a.config, tuple(int(b) for b in a.bins.split(",")), tuple(a.kernels.split(",")))
    for kernel, rows in df.groupby("bench"):
        ratio = rows.time_ratio
        print(f"{kernel}: sim/silicon time median {ratio.median():.2f}, range {ratio.min():.2f}-"
              f"{ratio.max():.2f} over {len(rows)} rows")
    if a.out:
        out = Path(a.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        df.to_csv(tmp, index=False, float_format="%.4g")
        tmp.replace(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

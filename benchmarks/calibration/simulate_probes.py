"""The silicon atomics probes (benchmarks/calibration/probes.cu), simulated: sim vs silicon per row.

Compiles probes.cu to PTX (nvcc -ptx, sm_90; no GPU needed), runs ``atom_red_u32`` on the engine over bins x
warp pattern, and compares its throughput with the H100's (results/reference/h100_probe_atomics*.csv, the
mean of the runs). Three rows set the h100 atomic keys (one word: l2.atomic_update_cycles; 1M random words:
l2.atomic_rounds_per_cycle; 1M words a line per warp: l2.atomic_words_per_cycle); every other row checks them.
The throughput of a simulated launch is taken from two launches (2 and 6 iterations per thread), so the
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


def probes_ptx() -> str:
    """probes.cu compiled to PTX for sm_90."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "probes.ptx"
        subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-ptx", str(PROBES), "-o", str(out)], check=True)
        return out.read_text()


def silicon_rates() -> pd.DataFrame:
    """Mean atomics per ns of atom_red_u32 over the silicon runs, by bins and pattern."""
    runs = [pd.read_csv(p, comment="#") for p in sorted(REFERENCE.glob("h100_probe_atomics*.csv"))]
    df = pd.concat(runs)
    df = df[df.bench == "atom_red_u32"]
    return df.groupby(["bins", "pattern"], as_index=False).atomics_per_ns.mean()


def simulated_rate(ptx: str, config: str, bins: int, mode: int) -> float:
    """Simulated atomics per ns (at CLOCK_GHZ) of atom_red_u32 on `bins` words in warp pattern `mode`."""
    from stcsim.sim import Engine

    eng = Engine(config)
    eng.load_ptx(ptx)
    words = max(bins, 32)
    buf = eng.malloc(words * 4)
    eng.copy_to(buf, np.zeros(words, np.uint32))
    sink = eng.malloc(64)
    cycles = [float(eng.launch("atom_red_u32", GRID, BLOCK, [buf, sink, bins - 1, it, mode])["gpu_sim_cycle"])
              for it in (2, 6)]
    updated = int(eng.copy_from(buf, words, np.uint32).sum())
    lanes = GRID * BLOCK * 4
    if updated != GRID * BLOCK * 8:
        raise AssertionError(f"{bins} bins, {MODES[mode]}: {updated} updates landed, not {GRID * BLOCK * 8}")
    return lanes / (cycles[1] - cycles[0]) * CLOCK_GHZ


def compare(config: str, bins: tuple[int, ...]) -> pd.DataFrame:
    """Sim vs silicon throughput for each bins x pattern; sim_time/silicon_time = silicon rate / sim rate."""
    ptx, silicon, rows = probes_ptx(), silicon_rates(), []
    for b in bins:
        for mode, pattern in MODES.items():
            if pattern == "streamed" or (pattern == "line_per_warp" and b < 64):
                continue
            sim = simulated_rate(ptx, config, b, mode)
            meas = silicon[(silicon.bins == b) & (silicon.pattern == pattern)].atomics_per_ns
            sil = float(meas.iloc[0]) if len(meas) else float("nan")
            rows.append({"bins": b, "pattern": pattern, "sim_per_ns": sim, "silicon_per_ns": sil,
                         "time_ratio": sil / sim})
            print(f"{b:8d} {pattern:14s} sim {sim:8.2f}/ns  silicon {sil:8.2f}/ns  sim/silicon time "
                  f"{sil / sim:5.2f}", flush=True)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """Simulates the atomics probes and writes the comparison CSV."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="h100")
    ap.add_argument("--bins", default=",".join(map(str, BINS)), help="comma-separated bin counts")
    ap.add_argument("--out", help="CSV to write (atomically)")
    a = ap.parse_args(argv)
    df = compare(a.config, tuple(int(b) for b in a.bins.split(",")))
    ratio = df.time_ratio
    print(f"sim/silicon time: median {ratio.median():.2f}, range {ratio.min():.2f}-{ratio.max():.2f} "
          f"over {len(df)} rows")
    if a.out:
        out = Path(a.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        df.to_csv(tmp, index=False, float_format="%.4g")
        tmp.replace(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

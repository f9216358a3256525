"""The library table's own kernels simulated on a config, to set the simulator's ratios beside silicon's.

For every batch-1 shape of benchmarks/gpu/library_baselines.shapes and every kernel of its OURS (or the
``--only`` labels), the simulated cycles of one launch on ``--config``: ``kernel_choice.estimate_cycles``
(the layer itself up to FULL_SIMULATION_MACS, else two short-K launches of the same grid extrapolated to K,
within 3 % of the whole launch where checked), cached on disk like the per-shape choice's candidates.
``library_table CSV --sim SIM.csv`` then prints, per pair of our kernels, the simulated ratio next to the
measured one: a ratio of ratios needs no clock, so ncu's locked base clock does not enter.

    python -m benchmarks.gpu.library_sim --config h100 --jobs 16 --out library_sim.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import pandas as pd

from benchmarks.gpu.library_baselines import OURS, shapes
from stcsim.harness.files import write_csv_atomic
from stcsim.harness.kernel_choice import estimate_cycles
from stcsim.kernels import GemmProblem, get_kernel
from stcsim.sparsity import get

COLUMNS = ("network", "layer", "batch", "m", "n", "k", "kernel", "config", "sim_cycles", "seconds")


def simulate_case(case: tuple[str, str, int, int, int, int, str, str]) -> tuple:
    """One row of the table: (network, layer, batch, m, n, k, label, config, cycles, CPU seconds)."""
    net, layer, batch, m, n, k, label, config = case
    _, name, spec, sparsity = next(o for o in OURS if o[0] == label)
    start = time.process_time()
    cycles = estimate_cycles(get_kernel(name), GemmProblem(m, n, k), get(spec), sparsity, config)
    return (*case, cycles, time.process_time() - start)


def cases(config: str, only: frozenset[str] | None, batches: frozenset[int]) -> list[tuple]:
    """Every (shape, our kernel) the kernel can implement, at the given batches."""
    out = []
    for net, layer, batch, p in shapes():
        if batch not in batches:
            continue
        for label, name, spec, _ in OURS:
            if (only is None or label in only) and get_kernel(name).can_implement(p, get(spec))[0]:
                out.append((net, layer, batch, p.m, p.n, p.k, label, config))
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: simulate the cases on worker processes (largest first) and write the CSV."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="h100")
    ap.add_argument("--only", default="", help="comma-separated labels of OURS (default: all)")
    ap.add_argument("--batches", default="1", help="comma-separated batches of the shapes (1, 32)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    todo = cases(a.config, frozenset(a.only.split(",")) if a.only else None,
                 frozenset(int(b) for b in a.batches.split(",")))
    todo.sort(key=lambda c: -(c[3] * c[4] * c[5]))
    rows, start = [], time.perf_counter()
    with ProcessPoolExecutor(a.jobs) as pool:
        for f in as_completed([pool.submit(simulate_case, c) for c in todo]):
            rows.append(f.result())  # written after every case: a run cut short keeps what it finished
            write_csv_atomic(pd.DataFrame(rows, columns=COLUMNS), a.out)
            elapsed = time.perf_counter() - start
            print(f"[{elapsed:6.0f} s] {len(rows)} / {len(todo)}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

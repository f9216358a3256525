"""Time every kernel of the set on a real GPU.

    python -m stcsim.gpu.time_kernels --size 1024 --csv out.csv
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from stcsim.gpu.runner import GpuEngine
from stcsim.harness.files import write_csv_atomic
from stcsim.kernels import GEMM_KERNELS, GemmProblem, verify_gemm

FIELDS = ("kernel", "m", "n", "k", "gpu_time_ms", "gpu_time_ms_min", "tflops", "rel_error", "ok")


def time_kernels(p: GemmProblem, repeats: int) -> list[dict[str, object]]:
    """One row per kernel: median time over `repeats`, TFLOP/s, and the error against numpy."""
    engine = GpuEngine(repeats=repeats)
    rows = []
    for kernel in GEMM_KERNELS:
        check = verify_gemm(kernel, engine, p)
        ms = check.stats["gpu_time_ms"]
        rows.append({
            "kernel": kernel.procedural_name, "m": p.m, "n": p.n, "k": p.k,
            "gpu_time_ms": round(ms, 4), "gpu_time_ms_min": round(check.stats["gpu_time_ms_min"], 4),
            "tflops": round(p.flops / (ms * 1e-3) / 1e12, 2),
            "rel_error": f"{check.rel_error:.2e}", "ok": check.ok,
        })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command line: print a table, optionally write a CSV; exit 1 if any kernel misses its tolerance."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, nargs="+", default=[1024], help="M N K, or one value for all")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--csv", help="write the rows to this CSV file")
    opts = parser.parse_args(argv)
    m, n, k = (opts.size * 3)[:3] if len(opts.size) == 1 else opts.size
    rows = time_kernels(GemmProblem(m, n, k), opts.repeats)
    if opts.csv:  # \r\n line ends, as the csv module's writer gave the files already written
        write_csv_atomic(pd.DataFrame(rows, columns=list(FIELDS)), opts.csv, lineterminator="\r\n")
    for row in rows:
        print(" ".join(f"{row[f]!s:>10}" if f != "kernel" else f"{row[f]:<52}" for f in FIELDS))
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

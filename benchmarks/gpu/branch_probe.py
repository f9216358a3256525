"""Conditional branches on silicon: what a warp-uniform taken / not-taken `bra` costs, and the longest body
ptxas predicates instead of branching over it (measured: 6 add / xor; the engine if-converts up to 8).

The PTX is benchmarks/micro/branch_cond.ptx with `body` = 2..16 add/xor instructions under each branch;
every step's predicate compares the `flag` parameter with the step's index, so ptxas cannot know it. Per step:
the %clock64 difference between the 2k- and k-step kernels / k (as benchmarks/micro/silicon.py measures; the
median of REPEATS launches, each kept),
the SASS instruction counts of both kernels (a kept branch is one more instruction per step than a
predicated body), and the h100 config's simulated value of the same PTX beside it. The SASS of two kernels
goes to the output folder as text.

    python -m benchmarks.gpu.branch_probe --out DIR        # on a GPU machine, the engine installed
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.micro import launch
from benchmarks.micro.silicon import SiliconEngine, keep_alive
from stcsim.harness.files import write_csv_atomic

BODIES = (2, 4, 6, 8, 10, 12, 16)
K = 16
# Silicon launches per value (the median is reported, every one kept): a single k- vs 2k-step difference can
# carry an instruction-cache miss of several hundred cycles (the runner evicts L2 between warm-up and
# measurement), which is tens of cycles per step at k = 16.
REPEATS = 5
# The loop probe (benchmarks/micro/branch_loop.ptx): a nounroll loop of k / 2k iterations over `body`
# add / xor: what a taken back-edge costs per iteration next to the body's chain.
LOOP_BODIES = (2, 8, 16)
TAKEN = {"ne": "taken", "eq": "not taken"}  # flag 0xffffffff equals no step index


def _per_step(config: str, bench: str, body: int, cmp: str | None) -> float:
    """Cycles per step of one probe (%clock64, k vs 2k steps) on whatever `launch.Engine` is."""
    extra = {"cmp": cmp} if cmp else {}
    return launch.per_step(config, bench, K, body=body, args=lambda e, out: [out, 0xFFFFFFFF], **extra)[0]


def _silicon(config: str, bench: str, body: int, cmp: str | None) -> tuple[list[float], str]:
    """REPEATS silicon values of one probe, and the SASS counts of its k- and 2k-step kernels."""
    engine = launch.Engine
    launch.Engine = SiliconEngine  # type: ignore[misc,assignment]
    SiliconEngine.loaded.clear()
    try:
        runs = [_per_step(config, bench, body, cmp) for _ in range(REPEATS)]
    finally:
        launch.Engine = engine  # type: ignore[misc]
    return runs, "/".join(str(c) for c in SiliconEngine.loaded[:2])


def _loop_rows(config: str) -> list[dict]:
    """The loop probe: per iteration on silicon (median of REPEATS) and on `config`."""
    rows = []
    for body in LOOP_BODIES:
        sim = _per_step(config, "branch_loop", body, None)
        runs, sass = _silicon(config, "branch_loop", body, None)
        silicon = float(np.median(runs))
        rows.append({"body": body, "silicon_cycles_per_iteration": silicon,
                     "silicon_runs": " ".join(f"{r:.2f}" for r in runs),
                     f"{config}_cycles_per_iteration": sim, "sass_counts": sass})  # fmt: skip
        print(f"loop body {body:>2} silicon {silicon:7.2f} ({min(runs):.2f}-{max(runs):.2f})  "
              f"{config} {sim:7.2f}  sass {sass}")
    return rows


def _dump_sass(out: Path, bench: str, body: int, n: int = 2, **params: str) -> None:
    ptx = keep_alive(launch.render(bench, kernel=bench, n=n, body=body, **params))
    src = out / f"{bench}_body{body}.ptx"
    src.write_text(ptx)
    cubin = src.with_suffix(".cubin")
    subprocess.run(["ptxas", "-O3", "-arch=sm_90", str(src), "-o", str(cubin)], check=True)
    sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True).stdout
    src.with_suffix(".sass.txt").write_text(sass)


def main(argv: list[str] | None = None) -> int:
    """Measures every body length both ways on silicon and simulates the same PTX on `--config`."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for branch_probe.csv and the SASS listings")
    ap.add_argument("--config", default="h100")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for body in BODIES:
        for cmp, kind in TAKEN.items():
            sim = _per_step(a.config, "branch_cond", body, cmp)
            runs, sass = _silicon(a.config, "branch_cond", body, cmp)
            silicon = float(np.median(runs))
            rows.append({"body": body, "branch": kind, "silicon_cycles_per_step": silicon,
                         "silicon_runs": " ".join(f"{r:.2f}" for r in runs),
                         f"{a.config}_cycles_per_step": sim, "sass_counts": sass})  # fmt: skip
            print(f"body {body:>2} {kind:<9} silicon {silicon:7.2f} ({min(runs):.2f}-{max(runs):.2f})  "
                  f"{a.config} {sim:7.2f}  sass {sass}")
    write_csv_atomic(pd.DataFrame(rows), out / "branch_probe.csv")
    write_csv_atomic(pd.DataFrame(_loop_rows(a.config)), out / "branch_loop.csv")
    for body in (4, 12):
        _dump_sass(out, "branch_cond", body, cmp="ne")
    _dump_sass(out, "branch_loop", 8, n=K)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

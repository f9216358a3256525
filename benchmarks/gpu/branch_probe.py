"""Conditional branches on silicon: what a warp-uniform taken / not-taken `bra` costs, and the longest body
ptxas predicates instead of branching over it (the engine's if-conversion takes at most 8 instructions).

The PTX is benchmarks/micro/branch_cond.ptx with `body` = 2..16 add/xor instructions under each branch;
every step's predicate compares the `flag` parameter with the step's index, so ptxas cannot know it. Per step:
the %clock64 difference between the 2k- and k-step kernels / k (as benchmarks/micro/silicon.py measures),
the SASS instruction counts of both kernels (a kept branch is one more instruction per step than a
predicated body), and the h100 config's simulated value of the same PTX beside it. The SASS of two kernels
goes to the output folder as text.

    python -m benchmarks.gpu.branch_probe --out DIR        # on a GPU machine, the engine installed
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pandas as pd

from benchmarks.micro import launch
from benchmarks.micro.silicon import SiliconEngine, keep_alive
from stcsim.harness.files import write_csv_atomic

BODIES = (2, 4, 6, 8, 10, 12, 16)
K = 16
TAKEN = {"ne": "taken", "eq": "not taken"}  # flag 0xffffffff equals no step index


def _per_step(config: str, body: int, cmp: str) -> float:
    clock, _, _, _ = launch.per_step(config, "branch_cond", K, cmp=cmp, body=body,
                                     args=lambda e, out: [out, 0xFFFFFFFF])  # fmt: skip
    return clock


def _dump_sass(out: Path, body: int) -> None:
    ptx = keep_alive(launch.render("branch_cond", kernel="branch_cond", n=2, cmp="ne", body=body))
    src = out / f"branch_cond_body{body}.ptx"
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
            sim = _per_step(a.config, body, cmp)
            engine = launch.Engine
            launch.Engine = SiliconEngine  # type: ignore[misc,assignment]
            SiliconEngine.loaded.clear()
            try:
                silicon = _per_step(a.config, body, cmp)
            finally:
                launch.Engine = engine  # type: ignore[misc]
            sass = "/".join(str(c) for c in SiliconEngine.loaded)
            rows.append({"body": body, "branch": kind, "silicon_cycles_per_step": silicon,
                         f"{a.config}_cycles_per_step": sim, "sass_counts": sass})  # fmt: skip
            print(f"body {body:>2} {kind:<9} silicon {silicon:7.2f}  {a.config} {sim:7.2f}  sass {sass}")
    write_csv_atomic(pd.DataFrame(rows), out / "branch_probe.csv")
    for body in (4, 12):
        _dump_sass(out, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

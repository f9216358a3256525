"""`python -m stcsim.tools.ab A.so B.so --case KERNEL:MxNxK:CONFIG`: which of two engine builds runs a
launch faster, measured so that a shared host's noise cancels.

On a host shared with other jobs the same build's CPU time varies by 20-40 % from run to run (other tenants
take the caches and memory bandwidth, which CPU time does not exclude), far more than most speed steps. Here
the two builds run at the same time, one per core (each pinned to its core, the cores swapped every pair),
so both see the same neighbours; each reports the fastest of `repeat` launches, and the figure is the
geometric mean of the pairs' B/A ratios. Two runs of one build (an A/A check) give about 1.00 (0.998 over
six pairs of a WMMA 1024^3 launch on the development host, every pair within 1 %). The two runs also share
the host's last-level cache with each other, and when the neighbours' load comes in bursts the pairs spread
(later the same day: an A/A check 1.05, pairs 1.00-1.16): run an A/A check first, and confirm a large
effect with the builds alternating alone. Linux only (CPU affinity); needs two cores.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from stcsim.tools.sim_speed import parse_case


@dataclass(frozen=True)
class AbResult:
    """CPU seconds of each pair's launches (fastest of its repeats) for builds A and B."""

    a_seconds: list[float]
    b_seconds: list[float]

    @property
    def ratios(self) -> list[float]:
        """B / A per pair."""
        return [b / a for a, b in zip(self.a_seconds, self.b_seconds, strict=True)]

    @property
    def geomean(self) -> float:
        """The geometric mean of the pairs' B / A ratios (below 1: B is faster)."""
        r = self.ratios
        return math.exp(sum(math.log(x) for x in r) / len(r))


def two_cores() -> tuple[int, int]:
    """Two cores this process may run on; raises SystemExit when it has fewer."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        raise SystemExit("stcsim.tools.ab needs two cores (the builds run side by side); this process has "
                         f"{len(cores)}")
    return cores[0], cores[1]


def _worker_command(engine: Path, case: str, repeat: int) -> list[str]:
    return [sys.executable, "-m", "stcsim.tools.ab", "--worker", str(engine), "--case", case,
            "--repeat", str(repeat)]


def _pinned(core: int):  # type: ignore[no-untyped-def]
    return lambda: os.sched_setaffinity(0, {core})


def run_pair(a: Path, b: Path, case: str, repeat: int, cores: tuple[int, int]) -> tuple[float, float]:
    """Runs the case with build A on cores[0] and build B on cores[1] at the same time; returns their CPU
    seconds (fastest of `repeat` launches each). Raises RuntimeError if a run fails."""
    procs = [subprocess.Popen(_worker_command(engine, case, repeat), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, preexec_fn=_pinned(core))
             for engine, core in ((a, cores[0]), (b, cores[1]))]
    seconds = []
    for engine, p in zip((a, b), procs, strict=True):
        out, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"the run with {engine} failed ({p.returncode}): {err.strip()[-2000:]}")
        seconds.append(float(json.loads(out.strip().splitlines()[-1])["cpu_seconds"]))
    return seconds[0], seconds[1]


def compare(a: Path, b: Path, case: str, pairs: int = 6, repeat: int = 2) -> AbResult:
    """`pairs` side-by-side runs of builds A and B (cores swapped every pair)."""
    c0, c1 = two_cores()
    a_s: list[float] = []
    b_s: list[float] = []
    for i in range(pairs):
        if i % 2 == 0:
            ta, tb = run_pair(a, b, case, repeat, (c0, c1))
        else:
            ta, tb = run_pair(a, b, case, repeat, (c1, c0))
        a_s.append(ta)
        b_s.append(tb)
    return AbResult(a_s, b_s)


def _worker(engine: str, case: str, repeat: int) -> int:
    from stcsim.tools.pgo_train import load_engine_module

    load_engine_module(Path(engine))
    from stcsim.tools.sim_speed import bench_case

    kernel, shape, config = parse_case(case)
    row = bench_case(kernel, shape, config, repeat=repeat)
    print(json.dumps({"cpu_seconds": row.cpu_seconds, "warp_insts": row.warp_insts}))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command line: prints each pair's CPU seconds, its ratio and the geometric mean."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("engines", nargs="*", type=Path, help="build A's and build B's engine extension (.so)")
    ap.add_argument("--case", required=True, help="KERNEL:MxNxK:CONFIG (CONFIG none: functional only)")
    ap.add_argument("--pairs", type=int, default=6, help="side-by-side runs (default 6)")
    ap.add_argument("--repeat", type=int, default=2, help="launches per run; the fastest counts (default 2)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        parse_case(args.case)  # a clear error before anything runs
    except ValueError as err:
        ap.error(str(err))
    if args.worker:
        return _worker(args.worker, args.case, args.repeat)
    if len(args.engines) != 2:
        ap.error("give two engine extensions: A.so B.so")
    for e in args.engines:
        if not e.is_file():
            ap.error(f"no such engine extension: {e}")
    if args.pairs < 1 or args.repeat < 1:
        ap.error("--pairs and --repeat must be at least 1")
    result = compare(args.engines[0], args.engines[1], args.case, args.pairs, args.repeat)
    print(f"{'pair':>4}  {'A cpu s':>10}  {'B cpu s':>10}  {'B/A':>6}")
    for i, (ta, tb) in enumerate(zip(result.a_seconds, result.b_seconds, strict=True)):
        print(f"{i + 1:>4}  {ta:10.6g}  {tb:10.6g}  {tb / ta:6.3f}")  # 6 significant digits: tiny cases too
    a, b = args.engines
    print(f"geometric mean B/A = {result.geomean:.4f} ({args.case}; A {a}, B {b})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

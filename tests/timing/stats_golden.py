"""The bit-identical guard of engine speed work: every launch statistic of the kernel set (small shapes) and
of the PTX microbenchmarks, collected into one dict and compared with the committed golden file.

    python -m tests.timing.stats_golden            # compare with tests/timing/stats_golden.json
    python -m tests.timing.stats_golden --write    # re-record it (only for a documented model change)

A speed change must leave every number here unchanged; test_stats_golden.py asserts it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from stcsim.kernels import KERNEL_SET, GemmProblem, verify_gemm
from stcsim.sim import Engine, ptxas_facts
from stcsim.sparsity import get as get_pattern

GOLDEN = Path(__file__).with_name("stats_golden.json")

# (pattern spec, sparsity, configs) per kernel pattern family: configs whose timing classes the kernels have.
_PATTERNS: dict[str, tuple[tuple[str, float], ...]] = {
    "dense": (("dense", 0.0),),
    "unstructured": (("unstructured", 0.7),),
    "channel": (("channel", 0.5),),
    "vw": (("vw:L=16,K=2", 0.875), ("vw:L=16,K=4", 0.75), ("vw:L=16,K=8", 0.5)),
    "extensor": (("extensor", 0.75),),
    "nm": (("nm:N=2,M=4", 0.5),),
    "tvw": (("tvw:G=64", 0.75), ("tvw:G=128", 0.75)),
    "shflbw": (("shflbw:V=32", 0.75), ("shflbw:V=64", 0.75)),
    "tw": (("tw:G=64", 0.75),),
    "tew": (("tew:G=64", 0.75),),
    "sparsert": (("sparsert", 0.9),),
}
_CONFIGS: dict[str, tuple[str, ...]] = {
    "dense": ("v100", "h100"),
    "unstructured": ("v100", "h100"),
    "channel": ("v100",),
    "vw": ("v100+stc",),
    "extensor": ("titanv+extensor",),
    "nm": ("h100",),
    "tvw": ("h100",),
    "shflbw": ("h100", "v100"),
    "tw": ("h100",),
    "tew": ("h100",),
    "sparsert": ("h100",),
}
# The bandwidth microbenchmarks take seconds per config: the guard runs them on one config (all with
# STCSIM_GOLDEN_FULL=1), every other microbenchmark on every config it applies to.
BANDWIDTH_CONFIGS = ("titanv",)
_FULL = os.environ.get("STCSIM_GOLDEN_FULL", "") not in ("", "0")
PROBLEM = GemmProblem(96, 160, 128)
SEED = 12  # fixed: the guard compares exact cycle counts, which depend on the data of sparse operands


def _stat_values(stats: dict[str, Any]) -> dict[str, float | str]:
    return {k: (v if isinstance(v, str) else float(v)) for k, v in sorted(stats.items())}


def kernel_cases(lockstep: bool = False) -> Iterator[tuple[str, dict[str, float | str]]]:
    """(case id, stats) of every kernel of the set on each config its pattern family runs on (`lockstep`:
    every launch in the timing model's lockstep loop, Engine(..., lockstep=True))."""
    for kernel in KERNEL_SET:
        if kernel.pattern_name not in _PATTERNS:
            raise KeyError(f"{kernel.procedural_name}: add its pattern {kernel.pattern_name!r} to _PATTERNS")
        for spec, sparsity in _PATTERNS[kernel.pattern_name]:
            if not kernel.supports(get_pattern(spec))[0]:
                continue
            for config in _CONFIGS[kernel.pattern_name]:
                case = f"kernel/{kernel.procedural_name}/{spec}/{config}"
                try:
                    eng = Engine(config, lockstep=lockstep)
                    check = verify_gemm(kernel, eng, PROBLEM, SEED, pattern=spec, sparsity=sparsity)
                except ValueError as err:  # LaunchError: the config has no timing for one of its instructions
                    yield case, {"error": type(err).__name__}
                    continue
                if not check.ok:
                    raise AssertionError(f"{case}: numpy check failed ({check})")
                yield case, _stat_values(check.stats)


def micro_cases(lockstep: bool = False) -> Iterator[tuple[str, dict[str, float | str]]]:
    """(case id, stats) of every launch the microbenchmarks make (the fast ones), in launch order (`lockstep`:
    each in the lockstep loop; the microbenchmarks make their own engines, which the recording sets to it)."""
    from benchmarks.micro import BENCHES, measure

    launches: list[dict[str, Any]] = []
    original = Engine.launch

    def recording_launch(self: Engine, *args: Any, **kwargs: Any) -> dict[str, float | str]:
        self.lockstep = self.lockstep or lockstep
        stats = original(self, *args, **kwargs)
        launches.append(stats)
        return stats

    Engine.launch = recording_launch  # type: ignore[method-assign]
    try:
        for bench in BENCHES:
            for config in bench.configs:
                if bench.group == "bandwidth" and config not in BANDWIDTH_CONFIGS and not _FULL:
                    continue
                launches.clear()
                measure.cache_clear()
                measure(bench.id, config)
                for i, stats in enumerate(launches):
                    yield f"micro/{bench.id}/{config}/{i}", _stat_values(stats)
    finally:
        Engine.launch = original  # type: ignore[method-assign]


def collect(lockstep: bool = False) -> dict[str, dict[str, float | str]]:
    """Every case's statistics by case id, in the PTX-only view (the engine's register estimate, wgmma as the
    PTX pipelines it): ptxas's facts (stcsim.sim.ptxas_facts) depend on whether and which ptxas is installed,
    the golden file must not. `lockstep`: every launch in the timing model's lockstep loop (same stats)."""
    np.seterr(all="ignore")
    original = ptxas_facts.facts
    ptxas_facts.facts = lambda ptx, sm_version: ptxas_facts.PtxasFacts()  # type: ignore[assignment]
    try:
        return dict([*kernel_cases(lockstep), *micro_cases(lockstep)])
    finally:
        ptxas_facts.facts = original  # type: ignore[assignment]


def differences(golden: dict[str, dict[str, Any]], now: dict[str, dict[str, Any]]) -> list[str]:
    """Human-readable differences between two collections (missing cases, changed or new stats)."""
    out = [f"case missing now: {c}" for c in golden if c not in now]
    out += [f"new case: {c}" for c in now if c not in golden]
    for case in golden.keys() & now.keys():
        g, n = golden[case], now[case]
        for key in sorted(g.keys() | n.keys()):
            if g.get(key) != n.get(key):
                out.append(f"{case}: {key} was {g.get(key)!r}, now {n.get(key)!r}")
    return sorted(out)


def main(argv: list[str] | None = None) -> int:
    """CLI: compare with the golden file, or re-record it with --write."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true", help="re-record the golden file")
    a = ap.parse_args(argv)
    now = collect()
    if a.write:
        GOLDEN.write_text(json.dumps(now, indent=0, sort_keys=True) + "\n")
        print(f"wrote {len(now)} cases to {GOLDEN}")
        return 0
    diff = differences(json.loads(GOLDEN.read_text()), now)
    print("\n".join(diff[:50]) or f"all {len(now)} cases identical")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())

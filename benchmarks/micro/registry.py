"""The registry of the PTX microbenchmarks: every case of every group module, in the report's order.

Each group module (units, tensor, memory, bandwidth, shared, occupancy, sparse) lists its cases once, with
their contracts, as ``CASES``; `GROUPS` names the modules explicitly and `BENCHES` is their concatenation
(the rows of docs/microbenchmarks.md and the parametrised tests of tests/timing). `measure(bench_id,
config)` runs one case on one config and returns its `Result` (cached per process).
"""

from __future__ import annotations

import functools
from types import ModuleType

from benchmarks.micro import bandwidth, memory, occupancy, shared, sparse, tensor, units
from benchmarks.micro.contract import Bench, Result

GROUPS: tuple[ModuleType, ...] = (units, tensor, memory, bandwidth, shared, occupancy, sparse)


def _collect(groups: tuple[ModuleType, ...]) -> tuple[Bench, ...]:
    """The cases of `groups` in order; an id registered twice is an error."""
    benches: list[Bench] = []
    seen: set[str] = set()
    for module in groups:
        for b in module.CASES:
            if b.id in seen:
                raise ValueError(f"duplicate microbenchmark id {b.id}")
            seen.add(b.id)
            benches.append(b)
    return tuple(benches)


BENCHES: tuple[Bench, ...] = _collect(GROUPS)


def by_id(bench_id: str) -> Bench:
    """The registered `Bench` with this id."""
    for b in BENCHES:
        if b.id == bench_id:
            return b
    raise KeyError(bench_id)


@functools.cache
def measure(bench_id: str, config: str) -> Result:
    """Runs microbenchmark `bench_id` on `config` (cached per process)."""
    return by_id(bench_id).runner(config)

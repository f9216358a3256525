"""Rendering and launching the microbenchmark kernels, and reading the config they are measured against.

Every ``*.ptx`` file of this directory is a Jinja2 template of one hand-written kernel; `run` renders one
and launches it once on a fresh engine (with the warm-icache overlay). Latencies and issue intervals are
measured by differences: a kernel with 2k steps minus the same kernel with k steps, divided by k
(`per_step`), so that the fixed cost of launch, set-up and the final clock read cancels.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from stcsim.config import load_config
from stcsim.sim import Engine

CONFIGS: tuple[str, ...] = ("v100", "titanv", "a100", "h100")
HERE = Path(__file__).resolve().parent

Flat = dict[str, Any]


_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(HERE)),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,
)
_ENV.filters["fmt"] = lambda text, **kw: str(text).format(**kw)
_ENV.filters["oneline"] = lambda text: " ".join(str(text).split())


def render(template: str, **params: Any) -> str:
    """Renders ``benchmarks/micro/<template>.ptx`` with `params`; the kernel is named after the template.

    `params` may set ``kernel`` to override the entry name.
    """
    params.setdefault("kernel", template)
    return _ENV.get_template(f"{template}.ptx").render(**params)


@functools.cache
def flat(config: str) -> Flat:
    """The resolved, flattened config (derived keys included)."""
    return dict(load_config(config).flat())


@dataclass
class Run:
    """One launch: the %clock64 delta the kernel stored in out[0], out[1], the launch statistics, and the
    engine and kernel arguments (to read other results back)."""

    clock: int
    out1: int
    stats: dict[str, Any]
    engine: Engine = field(repr=False)
    args: list[int] = field(default_factory=list)

    @property
    def cycles(self) -> float:
        """kernel_cycles of the launch (gpu_sim_cycle without the config's fixed launch overhead)."""
        return float(self.stats["kernel_cycles"])

    def stat(self, name: str) -> float:
        """One statistic as a float."""
        return float(self.stats[name])


def warm_icache(config: str) -> str:
    """`config` with the warm-icache overlay: a microbenchmark pins its unit or memory level apart from
    instruction fetch, as silicon measures it over repeated launches (tests/timing/test_micro_icache.py pins
    fetch)."""
    return f"{config}+warm-icache"


def run(
    config: str,
    template: str,
    *,
    grid: int = 1,
    block: int = 32,
    shared_bytes: int = 0,
    regs_per_thread: int = 0,
    args: Callable[[Engine, int], list[int]] | None = None,
    **params: Any,
) -> Run:
    """Renders `template` with `params`, launches it once on a fresh engine and returns the `Run`.

    `args(engine, out)` returns the kernel arguments (default ``[out]``, a 64-byte zeroed buffer).
    """
    ptx = render(template, **params)
    eng = Engine(warm_icache(config))
    (name,) = eng.load_ptx(ptx)
    out = eng.malloc(64)
    argv = args(eng, out) if args else [out]
    stats = eng.launch(name, grid, block, argv, shared_bytes=shared_bytes, regs_per_thread=regs_per_thread)
    words = eng.copy_from(out, 2, np.uint64)
    return Run(int(words[0]), int(words[1]), dict(stats), eng, list(argv))


def per_step(config: str, template: str, k: int, **kw: Any) -> tuple[float, float, Run, Run]:
    """Runs `template` with n = k and n = 2k; returns the per-step cost from the %clock64 deltas and from
    gpu_sim_cycle, and the two runs."""
    r1 = run(config, template, n=k, **kw)
    r2 = run(config, template, n=2 * k, **kw)
    return (r2.clock - r1.clock) / k, (r2.cycles - r1.cycles) / k, r1, r2


def stat_per_step(r1: Run, r2: Run, name: str, k: int) -> float:
    """The per-step increase of statistic `name` between the k-step run `r1` and the 2k-step run `r2`."""
    return (r2.stat(name) - r1.stat(name)) / k


def _timed_as(cfg: Flat, unit: str) -> str:
    """The class whose figures time `unit`: shfl where the config measures it (units.shfl.latency > 0), else
    int (the engine's units.shfl class, timing/op_class.cc)."""
    return "int" if unit == "shfl" and not int(cfg["units.shfl.latency"]) else unit


def unit_interval(cfg: Flat, unit: str) -> int:
    """The issue interval of unit class `unit` (units.<unit>.issue_interval)."""
    return int(cfg[f"units.{_timed_as(cfg, unit)}.issue_interval"])


def unit_latency(cfg: Flat, unit: str) -> int:
    """The latency of unit class `unit` (units.<unit>.latency)."""
    return int(cfg[f"units.{_timed_as(cfg, unit)}.latency"])


def issue_per_warp(cfg: Flat) -> float:
    """Cycles between two instructions of one warp: one per cycle at most (and one per scheduler slot)."""
    return max(1.0, 1.0 / int(cfg["sched.issue_width"]))

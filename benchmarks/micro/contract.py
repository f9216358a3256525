"""What a microbenchmark is and what it reports: a `Bench` (one case with its contract), the `Result` it
measures on one config, and the secondary `Check`s inside a result.

A `Bench` names its template (``<name>.ptx`` here), what it pins, the config keys involved, and a runner
that measures it on one config and returns the primary value with the value the config predicts under the
timing-model contract and its tolerance (0 = exact), plus secondary `Check`s (statistics such as
wavefronts or hits, the gpu_sim_cycle form of a %clock64 measurement, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks.micro.launch import CONFIGS


@dataclass(frozen=True)
class Check:
    """A secondary comparison inside a result (exact unless `rel_tol` > 0)."""

    measured: float
    expected: float
    rel_tol: float = 0.0
    at_least: bool = False
    at_most: bool = False

    @property
    def ok(self) -> bool:
        """Whether `measured` matches `expected` (exactly, within `rel_tol` of it, >= it if `at_least`, <= it
        if `at_most`)."""
        if self.at_least:
            return self.measured >= self.expected
        if self.at_most:
            return self.measured <= self.expected
        if self.rel_tol == 0:
            return self.measured == self.expected
        return abs(self.measured - self.expected) <= self.rel_tol * abs(self.expected)


@dataclass
class Result:
    """What one microbenchmark measured on one config, against what the config predicts.

    `value` is None when the benchmark does not apply to the config (e.g. mma.sync timing on a config
    without those keys). `rel_tol` 0 means the contract is exact.
    """

    bench: str
    config: str
    value: float | None
    expected: float | None
    unit: str
    rel_tol: float = 0.0
    checks: dict[str, Check] = field(default_factory=dict)
    note: str = ""
    at_least: bool = False

    @property
    def applies(self) -> bool:
        """Whether the benchmark ran on this config."""
        return self.value is not None

    @property
    def primary(self) -> Check:
        """The primary comparison as a `Check`."""
        assert self.value is not None and self.expected is not None
        return Check(self.value, self.expected, self.rel_tol, self.at_least)

    @property
    def failures(self) -> list[str]:
        """Human-readable mismatches (empty when the result matches the contract)."""
        if not self.applies:
            return []
        out = []
        if not self.primary.ok:
            out.append(_mismatch(self.bench, self.primary, self.unit))
        for name, c in self.checks.items():
            if not c.ok:
                out.append(_mismatch(f"{self.bench} [{name}]", c, ""))
        return out

    @property
    def ok(self) -> bool:
        """Whether the primary value and every check match."""
        return not self.failures

    @property
    def fraction(self) -> float | None:
        """measured / expected (for bandwidths)."""
        if self.value is None or not self.expected:
            return None
        return self.value / self.expected


def _mismatch(what: str, c: Check, unit: str) -> str:
    tol = f" (tolerance {c.rel_tol:.0%})" if c.rel_tol else ""
    rel = "at least " if c.at_least else ""
    return f"{what}: measured {c.measured:g} {unit}, expected {rel}{c.expected:g} {unit}{tol}".replace(
        "  ", " "
    )


@dataclass(frozen=True)
class Bench:
    """One microbenchmark: a row of docs/microbenchmarks.md and a parametrised test per config."""

    id: str
    group: str
    pins: str
    keys: tuple[str, ...]
    template: str
    runner: Callable[[str], Result]
    xfail: Callable[[str], str | None] = field(default=lambda config: None)
    configs: tuple[str, ...] = CONFIGS  # the configs it runs on (the sparse extensions: their overlays)


def case(
    bench_id: str,
    group: str,
    pins: str,
    keys: tuple[str, ...],
    template: str,
    runner: Callable[[str], Result],
    xfail: Callable[[str], str | None] | None = None,
    configs: tuple[str, ...] = CONFIGS,
) -> Bench:
    """One microbenchmark case (`xfail(config)`: the reason it is a known deviation there, or None)."""
    no_xfail: Callable[[str], str | None] = lambda config: None  # noqa: E731
    return Bench(bench_id, group, pins, keys, template, runner, xfail or no_xfail, configs)


def not_applicable(bench_id: str, config: str, unit: str, note: str) -> Result:
    """The `Result` of a case that does not apply to `config` (`note` says why)."""
    return Result(bench_id, config, None, None, unit, note=note)

"""Helpers of the timing microbenchmark tests: parametrisation over (benchmark, config) and the assertion."""

from __future__ import annotations

import pytest

from benchmarks.micro import BENCHES, Result, measure


def cases(group: str) -> list:
    """One pytest param per (benchmark of `group`, shipped config); known deviations are strict xfails."""
    params = []
    for b in BENCHES:
        if b.group != group:
            continue
        for config in b.configs:
            reason = b.xfail(config)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(b.id, config, id=f"{b.id}-{config}", marks=marks))
    return params


def check(bench_id: str, config: str) -> Result:
    """Measures `bench_id` on `config` and asserts it matches the config (skips where it does not apply)."""
    r = measure(bench_id, config)
    if not r.applies:
        pytest.skip(r.note)
    assert r.ok, "\n".join(r.failures)
    return r

"""Memory latency by pointer chasing (L1, L2, DRAM, local, constant) and the cache write policy."""

from __future__ import annotations

import pytest
from microkit import cases, check


@pytest.mark.parametrize(("bench_id", "config"), cases("memory"))
def test_memory(bench_id: str, config: str) -> None:
    """Load-to-use latency of each level, and which level serves the load (hit/miss statistics)."""
    check(bench_id, config)

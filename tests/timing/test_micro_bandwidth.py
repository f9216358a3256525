"""Bandwidth: DRAM and L2 streaming, one SM's L1/shared port and interconnect port (10% tolerance)."""

from __future__ import annotations

import pytest
from microkit import cases, check


@pytest.mark.parametrize(("bench_id", "config"), cases("bandwidth"))
def test_bandwidth(bench_id: str, config: str) -> None:
    """Streaming kernels reach the configured bandwidth (within 10%) and no more."""
    check(bench_id, config)

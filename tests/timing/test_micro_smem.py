"""Shared memory: the wavefront rule (bank conflicts, broadcast, 64/128-bit accesses) and ldmatrix."""

from __future__ import annotations

import pytest
from microkit import cases, check

from benchmarks.micro.launch import flat
from benchmarks.micro.shared import smem_wavefronts


@pytest.mark.parametrize(("bench_id", "config"), cases("shared"))
def test_shared(bench_id: str, config: str) -> None:
    """Latency, shared_wavefronts and shared_bank_conflicts of each access pattern."""
    check(bench_id, config)


@pytest.mark.parametrize(
    ("stride", "vec", "waves", "ideal"),
    [(4, 1, 1, 1), (8, 1, 2, 1), (128, 1, 32, 1), (0, 1, 1, 1), (8, 2, 2, 2), (16, 4, 4, 4), (12, 1, 1, 1)],
)
def test_wavefront_rule(stride: int, vec: int, waves: int, ideal: int) -> None:
    """The expected values come from the contract's rule (checked here against the brief's examples)."""
    assert smem_wavefronts(flat("v100"), stride, vec) == (waves, ideal)

"""Sparse Tensor Core extensions: SHMMA latency/issue interval per K, the dense op on the same hardware, and
wmma.smma.L's data-dependent latency against PhaseLat (benchmarks/micro/sparse.py)."""

from __future__ import annotations

import pytest
from microkit import cases, check

from benchmarks.micro import measure


@pytest.mark.parametrize(("bench_id", "config"), cases("sparse"))
def test_sparse(bench_id: str, config: str) -> None:
    """Each sparse Tensor Core microbenchmark times as its config keys (and the papers) say."""
    check(bench_id, config)


def test_paper_001_figure_13() -> None:
    """40 / 26 on v100+stc and 34 / 20 on v100+stc-pingpong, dense / sparse (K = 4), chain and stream."""
    figures = {"v100+stc": (40, 26), "v100+stc-pingpong": (34, 20)}
    for config, (dense, sparse) in figures.items():
        assert measure("lat.smma.dense", config).value == dense
        assert measure("lat.smma.k4", config).value == sparse
        assert measure("ii.smma.k4", config).value == sparse


def test_paper_004_example_is_66_cycles() -> None:
    assert measure("lat.smma.l16.paper", "titanv+extensor").value == 66

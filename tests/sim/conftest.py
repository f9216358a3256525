"""Fixtures and markers of the functional-core tests; the machinery itself is in simkit.py."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from simkit import BACKEND


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A numpy Generator seeded from the test's id: fresh inputs per test, the same on every run."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skips `sim_only` tests when the kernels run on a real GPU."""
    if BACKEND != "gpu":
        return
    skip = pytest.mark.skip(reason="simulator-only behaviour")
    for item in items:
        if "sim_only" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    """Registers the markers of this directory."""
    config.addinivalue_line("markers", "sim_only: checks simulator behaviour (skipped on a real GPU)")

"""Markers of the extension tests: `sim_only` tests (simulator error behaviour) are skipped when
``STCSIM_TEST_BACKEND=gpu`` runs the numeric tests on a real GPU."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skips this directory's `sim_only` tests when the kernels run on a real GPU."""
    if os.environ.get("STCSIM_TEST_BACKEND", "sim") != "gpu":
        return
    skip = pytest.mark.skip(reason="simulator-only behaviour")
    for item in items:
        if "sim_only" in item.keywords and "tests/ext/" in str(item.path).replace("\\", "/"):
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    """Registers the markers of this directory."""
    config.addinivalue_line("markers", "sim_only: checks simulator behaviour (skipped on a real GPU)")

"""Fixtures of the whole suite."""

import pytest

from stcsim.kernels import sparsert_codegen


@pytest.fixture(autouse=True)
def _private_sparsert_cache(tmp_path, monkeypatch):
    """SparseRT's generated PTX goes to the test's own disk cache (never ~/.cache), from an empty memory
    cache."""
    monkeypatch.setenv(sparsert_codegen.CACHE_ENV, str(tmp_path / "sparsert-cache"))
    monkeypatch.setattr(sparsert_codegen, "_MEMORY", {})

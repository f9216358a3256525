"""Fixtures of the whole suite. The kernel registry grows as sparse kernels are added, so tests that need a
pattern without kernels, or one known sparse kernel, set the registry themselves: `dense_only` (the dense
GEMMs alone) and `csr_kernel` (the dense GEMMs and the test-only CSR SpMM of
tests/kernels/test_kernel_protocol.py, loaded from that file, not copied)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from stcsim.kernels import GEMM_KERNELS, KernelRegistry, registry
from stcsim.kernels.codegen import sparsert_codegen

PROTOCOL_TEST = Path(__file__).resolve().parent / "kernels" / "test_kernel_protocol.py"


@pytest.fixture(autouse=True)
def _private_sparsert_cache(tmp_path, monkeypatch):
    """SparseRT's generated PTX goes to the test's own disk cache (never ~/.cache), from an empty memory
    cache."""
    monkeypatch.setenv(sparsert_codegen.CACHE_ENV, str(tmp_path / "sparsert-cache"))
    monkeypatch.setattr(sparsert_codegen, "_MEMORY", {})


@pytest.fixture
def dense_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel registry with the dense GEMMs only: every sparse pattern runs a dense fallback."""
    monkeypatch.setattr(registry, "REGISTRY", KernelRegistry(GEMM_KERNELS))


@pytest.fixture
def csr_kernel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """The kernel registry with the dense GEMMs and the CSR SpMM test kernel (pattern `unstructured`, CUDA
    cores); its name."""
    spec = importlib.util.spec_from_file_location("kernel_protocol_test", PROTOCOL_TEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    ptx = tmp_path / "spmm_csr.ptx"
    ptx.write_text(module.CSR_SPMM_PTX)
    kernel = module.CsrSpmmKernel(ptx)
    monkeypatch.setattr(registry, "REGISTRY", KernelRegistry((*GEMM_KERNELS, kernel)))
    return kernel.procedural_name


@pytest.fixture
def seed() -> int:
    """A fresh seed for the weights of each test (printed, so a failure can be replayed)."""
    value = int(np.random.SeedSequence().generate_state(1)[0] % 2**31)
    print(f"weight seed {value}")
    return value

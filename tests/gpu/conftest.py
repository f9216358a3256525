"""What the GPU tests share: one real-GPU engine per test module (skipped without CuPy or a CUDA GPU)."""

import pytest


@pytest.fixture(scope="module")
def engine():
    """A GpuEngine (a warm-up launch, then 2 timed ones) on the first CUDA device."""
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA GPU")
    except cupy.cuda.runtime.CUDARuntimeError as err:
        pytest.skip(f"no usable CUDA GPU: {err}")
    from stcsim.gpu import GpuEngine

    return GpuEngine(repeats=2)

"""The Hopper GEMMs (stcsim.kernels.descriptors.gemm_wgmma: TMA, mbarrier ring, wgmma / wgmma.sp) on an sm_90
GPU through the CuPy runner and the driver's tensor maps, on fresh random weights at ragged shapes, against
numpy."""

import pytest

from stcsim.kernels import GemmProblem, verify_gemm
from stcsim.kernels.descriptors.gemm_wgmma import WGMMA_KERNELS

SHAPES = [
    pytest.param(GemmProblem(1, 1, 1), id="1x1x1"),
    pytest.param(GemmProblem(33, 17, 40), id="33x17x40"),
    pytest.param(GemmProblem(256, 196, 2304), id="256x196x2304"),
    pytest.param(GemmProblem(517, 263, 1000), id="517x263x1000"),
    pytest.param(GemmProblem(1024, 2048, 512), id="1024x2048x512"),
]
RUNS = [pytest.param(k, "nm:N=2,M=4" if k.sparse else "dense", s, id=f"{k.procedural_name}-{s}")
        for k in WGMMA_KERNELS for s in ((0.5, 0.8) if k.sparse else (0.0,))]


@pytest.mark.gpu
@pytest.mark.parametrize("p", SHAPES)
@pytest.mark.parametrize(("kernel", "pattern", "sparsity"), RUNS)
def test_kernel_matches_numpy_on_the_gpu(engine, kernel, pattern, sparsity, p):
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.Device().compute_capability != "90":
        pytest.skip("needs an sm_90 GPU")
    check = verify_gemm(kernel, engine, p, pattern=pattern, sparsity=sparsity)
    assert check.ok, str(check)

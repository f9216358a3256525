"""The strided-batched GEMMs (stcsim.kernels.descriptors.gemm_wgmma.WGMMA_BATCHED_KERNELS on sm_90,
stcsim.kernels.descriptors.gemm_wmma_batched.WMMA_BATCHED_KERNELS on sm_80+) on a real GPU through the CuPy
runner (the driver's 3D tensor maps for wgmma), fresh random operands for batches of 1, 3 and 8 at ragged
shapes, against numpy; and one batched launch of BERT's 12 heads against one launch of a single head (printed,
-s)."""

import pytest

from stcsim.kernels import GemmProblem, get_kernel, verify_gemm
from stcsim.kernels.descriptors.gemm_wgmma import WGMMA_BATCHED_KERNELS
from stcsim.kernels.descriptors.gemm_wmma_batched import WMMA_BATCHED_KERNELS

PROBLEMS = [
    pytest.param(GemmProblem(33, 17, 40), id="1x33x17x40"),
    pytest.param(GemmProblem(130, 200, 72, 3), id="3x130x200x72"),
    pytest.param(GemmProblem(128, 128, 64, 8), id="8x128x128x64"),
    pytest.param(GemmProblem(517, 263, 1000, 3), id="3x517x263x1000"),
]


def _capability() -> str:
    cupy = pytest.importorskip("cupy")
    return cupy.cuda.Device().compute_capability


@pytest.mark.gpu
@pytest.mark.parametrize("p", PROBLEMS)
@pytest.mark.parametrize("kernel", (*WGMMA_BATCHED_KERNELS, *WMMA_BATCHED_KERNELS),
                         ids=lambda k: k.procedural_name)
def test_batched_kernel_matches_numpy_on_the_gpu(engine, kernel, p):
    if kernel in WGMMA_BATCHED_KERNELS and _capability() != "90":
        pytest.skip("needs an sm_90 GPU")
    check = verify_gemm(kernel, engine, p)
    assert check.ok, str(check)


@pytest.mark.gpu
def test_one_batched_launch_against_one_serial_launch(engine):
    """BERT-base's scores (128 x 128 x 64, 12 heads): the batched launch's time against one head's launch."""
    if _capability() != "90":
        pytest.skip("needs an sm_90 GPU")
    batched = verify_gemm(get_kernel("gemm_wgmma_batched_f16_f32_tile128x128x64_stage4"), engine,
                          GemmProblem(128, 128, 64, 12), seed=1)
    single = verify_gemm(get_kernel("gemm_wgmma_f16_f32_tile128x128x64_stage4"), engine,
                         GemmProblem(128, 128, 64), seed=1)
    assert batched.ok and single.ok
    b, s = batched.stats["gpu_time_ms_min"], single.stats["gpu_time_ms_min"]
    print(f"\nH100 scores 12 x 128x128x64: batched {b * 1e3:.2f} us, one head {s * 1e3:.2f} us, "
          f"12 serial {12 * s * 1e3:.2f} us")

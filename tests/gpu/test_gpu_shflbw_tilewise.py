"""The Shfl-BW SpMMs (paper 000: mma.sync and WMMA) and the TW / TEW GEMMs (paper 002) on a real GPU
(GpuEngine over CuPy), on fresh random pruned weights, against numpy through each pattern's decode: the same
PTX the simulator runs."""

import pytest

from stcsim.kernels import GemmProblem, get_kernel, verify_gemm

SHAPES = [
    pytest.param(GemmProblem(64, 64, 64), id="64x64x64"),
    pytest.param(GemmProblem(256, 196, 2304), id="256x196x2304"),
    pytest.param(GemmProblem(200, 136, 72), id="200x136x72"),
    pytest.param(GemmProblem(33, 17, 40), id="33x17x40"),
    pytest.param(GemmProblem(1, 1, 1), id="1x1x1"),
    pytest.param(GemmProblem(517, 263, 1000), id="517x263x1000"),
]

TILE32 = "f16_f32_tile32x128x32_warp32x32_stage3"
TILE64 = "f16_f32_tile64x128x32_warp32x64_stage3"
WMMA = "spmm_shflbw_wmma_f16_f32"
RUNS = [
    pytest.param(f"spmm_shflbw_{TILE32}", "shflbw:V=32", 0.75, id="shflbw-v32-75"),
    pytest.param(f"spmm_shflbw_{TILE64}", "shflbw:V=64", 0.75, id="shflbw-v64-75"),
    pytest.param(f"spmm_shflbw_{TILE32}", "shflbw:V=64", 0.9, id="shflbw-v64-90-tile32"),
    pytest.param(f"{WMMA}_tile32x64x32_warp16x32", "shflbw:V=32", 0.75, id="shflbw-wmma-v32-75"),
    pytest.param(f"{WMMA}_tile64x64x32_warp32x32", "shflbw:V=64", 0.75, id="shflbw-wmma-v64-75"),
    pytest.param(f"{WMMA}_tile32x32x32_warp16x16", "shflbw:V=64", 0.9, id="shflbw-wmma-v64-90"),
    pytest.param(f"gemm_tilewise_{TILE32}", "tw:G=32", 0.5, id="tw-g32-50"),
    pytest.param(f"gemm_tilewise_{TILE64}", "tw:G=128", 0.75, id="tw-g128-75"),
    pytest.param(f"gemm_tew_{TILE64}", "tew:G=64", 0.75, id="tew-g64-75"),
    pytest.param(f"gemm_tew_{TILE32}", "tew:G=32,delta=0.05", 0.5, id="tew-g32-50"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("p", SHAPES)
@pytest.mark.parametrize(("name", "pattern", "sparsity"), RUNS)
def test_gathered_kernel_matches_numpy_on_the_gpu(engine, name, pattern, sparsity, p):
    check = verify_gemm(get_kernel(name), engine, p, pattern=pattern, sparsity=sparsity)
    assert check.ok, str(check)
    assert check.stats["gpu_time_ms"] > 0 and check.stats["repeats"] == 2

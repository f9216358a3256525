"""The sparse CUDA-core kernels (paper 001's CUDA Core configurations) on a real GPU (GpuEngine over CuPy),
on fresh random pruned weights, against numpy through each pattern's decode."""

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

CSR = "spmm_csr_f32_f32_tile4x64_warp1x64"
CHANNEL = "gemm_simt_channel_f32_f32_tile64x64x8_warp32x16_thread4x4"
VW = "gemm_simt_vw_l16k{}_f32_f32_tile64x64x8_warp32x16_thread4x4"
RUNS = [
    pytest.param(CSR, "unstructured", 0.96, id="csr-96"),
    pytest.param(CSR, "unstructured", 0.5, id="csr-50"),
    pytest.param(CHANNEL, "channel", 0.5, id="channel-50"),
    pytest.param(CHANNEL, "channel", 0.9, id="channel-90"),
    pytest.param(VW.format(2), "vw:L=16,K=2", 0.875, id="vw-k2"),
    pytest.param(VW.format(4), "vw:L=16,K=4", 0.75, id="vw-k4"),
    pytest.param(VW.format(4), "vw:L=16,K=4", 0.9, id="vw-k4-90"),
    pytest.param(VW.format(8), "vw:L=16,K=8", 0.5, id="vw-k8"),
]



@pytest.mark.gpu
@pytest.mark.parametrize("p", SHAPES)
@pytest.mark.parametrize(("name", "pattern", "sparsity"), RUNS)
def test_sparse_kernel_matches_numpy_on_the_gpu(engine, name, pattern, sparsity, p):
    check = verify_gemm(get_kernel(name), engine, p, pattern=pattern, sparsity=sparsity)
    assert check.ok, str(check)
    assert check.stats["gpu_time_ms"] > 0 and check.stats["repeats"] == 2

"""Every kernel of the set on a real GPU (GpuEngine over CuPy) against numpy."""

import pytest

from stcsim.kernels import GEMM_KERNELS, GemmProblem, verify_gemm

SHAPES = [
    pytest.param(GemmProblem(64, 64, 64), id="64x64x64"),
    pytest.param(GemmProblem(256, 256, 256), id="256x256x256", marks=pytest.mark.slow),
    pytest.param(GemmProblem(200, 136, 72), id="200x136x72"),
    pytest.param(GemmProblem(33, 17, 40), id="33x17x40"),
    pytest.param(GemmProblem(1, 1, 1), id="1x1x1"),
    pytest.param(GemmProblem(517, 263, 1000), id="517x263x1000"),
]



@pytest.mark.gpu
@pytest.mark.parametrize("p", SHAPES)
@pytest.mark.parametrize("kernel", GEMM_KERNELS, ids=lambda k: k.procedural_name)
def test_kernel_matches_numpy_on_the_gpu(engine, kernel, p):
    check = verify_gemm(kernel, engine, p)
    assert check.ok, str(check)
    assert check.stats["gpu_time_ms"] > 0 and check.stats["repeats"] == 2


@pytest.mark.gpu
def test_ptx_text_loads_and_unknown_kernels_are_named(engine):
    kernel = GEMM_KERNELS[0]
    engine.load_ptx(kernel.ptx_path.read_text())
    with pytest.raises(KeyError, match="not loaded"):
        engine.launch("no_such_kernel", (1, 1, 1), (32, 1, 1), [])

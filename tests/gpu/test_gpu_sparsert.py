"""SparseRT's generated SpMM (paper 003) on a real GPU (GpuEngine over CuPy): fresh random pruned weights
against numpy at several shapes (ragged ones included) and both weight modes, and the autotuner scoring
by measured time."""

import numpy as np
import pytest

from stcsim.kernels import GemmProblem, verify_gemm
from stcsim.kernels.codegen.sparsert_plan import SplitParams
from stcsim.kernels.descriptors.sparsert_tune import autotune, gpu_objective
from stcsim.kernels.descriptors.spmm_sparsert import SparseRtKernel

SHAPES = [
    pytest.param(GemmProblem(64, 64, 64), id="64x64x64"),
    pytest.param(GemmProblem(33, 17, 40), id="33x17x40"),
    pytest.param(GemmProblem(1, 1, 1), id="1x1x1"),
    pytest.param(GemmProblem(256, 196, 1024), id="256x196x1024"),
    pytest.param(GemmProblem(517, 263, 300), id="517x263x300"),
]
SETTINGS = [
    pytest.param(SplitParams(8, 64, 2, "auto"), 0.9, id="default-90"),
    pytest.param(SplitParams(4, 32, 4, "const"), 0.95, id="const-g4-95"),
    pytest.param(SplitParams(16, 128, 1, "imm"), 0.8, id="imm-g1-80"),
]



@pytest.mark.gpu
@pytest.mark.parametrize("p", SHAPES)
@pytest.mark.parametrize(("params", "sparsity"), SETTINGS)
def test_generated_kernel_matches_numpy_on_the_gpu(engine, params, sparsity, p):
    if params.weights == "const" and p.m * p.k * (1 - sparsity) > 16384:
        pytest.skip("more weights than one 64 KiB constant bank holds")
    check = verify_gemm(SparseRtKernel(params), engine, p, pattern="sparsert", sparsity=sparsity)
    assert check.ok, str(check)
    assert check.stats["gpu_time_ms"] > 0


@pytest.mark.gpu
def test_the_autotuner_scores_by_measured_time(engine):
    rng = np.random.default_rng()
    w = rng.uniform(-1, 1, (512, 512)).astype(np.float32)
    x = rng.uniform(-1, 1, (512, 256)).astype(np.float32)
    settings = [SplitParams(4, 32, 1), SplitParams(8, 64, 2), SplitParams(16, 64, 4)]
    result = autotune(w, x, 0.9, gpu_objective(engine), settings)
    assert all(t.score > 0 and not t.refused for t in result.trials)
    assert result.best_score == min(t.score for t in result.trials)


@pytest.mark.gpu
def test_a_module_loaded_again_launches_its_own_code(engine):
    """Every generated module has the same entry name: A, B, then A again must run A's weights."""
    from stcsim.kernels.run import launch
    from stcsim.sparsity.unstructured import SparseRT

    rng = np.random.default_rng()
    kernel, x = SparseRtKernel(), rng.uniform(-1, 1, (48, 40)).astype(np.float32)
    first, second = (kernel.prepare(rng.uniform(-1, 1, (32, 48)).astype(np.float32), x, SparseRT(), 0.9)
                     for _ in range(2))
    for operands in (first, second, first):
        result, _ = launch(kernel, engine, operands)
        np.testing.assert_allclose(result, kernel.reference(operands), rtol=0, atol=1e-5)

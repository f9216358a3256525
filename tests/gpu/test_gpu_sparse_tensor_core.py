"""The 2:4 mma.sp GEMM and the TVW SpMM on a real GPU (GpuEngine over CuPy), on fresh random pruned weights,
against numpy through each pattern's decode; also the sparse silicon table's measure step end to end."""

import pandas as pd
import pytest

from stcsim.experiments.sparse_silicon import build_cases, measure
from stcsim.kernels import GemmProblem, verify_gemm
from stcsim.kernels.descriptors.gemm_mma_sp import MMA_SP_KERNELS
from stcsim.kernels.descriptors.spmm_tvw import TVW_KERNELS

SHAPES = [
    pytest.param(GemmProblem(64, 64, 64), id="64x64x64"),
    pytest.param(GemmProblem(256, 196, 2304), id="256x196x2304"),
    pytest.param(GemmProblem(200, 136, 72), id="200x136x72"),
    pytest.param(GemmProblem(33, 17, 40), id="33x17x40"),
    pytest.param(GemmProblem(1, 1, 1), id="1x1x1"),
    pytest.param(GemmProblem(517, 263, 1000), id="517x263x1000"),
]
RUNS = [
    *(pytest.param(k, "nm:N=2,M=4", s, id=f"{k.block_tile}-{s}") for k in MMA_SP_KERNELS for s in (0.5, 0.8)),
    pytest.param(TVW_KERNELS[0], "tvw:G=64", 0.75, id="tvw-g64-75"),
    pytest.param(TVW_KERNELS[0], "tvw:G=64,nm_order=original", 0.6, id="tvw-g64-original"),
    pytest.param(TVW_KERNELS[1], "tvw:G=128", 0.9, id="tvw-g128-90"),
]



@pytest.mark.gpu
@pytest.mark.parametrize("p", SHAPES)
@pytest.mark.parametrize(("kernel", "pattern", "sparsity"), RUNS)
def test_kernel_matches_numpy_on_the_gpu(engine, kernel, pattern, sparsity, p):
    check = verify_gemm(kernel, engine, p, pattern=pattern, sparsity=sparsity)
    assert check.ok, str(check)
    assert check.stats["gpu_time_ms"] > 0


@pytest.mark.gpu
def test_silicon_table_measure_writes_checked_launches(engine, tmp_path):
    cases, _ = build_cases([("toy", "l0", GemmProblem(96, 80, 160))], 0.75, "gemm_mma_sp_*")
    measure(cases, str(tmp_path / "order.csv"))
    order = pd.read_csv(tmp_path / "order.csv")
    assert len(order) == 2 * len(cases) and (order["rel_error"] < 1e-2).all()

"""CUDA Core Generic as the paper ran it: the per-column (csrmv) CSR SpMM on the simulator, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.harness.kernel_choice import choose_kernel
from stcsim.kernels import GemmProblem, get_kernel, kernels_for
from stcsim.kernels import verify_gemm as verify
from stcsim.kernels.descriptors.spmm_csrmv import CSRMV_KERNELS
from stcsim.kernels.ptx_info import entry_params
from stcsim.sparsity import get as get_pattern

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

SHAPES = [GemmProblem(64, 64, 64), GemmProblem(37, 19, 300), GemmProblem(1, 1, 1), GemmProblem(9, 1, 2048)]


@pytest.mark.parametrize("kernel", CSRMV_KERNELS, ids=lambda k: k.procedural_name)
def test_registered_with_the_csr_parameters_and_column_major_operands(kernel):
    assert kernel in kernels_for("unstructured")
    params = entry_params(kernel.ptx_path.read_text())[kernel.entry]
    assert [p.ptx_type for p in params] == ["u64"] * 5 + ["u32"] * 4
    p = GemmProblem(10, 7, 30)
    ops = kernel.prepare(np.ones((10, 30)), np.arange(210.0).reshape(30, 7), get_pattern("unstructured"), 0.5)
    assert ops["x"].shape == (7, 30) and ops["x"][1, 0] == 1.0  # X^T: column 1 of X is row 1
    assert ops["y"].shape == (7, 10)
    pointers = dict.fromkeys(("row_ptr", "col_idx", "values", "x", "y"), 0)
    assert kernel.args(ops, pointers)[-4:] == [10, 7, 30, 10]  # M, N, ldx = K, ldy = M
    c = kernel.columns_per_warp
    assert kernel.launch_geometry(p) == ((-(-7 // c), 3, 1), (32, 4, 1), 0)


@pytest.mark.parametrize("sparsity", [0.0, 0.96])
@pytest.mark.parametrize("p", SHAPES, ids=str)
@pytest.mark.parametrize("kernel", CSRMV_KERNELS, ids=lambda k: k.procedural_name)
def test_matches_numpy(kernel, p, sparsity):
    check = verify(kernel, Engine(), p, pattern="unstructured", sparsity=sparsity)  # fresh random operands
    assert check.ok, str(check)


def test_the_cuda_core_choice_keeps_the_csr_family_and_a_fixed_selector_names_this_one():
    name = CSRMV_KERNELS[0].procedural_name
    pattern = get_pattern("unstructured")
    p = GemmProblem(64, 49, 576)
    assert choose_kernel(p, pattern, 0.96, "v100", "cuda-core").kernel.startswith("spmm_csr_f32_f32")
    assert choose_kernel(p, pattern, 0.96, "v100", f"fixed:{name}").kernel == name
    assert get_kernel(name) is CSRMV_KERNELS[0]

"""The SparseRT descriptor (paper 003) in the kernel protocol, the registry and the harness's choice."""

import numpy as np
import pytest

from stcsim.harness.kernel_choice import choose_kernel, math_units
from stcsim.kernels import GemmProblem, get_kernel, kernels_for
from stcsim.kernels.codegen.sparsert_plan import SplitParams
from stcsim.kernels.descriptors.spmm_sparsert import SparseRtKernel
from stcsim.kernels.protocol import GeneratedKernel, ptx_for
from stcsim.kernels.run import launch
from stcsim.sim import Engine
from stcsim.sparsity import get
from stcsim.sparsity.unstructured import SparseRT

PATTERN = SparseRT()


@pytest.fixture(scope="module")
def engine():
    return Engine("h100")


def test_the_kernel_is_the_sparsert_patterns_and_goes_through_the_generic_launch(engine):
    kernel = kernels_for("sparsert")
    assert kernel == (SparseRtKernel(),) and isinstance(kernel[0], GeneratedKernel)
    assert all(k.pattern_name != "sparsert" for k in kernels_for("unstructured"))
    assert get_kernel(kernel[0].procedural_name) is kernel[0]
    assert f".entry {kernel[0].entry}(" in kernel[0].ptx_path.read_text()
    assert math_units(kernel[0].procedural_name) == "cuda-core"
    rng = np.random.default_rng()
    w, x = rng.uniform(-1, 1, (24, 40)).astype(np.float32), rng.uniform(-1, 1, (40, 50)).astype(np.float32)
    operands = kernel[0].prepare(w, x, PATTERN, 0.9)
    assert ptx_for(kernel[0], operands) == kernel[0].generated_ptx(operands)
    result, _ = launch(kernel[0], engine, operands)
    np.testing.assert_allclose(result, kernel[0].reference(operands), rtol=0, atol=1e-5)
    stats = kernel[0].generation_stats(operands)
    assert stats["codegen_weights"] == "const" and stats["codegen_ptx_lines"] > 50


def test_the_harness_chooses_the_generator_for_sparsert():
    choice = choose_kernel(GemmProblem(64, 196, 64), get("sparsert"), 0.9, "h100")
    assert choice.kernel == SparseRtKernel().procedural_name and choice.fallback == ""


def test_problems_and_patterns_it_cannot_run_are_refused():
    ok, why = SparseRtKernel(SplitParams(32, 128, 8)).can_implement(GemmProblem(64, 64, 64), PATTERN)
    assert not ok and "static shared" in why
    ok, why = SparseRtKernel().can_implement(GemmProblem(64, 64, 64), get("unstructured"))
    assert not ok and "sparsert" in why

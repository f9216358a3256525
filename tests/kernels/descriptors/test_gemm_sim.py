"""Every kernel of the set on the simulator against numpy (skipped until stcsim.sim.Engine exists)."""

import pytest

from stcsim.kernels import GEMM_KERNELS, GemmProblem, verify_gemm

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

SHAPES = [
    pytest.param(GemmProblem(64, 64, 64), id="64x64x64"),
    pytest.param(GemmProblem(256, 256, 256), id="256x256x256", marks=pytest.mark.slow),
    pytest.param(GemmProblem(200, 136, 72), id="200x136x72"),
    pytest.param(GemmProblem(33, 17, 40), id="33x17x40"),
]


@pytest.mark.parametrize("p", SHAPES)
@pytest.mark.parametrize("kernel", GEMM_KERNELS, ids=lambda k: k.procedural_name)
def test_kernel_matches_numpy_on_the_simulator(kernel, p):
    check = verify_gemm(kernel, Engine(), p)
    assert check.ok, str(check)

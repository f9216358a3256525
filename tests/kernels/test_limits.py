"""The checks every can_implement makes: pattern, non-empty problem, grid limits, 32-bit indices."""

from stcsim.kernels import GemmProblem, get_kernel
from stcsim.kernels.limits import check_launch, check_problem
from stcsim.sparsity import get


def test_check_problem_names_the_reason():
    p = GemmProblem(8, 8, 8)
    assert check_problem(p, (1, 1, 1), {"A": 64}) == (True, "")
    assert check_problem(GemmProblem(0, 8, 8), (1, 1, 1), {}) == (False, "M, N, K must be >= 1, got 0x8x8")
    assert "exceeds the CUDA grid limits" in check_problem(p, (1, 65536, 1), {})[1]
    assert "exceeds the CUDA grid limits" in check_problem(p, (2**31, 1, 1), {})[1]
    assert check_problem(p, (1, 1, 1), {"A": 64, "X": 2**31}) == (
        False,
        "X has 2147483648 elements; the kernel indexes with 32-bit integers",
    )


def test_check_launch_asks_the_pattern_first_then_the_grid_of_the_kernel():
    kernel = get_kernel("gemm_naive_f32_f32_tile16x16x1")
    grids = []

    def extents(grid):
        grids.append(grid)
        return {"A": 2**31}

    ok, reason = check_launch(kernel, GemmProblem(32, 48, 8), get("nm:N=2,M=4"), extents)
    assert not ok and "dense" in reason and grids == []
    ok, reason = check_launch(kernel, GemmProblem(32, 48, 8), get("dense"), extents)
    assert not ok and reason.startswith("A has 2147483648 elements") and grids == [(3, 2, 1)]

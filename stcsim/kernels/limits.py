"""Problem checks shared by the sparse kernel descriptors: CUDA grid limits and 32-bit element indices."""

from __future__ import annotations

from collections.abc import Mapping

from stcsim.kernels.problem import GemmProblem
from stcsim.kernels.protocol import Dim3

INT32_MAX = 2**31 - 1
GRID_YZ_MAX = 65535


def check_problem(p: GemmProblem, grid: Dim3, extents: Mapping[str, int]) -> tuple[bool, str]:
    """Whether a kernel with 32-bit indices runs problem p on `grid`, given the elements of every operand
    array (`extents`, by name), and why not."""
    if min(p.m, p.n, p.k) < 1:
        return False, f"M, N, K must be >= 1, got {p}"
    if max(grid[1], grid[2]) > GRID_YZ_MAX or grid[0] > INT32_MAX:
        return False, f"grid {grid} exceeds the CUDA grid limits"
    for name, elements in extents.items():
        if elements > INT32_MAX:
            return False, f"{name} has {elements} elements; the kernel indexes with 32-bit integers"
    return True, ""

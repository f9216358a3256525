"""What every kernel descriptor checks before it runs a problem: its pattern, a non-empty problem, the CUDA
grid limits and 32-bit element indices. One place, so every `can_implement` refuses the same way."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from stcsim.kernels.problem import GemmProblem
from stcsim.kernels.protocol import Dim3, Kernel
from stcsim.sparsity.base import Pattern

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


def check_launch(
    kernel: Kernel, p: GemmProblem, pattern: Pattern, extents: Callable[[Dim3], Mapping[str, int]]
) -> tuple[bool, str]:
    """`can_implement` of a kernel whose only limits are these: `kernel.supports(pattern)`, a batch of one
    unless the kernel is ``batched`` (strided-batched, grid z = batch), then check_problem on the kernel's
    grid for p with `extents(grid)` (the elements of every operand array)."""
    ok, reason = kernel.supports(pattern)
    if not ok:
        return False, reason
    if p.batch > 1 and not getattr(kernel, "batched", False):
        return False, f"{kernel.procedural_name} has no batch dimension (a batch of {p.batch} GEMMs)"
    grid, _, _ = kernel.launch_geometry(p)
    return check_problem(p, grid, extents(grid))

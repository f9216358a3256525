"""What the sparse kernel descriptors share: the problem checks behind `can_implement`, and device arrays
that are never empty (a pruned matrix may keep nothing, but every operand needs a device buffer)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from stcsim.kernels.gemm import GemmKernel
from stcsim.kernels.problem import GemmProblem
from stcsim.kernels.protocol import Dim3

INT32_MAX = 2**31 - 1
GRID_YZ_MAX = 65535
FP32_TOLERANCE = 1e-5
"""Largest accepted relative error of the fp32 kernels (docs/kernels.md)."""


def launch_refusal(problem: GemmProblem, grid: Dim3, extents: Mapping[str, int]) -> str:
    """Why a kernel cannot run `problem` with this grid when its operands hold `extents` elements (by name),
    indexed with 32-bit integers; the empty string when it can."""
    if min(problem.m, problem.n, problem.k) < 1:
        return f"M, N, K must be >= 1, got {problem}"
    if max(grid[1], grid[2]) > GRID_YZ_MAX or grid[0] > INT32_MAX:
        return f"grid {grid} exceeds the CUDA grid limits"
    for name, elements in extents.items():
        if elements > INT32_MAX:
            return f"{name} has {elements} elements; the kernel indexes with 32-bit integers"
    return ""


def check_simt_f32(dense: GemmKernel, owner: str) -> None:
    """ValueError unless `dense` is an fp32 SIMT GEMM, the kernel whose tiles `owner` (a class name) runs."""
    if dense.algorithm != "simt" or dense.layout.a_dtype != "float32":
        raise ValueError(f"{owner} runs the tiles of the fp32 SIMT GEMM, not {dense.procedural_name}")


def nonempty(array: np.ndarray) -> np.ndarray:
    """`array` as it is, or a single zero of its dtype when it has no element (a buffer the kernel is told
    holds nothing, so never reads)."""
    arr = np.asarray(array)
    return arr if arr.size else np.zeros(1, dtype=arr.dtype)

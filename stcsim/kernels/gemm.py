"""The GEMM kernel descriptor: one lifecycle (CUTLASS style) for every kernel of the set.

A descriptor names its kernel, says which problems it can run, lays out the operands, gives the launch
geometry and the argument list, and computes the numpy reference. Every kernel of the set computes
C = A @ B and takes the parameters (A, B, C, M, N, K, lda, ldb, ldc): three 64-bit pointers then six 32-bit
integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.paths import PTX_DIR
from stcsim.kernels.problem import GemmProblem, TileShape, ceil_div

_INT32_MAX = 2**31 - 1
_GRID_YZ_MAX = 65535
_TOLERANCE = {"float16": 1e-2, "float32": 1e-5}

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class GemmKernel:
    """Descriptor of one GEMM kernel compiled into the PTX of `ptx_file`.

    algorithm: naive | simt | wmma_global | wmma | mma (procedural-name token).
    block_tile: the C tile of one thread block and its k step. threads: the thread-block shape.
    warp_tile / thread_tile: (m, n) of C computed by one warp / one thread, where the algorithm has them.
    instruction: the math instruction (PTX opcode family) of the inner loop.
    stages: shared-memory pipeline depth. dynamic_shared_bytes: dynamic shared memory per block (static
    `.shared` arrays are declared in the PTX itself).
    """

    algorithm: str
    layout: OperandLayout
    block_tile: TileShape
    threads: Dim3
    ptx_file: str
    instruction: str
    warp_tile: tuple[int, int] | None = None
    thread_tile: tuple[int, int] | None = None
    stages: int = 1
    dynamic_shared_bytes: int = 0
    summary: str = ""

    @property
    def procedural_name(self) -> str:
        """Name that says algorithm, data types and tiles, e.g. gemm_wmma_f16_f32_tile64x64x32_warp32x32."""
        parts = ["gemm", self.algorithm, self.layout.type_tag, f"tile{self.block_tile}"]
        if self.warp_tile is not None:
            parts.append("warp{}x{}".format(*self.warp_tile))
        if self.thread_tile is not None:
            parts.append("thread{}x{}".format(*self.thread_tile))
        if self.stages > 1:
            parts.append(f"stage{self.stages}")
        return "_".join(parts)

    @property
    def entry(self) -> str:
        """Name of the `.entry` in the PTX (the procedural name)."""
        return self.procedural_name

    @property
    def ptx_path(self) -> Path:
        """Path of the committed PTX that holds the entry."""
        return PTX_DIR / self.ptx_file

    @property
    def tolerance(self) -> float:
        """Largest accepted max|C - ref| / max|ref| for this kernel's input type."""
        return _TOLERANCE[self.layout.a_dtype]

    def can_implement(self, p: GemmProblem) -> tuple[bool, str]:
        """Whether the kernel runs problem p correctly, and why not if it does not."""
        if min(p.m, p.n, p.k) < 1:
            return False, f"M, N, K must be >= 1, got {p}"
        grid, _, _ = self.launch_geometry(p)
        if max(grid[1], grid[2]) > _GRID_YZ_MAX or grid[0] > _INT32_MAX:
            return False, f"grid {grid} exceeds the CUDA grid limits"
        lay = self.layout
        extents = {"A": p.m * lay.lda(p), "B": p.k * lay.ldb(p), "C": p.m * lay.ldc(p)}
        for name, elements in extents.items():
            if elements > _INT32_MAX:
                return False, f"{name} has {elements} elements; the kernel indexes with 32-bit integers"
        return True, ""

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes): one thread block per block tile of C."""
        grid = (ceil_div(p.n, self.block_tile.n), ceil_div(p.m, self.block_tile.m), 1)
        return grid, self.threads, self.dynamic_shared_bytes

    def args(self, p: GemmProblem, a_ptr: int, b_ptr: int, c_ptr: int) -> list[int]:
        """Kernel arguments in `.param` order: A, B, C, M, N, K, lda, ldb, ldc."""
        lay = self.layout
        return [a_ptr, b_ptr, c_ptr, p.m, p.n, p.k, lay.lda(p), lay.ldb(p), lay.ldc(p)]

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """float64 product of the operands rounded to the kernel's input types (what the kernel sees)."""
        a64 = np.asarray(a).astype(self.layout.a_dtype).astype(np.float64)
        b64 = np.asarray(b).astype(self.layout.b_dtype).astype(np.float64)
        return a64 @ b64

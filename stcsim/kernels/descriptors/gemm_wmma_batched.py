"""The tiled WMMA GEMM as strided-batched launches (ptx_kernels/gemm_wmma_batched.cu): one launch runs
``batch`` GEMMs of one shape, blockIdx.z the batch index, as cublasGemmStridedBatchedEx runs attention's
per-head score and context GEMMs on the V100 and A100 (the Hopper ones:
stcsim.kernels.descriptors.gemm_wgmma).

``prepare`` takes 3-D operands (batch x M x K, batch x K x N) or 2-D ones (a batch of one) and lays out ``A``
(batch x M x K fp16), ``B`` (batch x K x N fp16) and ``C`` (batch x M x N fp32, poisoned), each matrix right
after the previous one (strides M x K, K x N, M x N elements); the parameters are A, B, C, M, N, K, lda, ldb,
ldc and the three 64-bit strides. The tiles are gemm_wmma_tiles.cu's, unsplit (the grid's z is the batch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import OperandArray, Operands, poisoned
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, TileShape, ceil_div
from stcsim.kernels.protocol import Dim3, require
from stcsim.sparsity.base import Pattern


def batched_operands(weights: np.ndarray, activations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(batch x M x K, batch x K x N) from 3-D operands, or from 2-D ones as a batch of one; ValueError when
    they do not chain."""
    a, b = np.asarray(weights), np.asarray(activations)
    if a.ndim == 2 and b.ndim == 2:
        a, b = a[None], b[None]
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError(f"A {np.shape(weights)} @ B {np.shape(activations)}: need (batch, m, k) and "
                         "(batch, k, n), or 2-D (m, k) and (k, n)")
    return a, b


@dataclass(frozen=True)
class WmmaBatchedGemmKernel(CommittedPtx):
    """One block tile of the strided-batched WMMA GEMM (a `Kernel` with ``batched``)."""

    block_tile: TileShape
    warp_tile: tuple[int, int]
    threads: Dim3

    tolerance: ClassVar[float] = 1e-2
    ptx_file: ClassVar[str] = "gemm_wmma_batched.ptx"
    pattern_name: ClassVar[str] = "dense"
    instruction: ClassVar[str] = "wmma.mma.m16n16k16"
    batched: ClassVar[bool] = True

    @property
    def procedural_name(self) -> str:
        """e.g. gemm_wmma_batched_f16_f32_tile64x64x32_warp32x32."""
        return "gemm_wmma_batched_f16_f32_tile{}_warp{}x{}".format(self.block_tile, *self.warp_tile)

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """Dense operands only (the batched GEMMs multiply two activations: nothing to prune)."""
        if pattern.name == "dense":
            return True, ""
        return False, f"{self.procedural_name} implements dense, not {pattern.spec()}"

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """Any M, N, K >= 1 and batch within the grid's z; one matrix's elements within 32-bit indices (the
        batch offsets are 64-bit)."""
        return check_launch(self, p, pattern, lambda _: {"A": p.m * p.k, "B": p.k * p.n, "C": p.m * p.n})

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """A and B as fp16 (batch x M x K, batch x K x N), C poisoned (batch x M x N fp32)."""
        a, b = batched_operands(weights, activations)
        problem = GemmProblem(a.shape[1], b.shape[2], a.shape[2], a.shape[0])
        require(self, problem, pattern)
        arrays = (OperandArray("A", a.astype(np.float16)), OperandArray("B", b.astype(np.float16)),
                  poisoned("C", (problem.batch, problem.m, problem.n), np.float32))
        return Operands(problem, pattern, arrays)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes): one block per block tile of each C[z]."""
        grid = (ceil_div(p.n, self.block_tile.n), ceil_div(p.m, self.block_tile.m), p.batch)
        return grid, self.threads, 0

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """A, B, C, M, N, K, lda, ldb, ldc, strideA, strideB, strideC."""
        p = operands.problem
        return [pointers["A"], pointers["B"], pointers["C"], p.m, p.n, p.k, p.k, p.n, p.n,
                p.m * p.k, p.k * p.n, p.m * p.n]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """C: batch x M x N (M x N for a batch of one)."""
        c = outputs["C"]
        return c[0] if operands.problem.batch == 1 else c

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 A[z] @ B[z] of the fp16 device operands."""
        out = np.matmul(operands["A"].astype(np.float64), operands["B"].astype(np.float64))
        return out[0] if operands.problem.batch == 1 else out


WMMA_BATCHED_KERNELS: tuple[WmmaBatchedGemmKernel, ...] = tuple(
    WmmaBatchedGemmKernel(TileShape(bm, bn, 32), warp, (threads, 1, 1))
    for (bm, bn), warp, threads in (((128, 128), (64, 32), 256), ((64, 64), (32, 32), 128),
                                    ((64, 32), (32, 16), 128), ((32, 32), (16, 16), 128),
                                    ((64, 16), (16, 16), 128))
)
"""gemm_wmma_tiles.cu's five block tiles, strided-batched (family ``gemm_wmma_batched_f16_f32``)."""

"""CUDA Core Generic as a sparse library's column-major csrmm runs it: one CSR-vector SpMV per column of X
(ptx_kernels/spmm_csrmv.cu; issue 44 item 3).

Paper 001 ran its Generic bar on cuSPARSE's csrmm, which on silicon is several times slower than the
project's CSR SpMM (docs/reproductions.md, the library table); this kernel is the library-class baseline for
the bar "as the paper ran it", its measured speed next to cuSPARSE's in the same table. It is registered
before the CSR SpMM, so the per-shape choice of the ``cuda-core`` selector keeps the CSR family; a bar names
it (``fixed:spmm_csrmv_...``).

Parameters (row_ptr, col_idx, values, x, y, M, N, ldx, ldy): five 64-bit pointers then four 32-bit integers.
W is the unstructured pattern's CSRFormat (int32 row pointers and column ids, fp32 values); X (K x N) and
Y (M x N) are fp32 in column-major order (ldx = K, ldy = M).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import Operands
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, TileShape, ceil_div
from stcsim.kernels.protocol import Dim3, supports_family
from stcsim.kernels.sparse_support import FP32_TOLERANCE, csr_operands, csr_reference
from stcsim.sparsity.base import Pattern

WARP = 32
ESTIMATE_DEPTH = 64
"""Columns of K per step in the per-shape choice's short-K estimate (as the CSR SpMM: no k step)."""


@dataclass(frozen=True)
class CsrmvSpmmKernel(CommittedPtx):
    """Descriptor of the per-column CSR SpMM: `rows_per_block` warps per block, each owning one sparse row
    and `columns_per_warp` columns of X, one after another (a CSR-vector SpMV each)."""

    rows_per_block: int = 4
    columns_per_warp: int = 1
    ptx_file: str = "spmm_csrmv.ptx"
    instruction: str = "fma.rn.f32"
    summary: str = "column-major csrmm: a warp per (sparse row, column of X), lanes over the non-zeros"

    pattern_name: ClassVar[str] = "unstructured"
    tolerance: ClassVar[float] = FP32_TOLERANCE

    @property
    def block_tile(self) -> TileShape:
        """The rows x columns of Y one thread block computes (k: 1, no K staging)."""
        return TileShape(self.rows_per_block, self.columns_per_warp, 1)

    @property
    def estimate_depth(self) -> int:
        """Columns of K per step of the per-shape choice's short-K estimate (ESTIMATE_DEPTH)."""
        return ESTIMATE_DEPTH

    @property
    def procedural_name(self) -> str:
        """spmm_csrmv_f32_f32_tile<rows>x<columns>_warp1x<columns>: block and warp tiles of Y."""
        c = self.columns_per_warp
        return f"spmm_csrmv_f32_f32_tile{self.rows_per_block}x{c}_warp1x{c}"

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """The unstructured pattern (any sparsity): its CSR is what the kernel reads."""
        return supports_family(self, pattern)

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """The pattern, a non-empty problem, the CUDA grid limits and 32-bit indices into W, X and Y."""
        return check_launch(self, p, pattern, lambda _: {"W": p.m * p.k, "X": p.k * p.n, "Y": p.m * p.n})

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """W pruned to `sparsity` and encoded as CSR (fp32 values), X in column-major order (stored as the
        N x K row-major X^T), Y (column-major, stored as N x M) poisoned with NaN
        (sparse_support.csr_operands)."""
        return csr_operands(self, weights, activations, pattern, sparsity, column_major=True)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """Block (32, rows_per_block, 1); grid (ceil(N / columns_per_warp), ceil(M / rows_per_block), 1);
        no dynamic shared memory."""
        grid = (ceil_div(p.n, self.columns_per_warp), ceil_div(p.m, self.rows_per_block), 1)
        return grid, (WARP, self.rows_per_block, 1), 0

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """row_ptr, col_idx, values, x, y, M, N, ldx = K, ldy = M."""
        p = operands.problem
        ptrs = [pointers[name] for name in ("row_ptr", "col_idx", "values", "x", "y")]
        return [*ptrs, p.m, p.n, p.k, p.m]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The M x N result Y (the device's column-major N x M array, transposed)."""
        return np.ascontiguousarray(outputs["y"].T)

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X, W rebuilt from the device CSR through the pattern's decode."""
        return csr_reference(operands, column_major=True)

CSRMV_KERNELS: tuple[CsrmvSpmmKernel, ...] = (CsrmvSpmmKernel(columns_per_warp=1),
                                              CsrmvSpmmKernel(columns_per_warp=8))
"""The per-column CSR SpMMs (family ``spmm_csrmv_f32_f32``): one and eight columns per warp."""

"""The CUDA Core Generic kernel: CSR SpMM (cuSPARSE csrmm style, a warp per sparse row) for unstructured
pruning (ptx_kernels/spmm_csr.cu).

Parameters (row_ptr, col_idx, values, x, y, M, N, ldx, ldy): five 64-bit pointers then four 32-bit integers.
W is the unstructured pattern's CSRFormat (int32 row pointers and column ids, fp32 values), X (K x N) and
Y (M x N) are dense row-major fp32.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.sparse_support import FP32_TOLERANCE, csr_operands, csr_reference
from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import Operands
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, TileShape, ceil_div
from stcsim.kernels.protocol import Dim3, supports_family
from stcsim.sparsity.base import Pattern

WARP = 32
ESTIMATE_DEPTH = 64
"""Columns of K per step in the per-shape choice's short-K estimate (stcsim.harness.kernel_choice): the kernel
has no k step (it walks each row's non-zeros), its time grows with the non-zeros, so with K."""


class CsrSpmmBase(CommittedPtx):
    """What the CSR SpMM descriptors share (this kernel and the per-column csrmm, spmm_csrmv.py): the
    unstructured pattern, the CSR operands and the numpy reference, the parameters (row_ptr, col_idx, values,
    x, y, M, N, ldx, ldy) and 32-bit indices; `column_major` says how X and Y are laid out."""

    pattern_name: ClassVar[str] = "unstructured"
    tolerance: ClassVar[float] = FP32_TOLERANCE
    column_major: ClassVar[bool] = False

    @property
    def estimate_depth(self) -> int:
        """Columns of K per step of the per-shape choice's short-K estimate (ESTIMATE_DEPTH)."""
        return ESTIMATE_DEPTH

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """The unstructured pattern (any sparsity): its CSR is what the kernel reads."""
        return supports_family(self, pattern)  # type: ignore[arg-type]

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """The pattern, a non-empty problem, the CUDA grid limits and 32-bit indices into W, X and Y."""
        return check_launch(self, p, pattern,  # type: ignore[arg-type]
                            lambda _: {"W": p.m * p.k, "X": p.k * p.n, "Y": p.m * p.n})

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """W pruned to `sparsity` and encoded as CSR (fp32 values), X in fp32, Y poisoned with NaN, X and Y
        row-major or column-major (sparse_support.csr_operands)."""
        return csr_operands(self, weights, activations, pattern, sparsity,  # type: ignore[arg-type]
                            column_major=self.column_major)

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """row_ptr, col_idx, values, x, y, M, N, ldx, ldy (ldx = ldy = N row-major; ldx = K, ldy = M
        column-major)."""
        p = operands.problem
        ptrs = [pointers[name] for name in ("row_ptr", "col_idx", "values", "x", "y")]
        return [*ptrs, p.m, p.n, *((p.k, p.m) if self.column_major else (p.n, p.n))]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The M x N result Y (a column-major Y, stored N x M, transposed)."""
        return np.ascontiguousarray(outputs["y"].T) if self.column_major else outputs["y"]

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X, W rebuilt from the device CSR through the pattern's decode."""
        return csr_reference(operands, self.column_major)


@dataclass(frozen=True)
class CsrSpmmKernel(CsrSpmmBase):
    """Descriptor of the CSR SpMM: `rows_per_block` warps per block, each owning one sparse row and a strip
    of 32 * `columns_per_lane` columns of Y (lane l computes columns l, l + 32, ...)."""

    rows_per_block: int = 4
    columns_per_lane: int = 2
    ptx_file: str = "spmm_csr.ptx"
    instruction: str = "fma.rn.f32"
    summary: str = "a warp per sparse row, (column, value) pairs broadcast by shfl, rows of X gathered"

    @property
    def strip(self) -> int:
        """Columns of Y one warp computes."""
        return WARP * self.columns_per_lane

    @property
    def block_tile(self) -> TileShape:
        """The rows x columns of Y one thread block computes (k: 1, no K staging)."""
        return TileShape(self.rows_per_block, self.strip, 1)

    @property
    def procedural_name(self) -> str:
        """spmm_csr_f32_f32_tile<rows>x<strip>_warp1x<strip>: block and warp tiles of Y."""
        return f"spmm_csr_f32_f32_tile{self.rows_per_block}x{self.strip}_warp1x{self.strip}"

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """Block (32, rows_per_block, 1); grid (ceil(N / strip), ceil(M / rows_per_block), 1); no dynamic
        shared memory."""
        grid = (ceil_div(p.n, self.strip), ceil_div(p.m, self.rows_per_block), 1)
        return grid, (WARP, self.rows_per_block, 1), 0

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

from dataclasses import dataclass
from typing import ClassVar

from stcsim.kernels.descriptors.spmm_csr import WARP, CsrSpmmBase
from stcsim.kernels.problem import GemmProblem, TileShape, ceil_div
from stcsim.kernels.protocol import Dim3


@dataclass(frozen=True)
class CsrmvSpmmKernel(CsrSpmmBase):
    """Descriptor of the per-column CSR SpMM: `rows_per_block` warps per block, each owning one sparse row
    and `columns_per_warp` columns of X, one after another (a CSR-vector SpMV each); X and Y column-major."""

    rows_per_block: int = 4
    columns_per_warp: int = 1
    ptx_file: str = "spmm_csrmv.ptx"
    instruction: str = "fma.rn.f32"
    summary: str = "column-major csrmm: a warp per (sparse row, column of X), lanes over the non-zeros"

    column_major: ClassVar[bool] = True

    @property
    def block_tile(self) -> TileShape:
        """The rows x columns of Y one thread block computes (k: 1, no K staging)."""
        return TileShape(self.rows_per_block, self.columns_per_warp, 1)

    @property
    def procedural_name(self) -> str:
        """spmm_csrmv_f32_f32_tile<rows>x<columns>_warp1x<columns>: block and warp tiles of Y."""
        c = self.columns_per_warp
        return f"spmm_csrmv_f32_f32_tile{self.rows_per_block}x{c}_warp1x{c}"

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """Block (32, rows_per_block, 1); grid (ceil(N / columns_per_warp), ceil(M / rows_per_block), 1);
        no dynamic shared memory."""
        grid = (ceil_div(p.n, self.columns_per_warp), ceil_div(p.m, self.rows_per_block), 1)
        return grid, (WARP, self.rows_per_block, 1), 0

CSRMV_KERNELS: tuple[CsrmvSpmmKernel, ...] = (CsrmvSpmmKernel(columns_per_warp=1),
                                              CsrmvSpmmKernel(columns_per_warp=8))
"""The per-column CSR SpMMs (family ``spmm_csrmv_f32_f32``): one and eight columns per warp."""

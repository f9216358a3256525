"""The Shfl-BW SpMM of paper 000 on the Tensor Cores: the sm_80 kernel (ptx_kernels/spmm_shflbw.cu,
gathered_mma.cuh: cp.async, ldmatrix, mma.sync m16n8k16) and its sm_70 / sm_75 variant
(ptx_kernels/spmm_shflbw_wmma.cu: WMMA m16n16k16, synchronous global -> shared copies), which the V100 and
the T4 run.

W (M x K) is pruned and encoded by the ``shflbw`` pattern (stcsim.sparsity.shflbw): groups of V rows (after
the row permutation) that keep the same columns. The kernel reads the format's row_indices (int32, one per
stored row, group-major; ids >= M are padding rows), col_ptr and col_indices (int32) and the stitched values
as A: one fp16 row per stored row, the group's kept values left-aligned, zero padded to lda (a multiple of 8).
X (K x N) is fp16 row-major with ldb = N rounded up to 8; D (M x N) fp32, ldc = N.

Parameters (A, B, C, row_indices, col_ptr, col_indices, M, N, rows, V, lda, ldb, ldc), both kernels: six
64-bit pointers then seven 32-bit integers. The grid covers round_up(M, 64) stored rows (V = 32 or 64 stores
round_up(M, V)); blocks past the stored rows exit at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.sparse_support import (
    GATHERED_TILES,
    WMMA_GATHERED_TILES,
    GatheredTile,
    WmmaGatheredTile,
    nonempty,
    stack_condensed,
    unstack_condensed,
)
from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import OperandArray, Operands, poisoned
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, round_up
from stcsim.kernels.protocol import Dim3, require
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.shflbw import ShflBW, ShflBWFormat

GROUP_HEIGHTS = (32, 64)
"""The V the kernel takes (paper 000's experiments); the grid is sized for groups of at most 64 rows."""
_LAYOUT = OperandLayout(a_dtype="float16", b_dtype="float16", align_ab=8)


@dataclass(frozen=True)
class ShflBWSpmmKernel(CommittedPtx):
    """Descriptor of the Shfl-BW SpMM with one gathered-B tile (a `Kernel`); V must be a multiple of its
    block_m. The sm_80 kernel; ShflBWWmmaSpmmKernel is its sm_70 / sm_75 variant (same operands and
    parameters, another PTX file and tile)."""

    tile: GatheredTile | WmmaGatheredTile

    pattern_name: ClassVar[str] = "shflbw"
    tolerance: ClassVar[float] = 1e-2
    ptx_file: ClassVar[str] = "spmm_shflbw.ptx"
    instruction: ClassVar[str] = "mma.sync.m16n8k16"
    summary: ClassVar[str] = "X rows gathered per V-row group into shared memory, mma.sync, rows written back"
    name_prefix: ClassVar[str] = "spmm_shflbw"

    @property
    def procedural_name(self) -> str:
        """e.g. spmm_shflbw_f16_f32_tile64x128x32_warp32x64_stage3."""
        return f"{self.name_prefix}_{_LAYOUT.type_tag}_{self.tile.name}"

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """Shfl-BW with V = 32 or 64, a multiple of the block's rows (a block never straddles two groups)."""
        name = self.procedural_name
        if not isinstance(pattern, ShflBW):
            return False, f"{name} implements the shflbw pattern, not {pattern.spec()}"
        if pattern.V not in GROUP_HEIGHTS or pattern.V % self.tile.block_m:
            return False, f"{name} takes shflbw with V in {GROUP_HEIGHTS} and a multiple of " \
                          f"{self.tile.block_m}, not V={pattern.V}"
        return True, ""

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """The pattern, a non-empty problem, the CUDA grid limits and 32-bit indices into A, X and D (any M, N
        and K: ragged shapes are zero-filled in the kernel)."""
        rows = round_up(p.m, max(GROUP_HEIGHTS))
        extents = {"A": rows * round_up(p.k, 8), "B": p.k * _LAYOUT.ldb(p), "C": p.m * p.n}
        return check_launch(self, p, pattern, lambda _: extents)

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """Prune and encode W with the shflbw pattern, stack its groups' stitched blocks as A (fp16), X as
        fp16 (ldb padded to 8), the format's int32 index arrays as they are; D poisoned with NaN."""
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        w = np.asarray(weights)
        fmt: ShflBWFormat = pattern.encode(w, pattern.prune(w, sparsity))
        arrays = (
            OperandArray("A", stack_condensed(_blocks(fmt))),
            OperandArray("B", _LAYOUT.pack_b(np.asarray(activations))),
            poisoned("C", _LAYOUT.c_shape(problem), _LAYOUT.c_dtype),
            OperandArray("row_indices", fmt.row_indices.astype(np.int32)),
            OperandArray("col_ptr", fmt.col_ptr.astype(np.int32)),
            OperandArray("col_indices", nonempty(fmt.col_indices.astype(np.int32))),
        )
        return Operands(problem, pattern, arrays)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes): a block per block_m stored rows and block_n columns of D."""
        return self.tile.geometry(p.n, round_up(p.m, max(GROUP_HEIGHTS)))

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """A, B, C, row_indices, col_ptr, col_indices, M, N, rows, V, lda, ldb, ldc."""
        p = operands.problem
        names = ("A", "B", "C", "row_indices", "col_ptr", "col_indices")
        rows, lda = len(operands["row_indices"]), operands["A"].shape[1]
        v = rows // (len(operands["col_ptr"]) - 1)
        return [*(pointers[n] for n in names), p.m, p.n, rows, v, lda, _LAYOUT.ldb(p), _LAYOUT.ldc(p)]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The m x n result from the C buffer."""
        return _LAYOUT.unpack_c(outputs["C"], operands.problem)

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X, W rebuilt from the device arrays (A, row_indices, col_ptr, col_indices)
        through the shflbw decode."""
        p = operands.problem
        row_indices, col_ptr = operands["row_indices"], operands["col_ptr"]
        v = len(row_indices) // (len(col_ptr) - 1)
        counts = np.diff(col_ptr)
        values = unstack_condensed(operands["A"], [(v, int(c)) for c in counts])
        col_indices = operands["col_indices"][: int(col_ptr[-1])]
        fmt = ShflBWFormat((p.m, p.k), v, row_indices, col_ptr, col_indices, values)
        w = operands.pattern.decode(fmt).astype(np.float64)
        return w @ operands["B"][:, : p.n].astype(np.float64)


def _blocks(fmt: ShflBWFormat) -> list[np.ndarray]:
    """Each group's stitched V x count block."""
    counts = np.diff(fmt.col_ptr)
    starts = fmt.V * np.concatenate(([0], np.cumsum(counts)))
    return [fmt.values[s : s + fmt.V * c].reshape(fmt.V, c) for s, c in zip(starts, counts, strict=False)]


@dataclass(frozen=True)
class ShflBWWmmaSpmmKernel(ShflBWSpmmKernel):
    """The Shfl-BW SpMM on the sm_70 / sm_75 Tensor Cores (ptx_kernels/spmm_shflbw_wmma.cu): the tiled WMMA
    GEMM's structure (gemm_wmma_tiles.cu, unsplit) with X rows gathered per group, synchronous copies, WMMA
    m16n16k16. Same operands, parameters and grid rows as ShflBWSpmmKernel; static shared memory."""

    tile: WmmaGatheredTile

    ptx_file: ClassVar[str] = "spmm_shflbw_wmma.ptx"
    instruction: ClassVar[str] = "wmma.mma.m16n16k16"
    summary: ClassVar[str] = "X rows gathered per V-row group into shared memory, WMMA, rows written back"
    name_prefix: ClassVar[str] = "spmm_shflbw_wmma"


SHFLBW_KERNELS: tuple[ShflBWSpmmKernel, ...] = tuple(ShflBWSpmmKernel(t) for t in GATHERED_TILES)
"""The Shfl-BW SpMM with 32-row blocks (V = 32, 64) and 64-row blocks (V = 64)."""

SHFLBW_WMMA_KERNELS: tuple[ShflBWWmmaSpmmKernel, ...] = tuple(
    ShflBWWmmaSpmmKernel(t) for t in WMMA_GATHERED_TILES
)
"""The WMMA Shfl-BW SpMM (V100, T4): 32 x 64 and 32 x 32 blocks (V = 32, 64), 64 x 64 blocks (V = 64)."""

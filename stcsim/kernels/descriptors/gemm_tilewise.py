"""The tile-wise (TW) and tile-element-wise (TEW) GEMMs of paper 002 on the Tensor Cores
(ptx_kernels/gemm_tilewise.cu on gathered_mma.cuh), one fused launch each.

W (M x K) is pruned and encoded by the ``tw`` or ``tew`` pattern (stcsim.sparsity.tilewise / tew): kept rows
in tiles of G, each tile with its own kept reduction columns, in CTO format. The kernel reads the CTO arrays:
``cto_rows`` (CTO_n, int32, the n_kept row offsets closed by M - n_kept), ``cto_k_lengths`` and
``cto_k_offsets`` (CTO_k, int32, n_tiles x max_len, zero padded; at least 1 x 1) and the condensed values as A
(one fp16 row per kept row, its tile's values left-aligned, zero padded to lda, a multiple of 8). TEW adds its
element-wise remainder as (row, column, value) lists, the non-zeros of TW's kept rows first, indexed by
condensed row (``ew_kept_ptr``), then those of its pruned rows, indexed by D row (``ew_row_ptr``): int32
``ew_row_idx``, ``ew_col_idx``, fp16 ``ew_values``, added on the CUDA cores in the same launch.
X (K x N) is fp16 row-major with ldb = N rounded up to 8; D (M x N) fp32, ldc = N; rows TW prunes are written
as zeros (plus TEW's remainder).

Parameters (A, B, C, cto_rows, cto_k_lengths, cto_k_offsets, M, N, n_kept, G, max_len, lda, ldb, ldc
[, ew_kept_ptr, ew_row_ptr, ew_row_idx, ew_col_idx, ew_values]). The grid covers M rows; the blocks past the
kept rows write the rows TW pruned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.sparse_support import (
    GATHERED_TILES,
    GatheredTile,
    nonempty,
    stack_condensed,
    unstack_condensed,
)
from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import OperandArray, Operands, poisoned
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, ceil_div, round_up
from stcsim.kernels.protocol import Dim3, require
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.csr import CSRFormat
from stcsim.sparsity.tew import TEWFormat, TileElementWise
from stcsim.sparsity.tilewise import CTO, TileWise, TWFormat

_LAYOUT = OperandLayout(a_dtype="float16", b_dtype="float16", align_ab=8)
_TW_ARRAYS = ("A", "B", "C", "cto_rows", "cto_k_lengths", "cto_k_offsets")
_EW_ARRAYS = ("ew_kept_ptr", "ew_row_ptr", "ew_row_idx", "ew_col_idx", "ew_values")


@dataclass(frozen=True)
class TileWiseGemmKernel(CommittedPtx):
    """Descriptor of the TW GEMM (``element_wise`` False) or the TEW GEMM (True) with one gathered-B tile (a
    `Kernel`); G must be a multiple of the tile's block_m."""

    tile: GatheredTile
    element_wise: bool = False

    tolerance: ClassVar[float] = 1e-2
    ptx_file: ClassVar[str] = "gemm_tilewise.ptx"
    instruction: ClassVar[str] = "mma.sync.m16n8k16"

    @property
    def pattern_name(self) -> str:
        """tew with the element-wise remainder, else tw."""
        return "tew" if self.element_wise else "tw"

    @property
    def summary(self) -> str:
        """One line for listings."""
        tw = "X rows gathered per tile via CTO_k, condensed W, D rows scattered via CTO_n"
        return f"{tw}; element-wise CSR remainder on CUDA cores" if self.element_wise else tw

    @property
    def procedural_name(self) -> str:
        """e.g. gemm_tilewise_f16_f32_tile64x128x32_warp32x64_stage3 (gemm_tew_... for TEW)."""
        algorithm = "tew" if self.element_wise else "tilewise"
        return f"gemm_{algorithm}_{_LAYOUT.type_tag}_{self.tile.name}"

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """tw (or tew) with G a multiple of the block's rows (a block never straddles two tiles)."""
        name = self.procedural_name
        kind = TileElementWise if self.element_wise else TileWise
        if not isinstance(pattern, kind):
            return False, f"{name} implements the {self.pattern_name} pattern, not {pattern.spec()}"
        if pattern.G % self.tile.block_m:
            return False, f"{name} takes G a multiple of {self.tile.block_m}, not G={pattern.G}"
        return True, ""

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """The pattern, a non-empty problem, the CUDA grid limits and 32-bit indices into A, X and D (any M, N
        and K: ragged shapes are zero-filled in the kernel)."""
        extents = {"A": p.m * round_up(p.k, 8), "B": p.k * _LAYOUT.ldb(p), "C": p.m * p.n}
        return check_launch(self, p, pattern, lambda _: extents)

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """Prune and encode W with the tw / tew pattern, lay out its CTO arrays (int32) and condensed tiles
        (A, fp16), TEW's remainder as one CSR (fp16 values), X as fp16 (ldb padded to 8);
        D poisoned with NaN."""
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        w = np.asarray(weights)
        fmt = pattern.encode(w, pattern.prune(w, sparsity))
        tw: TWFormat = fmt.tw if self.element_wise else fmt
        cto = tw.cto
        n_kept = len(cto.row_offsets)
        offsets = np.zeros((max(1, cto.n_tiles), max(1, cto.k_offsets.shape[1])), dtype=np.int32)
        offsets[: cto.n_tiles, : cto.k_offsets.shape[1]] = cto.k_offsets
        arrays = [
            OperandArray("A", stack_condensed(_tiles(tw))),
            OperandArray("B", _LAYOUT.pack_b(np.asarray(activations))),
            poisoned("C", _LAYOUT.c_shape(problem), _LAYOUT.c_dtype),
            OperandArray("cto_rows", np.append(cto.row_offsets, problem.m - n_kept).astype(np.int32)),
            OperandArray("cto_k_lengths", nonempty(cto.k_lengths.astype(np.int32))),
            OperandArray("cto_k_offsets", offsets),
        ]
        if self.element_wise:
            kept = cto.row_offsets + np.arange(n_kept)
            arrays += _remainder_arrays(fmt.ew, kept, problem)
        return Operands(problem, pattern, tuple(arrays))

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes): a block per block_m rows of M (at most M rows are kept) and
        128 columns of D."""
        return self.tile.geometry(p.n, p.m)

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """A, B, C, cto_rows, cto_k_lengths, cto_k_offsets, M, N, n_kept, G, max_len, lda, ldb, ldc, then
        for TEW ew_kept_ptr, ew_row_ptr, ew_row_idx, ew_col_idx, ew_values."""
        p = operands.problem
        n_kept = len(operands["cto_rows"]) - 1
        max_len, lda = operands["cto_k_offsets"].shape[1], operands["A"].shape[1]
        scalars = [p.m, p.n, n_kept, operands.pattern.G, max_len, lda, _LAYOUT.ldb(p), _LAYOUT.ldc(p)]
        ew = [pointers[n] for n in _EW_ARRAYS] if self.element_wise else []
        return [*(pointers[n] for n in _TW_ARRAYS), *scalars, *ew]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The m x n result from the C buffer."""
        return _LAYOUT.unpack_c(outputs["C"], operands.problem)

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X, W rebuilt from the device arrays (CTO, A and for TEW the remainder's CSR)
        through the pattern's decode: the TW part plus the element-wise part."""
        p, G = operands.problem, operands.pattern.G
        n_kept = len(operands["cto_rows"]) - 1
        n_tiles = ceil_div(n_kept, G)
        lengths = operands["cto_k_lengths"][:n_tiles]
        cto = CTO(G, operands["cto_rows"][:n_kept], lengths, operands["cto_k_offsets"][:n_tiles])
        shapes = [(len(cto.tile_rows(t)), int(lengths[t])) for t in range(n_tiles)]
        tw = TWFormat((p.m, p.k), cto, unstack_condensed(operands["A"], shapes))
        fmt = tw
        if self.element_wise:
            fmt = TEWFormat((p.m, p.k), tw, _remainder_from_arrays(operands, G))
        w = operands.pattern.decode(fmt).astype(np.float64)
        return w @ operands["B"][:, : p.n].astype(np.float64)


def _tiles(tw: TWFormat) -> list[np.ndarray]:
    """Each tile's condensed rows x kept columns block."""
    blocks, start = [], 0
    for t in range(tw.cto.n_tiles):
        rows, cols = len(tw.cto.tile_rows(t)), int(tw.cto.k_lengths[t])
        blocks.append(tw.values[start : start + rows * cols].reshape(rows, cols))
        start += rows * cols
    return blocks


def _remainder_arrays(ew: tuple[CSRFormat, ...], kept: np.ndarray, p: GemmProblem) -> list[OperandArray]:
    """TEW's remainder (per-tile CSRs of G original rows) as the kernel reads it: every non-zero as
    (row, column, value), those of TW's kept rows first, then those of its pruned rows, each part by row;
    ew_kept_ptr indexes the first part by condensed row, ew_row_ptr the second by D row (kept rows empty)."""
    rows, cols, values = _entries(ew)
    is_kept = np.zeros(p.m, dtype=bool)
    is_kept[kept] = True
    order = np.concatenate([np.flatnonzero(is_kept[rows]), np.flatnonzero(~is_kept[rows])])
    per_row = np.bincount(rows, minlength=p.m)
    kept_ptr = np.concatenate(([0], np.cumsum(per_row[kept])))
    row_ptr = kept_ptr[-1] + np.concatenate(([0], np.cumsum(np.where(is_kept, 0, per_row))))
    return [
        OperandArray("ew_kept_ptr", kept_ptr.astype(np.int32)),
        OperandArray("ew_row_ptr", row_ptr.astype(np.int32)),
        OperandArray("ew_row_idx", nonempty(rows[order].astype(np.int32))),
        OperandArray("ew_col_idx", nonempty(cols[order].astype(np.int32))),
        OperandArray("ew_values", nonempty(values[order].astype(np.float16))),
    ]


def _entries(ew: tuple[CSRFormat, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, value) of every non-zero of the per-tile CSRs, by row."""
    rows, cols, values, first = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0)], 0
    for csr in ew:
        rows.append(first + np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr)))
        cols.append(np.asarray(csr.indices))
        values.append(np.asarray(csr.values))
        first += csr.shape[0]
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(values)


def _remainder_from_arrays(operands: Operands, G: int) -> tuple[CSRFormat, ...]:
    """Inverse of `_remainder_arrays` from the device arrays: one CSR per G original rows."""
    p = operands.problem
    nnz = int(operands["ew_row_ptr"][-1])
    rows, cols = operands["ew_row_idx"][:nnz], operands["ew_col_idx"][:nnz]
    dense = np.zeros((p.m, p.k), dtype=np.float16)
    mask = np.zeros((p.m, p.k), dtype=bool)
    dense[rows, cols] = operands["ew_values"][:nnz]
    mask[rows, cols] = True
    return tuple(CSRFormat.from_masked(dense[r : r + G], mask[r : r + G]) for r in range(0, p.m, G))


TILEWISE_KERNELS: tuple[TileWiseGemmKernel, ...] = tuple(TileWiseGemmKernel(t) for t in GATHERED_TILES)
"""The TW GEMM with 32-row blocks (G a multiple of 32) and 64-row blocks (G a multiple of 64)."""

TEW_KERNELS: tuple[TileWiseGemmKernel, ...] = tuple(TileWiseGemmKernel(t, True) for t in GATHERED_TILES)
"""The TEW GEMM (TW plus the CUDA-core remainder) with the same two tiles."""

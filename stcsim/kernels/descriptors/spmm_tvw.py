"""Tile-vector-wise (TVW, paper 002) SpMM: the tile-wise gather and scatter fused with the 2:4 mma.sp GEMM.

The weights W (``M x K``) are pruned and encoded by the ``tvw`` pattern (stcsim.sparsity.tvw): kept rows cut
into tiles of ``G`` rows, each tile with its own condensed list of reduction columns (padded to groups of
four) holding 2:4 values. One thread block row of the grid runs one tile (``G`` = the block tile's M): the
main loop of the 2:4 GEMM (ptx_kernels/mma_sp_gemm.cuh) reads the tile's compressed values and lane-order
metadata (as stcsim.kernels.descriptors.gemm_mma_sp lays them out), gathers the B row of each condensed column
through the tile's column list while staging B with cp.async (the paper's Load_A_Tile_with_Mask, our B being
its A), and scatters the tile's C rows to their original positions (Store_C_Tile_with_Mask).

Device arrays (ptx_kernels/spmm_tvw.cu), tiles in order:

* ``values`` fp16 and ``meta`` uint32: per tile ``rows_t x ksteps_t * 32`` and
  ``ceil(rows_t / 16) x ksteps_t x 32``, concatenated;
* ``tiles`` int32 ``n_tiles x 8``: row start, ``rows_t``, ``ksteps_t``, value start, metadata start, column
  start, 0, 0;
* ``rows`` int32: the original row of every condensed row; ``cols`` int32: per tile ``ksteps_t * 64`` B rows
  (the tile's condensed columns, padding slots pointing at row 0 with zero values);
* ``B`` (X, ``K x N`` fp16, ld padded to 8) and ``C`` (``M x N`` fp32), C zero-filled before the launch:
  rows no tile keeps are pruned whole and never written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.gemm_mma_sp import (
    KSTEP,
    LAYOUT,
    compressed_values,
    ksteps_of,
    lane_order_metadata,
    metadata_indices,
    shared_bytes,
)
from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import OperandArray, Operands
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, TileShape, ceil_div
from stcsim.kernels.protocol import Dim3, require
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.nm import NMFormat
from stcsim.sparsity.tilewise import CTO
from stcsim.sparsity.tvw import TVWFormat

TILE_FIELDS = 8
"""int32 words per tile in the ``tiles`` table (six used, padded to 32 bytes)."""


@dataclass(frozen=True)
class TileArrays:
    """The per-tile device arrays of one TVW weight matrix (see the module docstring)."""

    values: np.ndarray
    meta: np.ndarray
    tiles: np.ndarray
    rows: np.ndarray
    cols: np.ndarray


def lay_out_tiles(fmt: TVWFormat, slots: int) -> TileArrays:
    """The device arrays of a TVW format, its tile table padded with empty tiles (no rows, no k steps) to
    `slots` entries: the grid covers every tile M rows could make, the blocks of empty tiles do nothing."""
    values, meta, cols, table = [], [], [], []
    v_at = m_at = c_at = 0
    for t, tile in enumerate(fmt.tiles):
        rows_t, len_t = tile.shape
        ks = ksteps_of(len_t)
        tile_cols = np.zeros(ks * KSTEP, dtype=np.int32)
        tile_cols[:len_t] = fmt.cto.tile_columns(t)
        tile_values = compressed_values(tile.values, ks * KSTEP // 2).ravel()
        tile_meta = lane_order_metadata(tile.indices)[:, :ks].ravel()
        table.append([t * fmt.cto.G, rows_t, ks, v_at, m_at, c_at, 0, 0])
        values.append(tile_values)
        meta.append(tile_meta)
        cols.append(tile_cols)
        v_at, m_at, c_at = v_at + tile_values.size, m_at + tile_meta.size, c_at + tile_cols.size
    rows = fmt.cto.row_offsets + np.arange(len(fmt.cto.row_offsets), dtype=np.int32)
    table += [[0] * TILE_FIELDS] * (slots - len(table))
    return TileArrays(
        values=_nonempty(values, np.float16),
        meta=_nonempty(meta, np.uint32),
        tiles=np.asarray(table, dtype=np.int32),
        rows=_nonempty([rows.astype(np.int32)], np.int32),
        cols=_nonempty(cols, np.int32),
    )


def _nonempty(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """The parts concatenated, or one zero when there is nothing (every operand needs a device buffer)."""
    flat = np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)
    return flat if flat.size else np.zeros(1, dtype)


def format_of(shape: tuple[int, int], G: int, arrays: Mapping[str, np.ndarray]) -> TVWFormat:
    """The TVW format the device arrays hold (inverse of :func:`lay_out_tiles`, lengths rounded up to whole
    k steps: the extra condensed columns are padding slots of zero value)."""
    rows_all = arrays["rows"]
    columns, tiles, kept_rows = [], [], []
    for row_start, rows_t, ks, v_at, m_at, c_at, _, _ in arrays["tiles"].tolist():
        if rows_t == 0:
            continue
        lda = ks * KSTEP // 2
        vals = arrays["values"][v_at : v_at + rows_t * lda].reshape(rows_t, lda // 2, 2)
        meta = arrays["meta"][m_at : m_at + ceil_div(rows_t, 16) * ks * 32].reshape(-1, ks, 32)
        idx = metadata_indices(meta)[:rows_t]
        tiles.append(NMFormat((rows_t, ks * KSTEP), 2, 4, vals, idx))
        columns.append(arrays["cols"][c_at : c_at + ks * KSTEP])
        kept_rows.append(rows_all[row_start : row_start + rows_t])
    rows = np.concatenate(kept_rows) if kept_rows else np.zeros(0, np.int32)
    return TVWFormat(shape, CTO.build(rows, columns, G), tuple(tiles))


@dataclass(frozen=True)
class TvwSpmmKernel(CommittedPtx):
    """Descriptor of the fused TVW SpMM for tiles of ``G`` = block-tile M rows (a `Kernel`)."""

    block_tile: TileShape
    warp_tile: tuple[int, int]
    stages: int
    threads: Dim3 = (128, 1, 1)

    pattern_name: ClassVar[str] = "tvw"
    tolerance: ClassVar[float] = 1e-2
    ptx_file: ClassVar[str] = "spmm_tvw.ptx"
    instruction: ClassVar[str] = "mma.sp.sync.m16n8k32"

    @property
    def G(self) -> int:
        """The tile granularity the kernel runs: one tile per block row."""
        return self.block_tile.m

    @property
    def procedural_name(self) -> str:
        """e.g. spmm_tvw_g64_f16_f32_tile64x64x64_warp32x32_stage3."""
        warp = "{}x{}".format(*self.warp_tile)
        return f"spmm_tvw_g{self.G}_{LAYOUT.type_tag}_tile{self.block_tile}_warp{warp}_stage{self.stages}"

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """tvw with this kernel's G (any score and 2:4 order: the encoding condenses groups either way)."""
        if pattern.name == self.pattern_name and getattr(pattern, "G", None) == self.G:
            return True, ""
        return False, f"{self.procedural_name} implements tvw:G={self.G}, not {pattern.spec()}"

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """Any M, N, K >= 1 within 32-bit indices (a tile's condensed length is at most 4 K: every column in a
        group of its own)."""
        lda = ksteps_of(4 * p.k) * KSTEP // 2
        extents = {"values": p.m * lda, "B": p.k * LAYOUT.ldb(p), "C": p.m * p.n}
        return check_launch(self, p, pattern, lambda _: extents)

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.5
    ) -> Operands:
        """Prune W with tvw (sparsity >= 0.5), encode it, lay the tiles out; X as fp16, C zero-filled."""
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        w = np.asarray(weights)
        tiles = lay_out_tiles(pattern.encode(w, pattern.prune(w, sparsity)), self.tiles_of(problem))
        arrays = (
            OperandArray("values", tiles.values),
            OperandArray("meta", tiles.meta),
            OperandArray("tiles", tiles.tiles),
            OperandArray("rows", tiles.rows),
            OperandArray("cols", tiles.cols),
            OperandArray("B", LAYOUT.pack_b(np.asarray(activations))),
            OperandArray("C", np.zeros(LAYOUT.c_shape(problem), LAYOUT.c_dtype), output=True),
        )
        return Operands(problem, pattern, arrays)

    def tiles_of(self, p: GemmProblem) -> int:
        """Block rows of the grid: the most tiles a matrix of M rows can have (TW keeps at most every row)."""
        return ceil_div(p.m, self.G)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, shared bytes): one block row per tile slot (`tiles_of`), BN output columns each."""
        grid = (ceil_div(p.n, self.block_tile.n), self.tiles_of(p), 1)
        return grid, self.threads, shared_bytes(self.block_tile, self.stages)

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """values, meta, tiles, rows, cols, B, C, N, ldb, ldc."""
        p = operands.problem
        ptrs = [pointers[name] for name in ("values", "meta", "tiles", "rows", "cols", "B", "C")]
        return [*ptrs, p.n, LAYOUT.ldb(p), LAYOUT.ldc(p)]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The m x n result from the C buffer."""
        return LAYOUT.unpack_c(outputs["C"], operands.problem)

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X, W rebuilt from the device arrays through the tvw decode."""
        p = operands.problem
        fmt = format_of((p.m, p.k), self.G, {name: operands[name] for name in operands.names})
        w = operands.pattern.decode(fmt).astype(np.float64)
        return w @ operands["B"][:, : p.n].astype(np.float64)


TVW_KERNELS: tuple[TvwSpmmKernel, ...] = (
    TvwSpmmKernel(TileShape(64, 64, KSTEP), (32, 32), stages=3),
    TvwSpmmKernel(TileShape(128, 128, KSTEP), (64, 64), stages=3),
)
"""TVW at G = 64 (paper 002's CNN setting) and G = 128 (its NMT / BERT setting)."""

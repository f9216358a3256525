"""What the sparse kernel descriptors share: the fp32 tolerance, 4-bit vector offsets packed as the kernels
read them, device arrays that are never empty (a pruned matrix may keep nothing, but every operand needs a
device buffer), the CSR SpMMs' operands, and the tiles and condensed A layout of the gathered-B Tensor Core
kernels (Shfl-BW, TW, TEW)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.gemm import GemmKernel
from stcsim.kernels.operands import OperandArray, Operands, poisoned
from stcsim.kernels.problem import GemmProblem, ceil_div, round_up
from stcsim.kernels.protocol import Dim3, Kernel, require
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.csr import CSRFormat

FP32_TOLERANCE = 1e-5
"""Largest accepted relative error of the fp32 kernels (docs/kernels.md)."""
OFFSET_BITS = 4
"""Bits of one non-zero's position inside a vector of 16 (vector-wise formats)."""
OFFSET_WORDS = {2: np.uint8, 4: np.uint16, 8: np.uint32}
"""The integer that holds one vector's packed positions, by non-zeros per vector (K)."""


def pack_offsets(offsets: np.ndarray) -> np.ndarray:
    """One integer per vector from ``(..., K)`` positions in 0..15 (K = 2, 4 or 8): position j in bits
    [4j, 4j + 4), in the smallest unsigned integer of 4K bits."""
    k = offsets.shape[-1]
    shifts = (OFFSET_BITS * np.arange(k)).astype(np.uint64)
    packed = np.bitwise_or.reduce(offsets.astype(np.uint64) << shifts, axis=-1)
    return packed.astype(OFFSET_WORDS[k])


def unpack_offsets(packed: np.ndarray, k: int) -> np.ndarray:
    """Inverse of :func:`pack_offsets`: ``(..., K)`` positions as uint8."""
    shifts = (OFFSET_BITS * np.arange(k)).astype(np.uint64)
    return ((packed.astype(np.uint64)[..., None] >> shifts) & 0xF).astype(np.uint8)


def check_simt_f32(dense: GemmKernel, owner: str) -> None:
    """ValueError unless `dense` is an fp32 SIMT GEMM, the kernel whose tiles `owner` (a class name) runs."""
    if dense.algorithm != "simt" or dense.layout.a_dtype != "float32":
        raise ValueError(f"{owner} runs the tiles of the fp32 SIMT GEMM, not {dense.procedural_name}")


def nonempty(array: np.ndarray) -> np.ndarray:
    """`array` as it is, or a single zero of its dtype when it has no element (a buffer the kernel is told
    holds nothing, so never reads)."""
    arr = np.asarray(array)
    return arr if arr.size else np.zeros(1, dtype=arr.dtype)


def csr_operands(kernel: Kernel, weights: np.ndarray, activations: np.ndarray, pattern: Pattern,
                 sparsity: float, *, column_major: bool = False) -> Operands:
    """The operands of a CSR SpMM: W pruned to `sparsity` and encoded as the pattern's CSR (`row_ptr`,
    `col_idx` int32, `values` fp32; a W that keeps nothing gets one unread element), X (`x`) in fp32 and Y
    (`y`) poisoned with NaN, both row-major, or with `column_major` stored transposed (X^T is N x K, Y^T is
    N x M: the column-major X and Y of a BLAS-layout csrmm)."""
    problem = GemmProblem.of(np.shape(weights), np.shape(activations))
    require(kernel, problem, pattern)
    w = np.asarray(weights, dtype=np.float32)
    csr = pattern.encode(w, pattern.prune(w, sparsity))
    x = np.asarray(activations, dtype=np.float32)
    y_shape = (problem.n, problem.m) if column_major else (problem.m, problem.n)
    arrays = (
        OperandArray("row_ptr", csr.indptr.astype(np.int32)),
        OperandArray("col_idx", nonempty(csr.indices.astype(np.int32))),
        OperandArray("values", nonempty(csr.values.astype(np.float32))),
        OperandArray("x", np.ascontiguousarray(x.T) if column_major else x),
        poisoned("y", y_shape, np.float32),
    )
    return Operands(problem, pattern, arrays)


def csr_of(operands: Operands) -> CSRFormat:
    """The weights of CSR SpMM operands (csr_operands) as the CSR they were encoded to."""
    p, row_ptr = operands.problem, operands["row_ptr"]
    nnz = int(row_ptr[-1])
    return CSRFormat((p.m, p.k), row_ptr, operands["col_idx"][:nnz], operands["values"][:nnz])


def csr_reference(operands: Operands, column_major: bool = False) -> np.ndarray:
    """float64 decode(W) @ X of CSR SpMM operands, W rebuilt from the device CSR through the pattern."""
    x = operands["x"].T if column_major else operands["x"]
    return operands.pattern.decode(csr_of(operands)).astype(np.float64) @ x.astype(np.float64)


@dataclass(frozen=True)
class GatheredTile:
    """Tiles of the gathered-B Tensor Core GEMM (ptx_kernels/gathered_mma.cuh) behind the Shfl-BW, TW and TEW
    kernels: a block_m x 128 x 32 block tile of condensed rows, 2x2 or 1x4 warps, 3 cp.async stages, and a
    double buffer of 4 k tiles of column indices (the metadata prefetch)."""

    block_m: int
    warp_tile: tuple[int, int]
    block_n: ClassVar[int] = 128
    block_k: ClassVar[int] = 32
    stages: ClassVar[int] = 3
    threads: ClassVar[Dim3] = (128, 1, 1)
    meta_tiles: ClassVar[int] = 4

    @property
    def name(self) -> str:
        """The tile part of a procedural name, e.g. tile64x128x32_warp32x64_stage3."""
        wm, wn = self.warp_tile
        return f"tile{self.block_m}x{self.block_n}x{self.block_k}_warp{wm}x{wn}_stage{self.stages}"

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory: the A and B stages plus the two metadata chunks of int32."""
        stage = (self.block_m * self.block_k + self.block_k * self.block_n) * 2
        return self.stages * stage + 2 * self.meta_tiles * self.block_k * 4

    def geometry(self, n: int, rows: int) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes) for `n` columns of D and up to `rows` condensed rows."""
        grid = (ceil_div(n, self.block_n), max(1, ceil_div(rows, self.block_m)), 1)
        return grid, self.threads, self.shared_bytes


GATHERED_TILES: tuple[GatheredTile, ...] = (GatheredTile(32, (32, 32)), GatheredTile(64, (32, 64)))
"""The two tile shapes of every gathered-B kernel: groups of a multiple of 32 rows, and of 64."""


@dataclass(frozen=True)
class WmmaGatheredTile:
    """Tiles of the gathered-B WMMA GEMM of the sm_70 / sm_75 Shfl-BW SpMM (ptx_kernels/spmm_shflbw_wmma.cu):
    a block_m x block_n x 32 block tile of condensed rows as the tiled WMMA GEMM's (gemm_wmma_tiles.cu),
    warps of warp_tile (m16n16k16 fragments), synchronous copies, static shared memory only."""

    block_m: int
    block_n: int
    warp_tile: tuple[int, int]
    block_k: ClassVar[int] = 32

    @property
    def name(self) -> str:
        """The tile part of a procedural name, e.g. tile64x64x32_warp32x32."""
        wm, wn = self.warp_tile
        return f"tile{self.block_m}x{self.block_n}x{self.block_k}_warp{wm}x{wn}"

    @property
    def threads(self) -> Dim3:
        """A warp per warp tile of the block tile."""
        wm, wn = self.warp_tile
        return (32 * (self.block_m // wm) * (self.block_n // wn), 1, 1)

    def geometry(self, n: int, rows: int) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes = 0) for `n` columns of D and up to `rows` condensed rows."""
        grid = (ceil_div(n, self.block_n), max(1, ceil_div(rows, self.block_m)), 1)
        return grid, self.threads, 0


WMMA_GATHERED_TILES: tuple[WmmaGatheredTile, ...] = (
    WmmaGatheredTile(32, 64, (16, 32)),
    WmmaGatheredTile(64, 64, (32, 32)),
    WmmaGatheredTile(32, 32, (16, 16)),
)
"""The WMMA gathered-B tiles, 2x2 warps each: 32 x 64 (warps of 16x32) and 32 x 32 (16x16) for groups of a
multiple of 32 rows, 64 x 64 (32x32) for groups of a multiple of 64 rows."""

CONDENSED_ALIGN = 8
"""Halves per 16-byte cp.async chunk: condensed rows of A are padded to a multiple of it."""


def stack_condensed(blocks: Sequence[np.ndarray]) -> np.ndarray:
    """A of a gathered-B kernel: the condensed blocks (rows x kept columns each) stacked row-wise as fp16,
    every row left-aligned and zero padded to one leading dimension, a multiple of 8 (at least one row)."""
    width = round_up(max((b.shape[1] for b in blocks), default=0), CONDENSED_ALIGN) or CONDENSED_ALIGN
    out = np.zeros((max(1, sum(b.shape[0] for b in blocks)), width), dtype=np.float16)
    row = 0
    for block in blocks:
        out[row : row + block.shape[0], : block.shape[1]] = block
        row += block.shape[0]
    return out


def unstack_condensed(a: np.ndarray, shapes: Sequence[tuple[int, int]]) -> np.ndarray:
    """Inverse of `stack_condensed`: the blocks of these (rows, columns) shapes, flattened row-major and
    concatenated (the values array of the Shfl-BW and CTO formats)."""
    parts, row = [], 0
    for rows, cols in shapes:
        parts.append(a[row : row + rows, :cols].ravel())
        row += rows
    return np.concatenate(parts) if parts else np.zeros(0, dtype=a.dtype)

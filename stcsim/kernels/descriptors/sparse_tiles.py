"""The sparse kernels' tile configurations and split-K variants for the per-shape choice (issue 44, sparse
side): every sparse bar of paper 001's Fig. 16 gets the choice its dense baseline has
(stcsim.kernels.descriptors.gemm_tiles).

A library picks, per problem, among block tiles and K splits; a sparse kernel on one fixed 64 x 64 tile at
batch 1 (N = 1..49) fills a few of the V100's 80 SMs while the dense baseline splits K over all of them. So:

- CUDA Core Generic, the CSR SpMM (``ptx_kernels/spmm_csr_tiles.cu``): blocks of 4 rows x 64 columns (the
  existing tile), 8 x 32 and 4 x 32 (one column per lane), each unsplit and with each row's non-zeros split
  into 2, 4, 8 or 16 equal slices over the grid's z (a CSR row's reduction dimension is its non-zeros);
- CUDA Core Unified, the channel-pruned SIMT GEMM (``gemm_simt_channel_tiles.cu``): the dense SIMT family's
  five tiles (128x128, 64x64, 64x32, 32x32, 64x16; k step 8), K (the kept columns) in 1, 2, 4, 8, 16 slices;
- CUDA Core Vector-wise, the VectorSparse SGEMM for K = 2, 4, 8 (``gemm_simt_vw_tiles.cu``): the four tiles
  with 4x4 thread tiles (64x64, 64x32, 32x32, 64x16), the vectors in 1, 2, 4, 8, 16 slices;
- Tensor Core Vector-wise, the SHMMA GEMM (``gemm_shmma_tiles.cu``, stcsim.kernels.descriptors.shmma_tiles).

Every split launch adds its partial sums to a zeroed C with ``atom.global.add.f32``; ``prepare`` gives zeros
instead of the NaN poison. The families keep their names (the procedural name up to ``_tile``), so
stcsim.harness.kernel_choice sees one family per kernel with every configuration; the existing one-tile
kernels stay as they are (their PTX untouched) and remain the fixed rule's (``per_shape`` is False for them).
``estimate_depth``: columns of K one block k step covers, the unit of the choice's short-K estimate.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.gemm_channel import ChannelGemmKernel
from stcsim.kernels.descriptors.gemm_tiles import SIMT_TILE_KERNELS, SPLITS
from stcsim.kernels.descriptors.gemm_vectorwise_simt import VECTOR_LENGTH, VectorWiseSimtKernel
from stcsim.kernels.descriptors.spmm_csr import CsrSpmmKernel
from stcsim.kernels.operands import OperandArray, Operands
from stcsim.kernels.problem import GemmProblem
from stcsim.kernels.protocol import Dim3
from stcsim.sparsity.base import Pattern


def zeroed(operands: Operands, name: str) -> Operands:
    """The operands with output array `name` set to zeros (split-K slices add into it)."""
    arrays = tuple(OperandArray(a.name, np.zeros_like(a.data), output=True) if a.name == name else a
                   for a in operands.arrays)
    return Operands(operands.problem, operands.pattern, arrays)


def refuse_short_k(kernel, p: GemmProblem, ok_why: tuple[bool, str]) -> tuple[bool, str]:
    """`ok_why`, or a refusal when K gives a split kernel fewer than two block k steps per slice."""
    splits = kernel.splits
    if ok_why[0] and splits > 1 and p.k < 2 * splits * kernel.estimate_depth:
        return False, (f"{kernel.procedural_name} splits K into {splits} slices of at least two "
                       f"{kernel.estimate_depth}-column steps: "
                       f"K = {p.k} < {2 * splits * kernel.estimate_depth}")
    return ok_why


@dataclass(frozen=True)
class CsrTileKernel(CsrSpmmKernel):
    """The CSR SpMM with `rows_per_block` x 32 `columns_per_lane` block tiles and each row's non-zeros split
    into `splits` slices over the grid's z (entry ``..._splitk``, one per tile for every split)."""

    splits: int = 1
    ptx_file: str = "spmm_csr_tiles.ptx"
    sliced: ClassVar[bool] = True
    per_shape: ClassVar[bool] = True

    @property
    def procedural_name(self) -> str:
        """spmm_csr_f32_f32_tile<rows>x<strip>_warp1x<strip>[_splitk<S>]."""
        base = super().procedural_name
        return base + (f"_splitk{self.splits}" if self.splits > 1 else "")

    @property
    def entry(self) -> str:
        """The tile's ``_splitk`` entry (the slice count is gridDim.z)."""
        return super().procedural_name + "_splitk"

    def prepare(self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern,
                sparsity: float = 0.0) -> Operands:
        """As the CSR kernel; Y zeroed for split launches."""
        ops = super().prepare(weights, activations, pattern, sparsity)
        return zeroed(ops, "y") if self.splits > 1 else ops

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """The CSR kernel's grid with z = splits."""
        grid, block, shared = super().launch_geometry(p)
        return (grid[0], grid[1], self.splits), block, shared


@dataclass(frozen=True)
class ChannelTileKernel(ChannelGemmKernel):
    """The channel-pruned SIMT GEMM on the tile and K split of `dense` (a sliced SIMT tile kernel of
    stcsim.kernels.descriptors.gemm_tiles); the kept columns are split into dense.splits slices."""

    ptx_file: str = "gemm_simt_channel_tiles.ptx"
    per_shape: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.dense.sliced:
            raise ValueError(f"ChannelTileKernel takes a sliced SIMT tile, not {self.dense.procedural_name}")

    @property
    def splits(self) -> int:
        """K slices per launch (the dense tile kernel's)."""
        return self.dense.splits

    @property
    def entry(self) -> str:
        """The tile's ``_splitk`` entry."""
        return dataclasses.replace(self.dense, algorithm="simt_channel").entry

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """The channel kernel's limits, and at least two k steps of K per slice."""
        return refuse_short_k(self, p, super().can_implement(p, pattern))

    def prepare(self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern,
                sparsity: float = 0.0) -> Operands:
        """As the channel kernel; C zeroed for split launches."""
        ops = super().prepare(weights, activations, pattern, sparsity)
        return zeroed(ops, "C") if self.splits > 1 else ops


@dataclass(frozen=True)
class VectorWiseTileKernel(VectorWiseSimtKernel):
    """The VectorSparse SGEMM on the tile and K split of `dense` (a sliced 4x4-thread-tile SIMT tile of
    stcsim.kernels.descriptors.gemm_tiles); the vectors are split into dense.splits slices."""

    ptx_file: str = "gemm_simt_vw_tiles.ptx"
    per_shape: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.dense.sliced or self.dense.thread_tile != (4, 4):
            raise ValueError(f"VectorWiseTileKernel takes a sliced SIMT tile with 4x4 thread tiles, not "
                             f"{self.dense.procedural_name}")

    @property
    def splits(self) -> int:
        """K slices per launch (the dense tile kernel's)."""
        return self.dense.splits

    @property
    def entry(self) -> str:
        """The tile's ``_splitk`` entry."""
        return dataclasses.replace(self.dense, algorithm=f"simt_vw_l{VECTOR_LENGTH}k{self.kv}").entry

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """The vector-wise kernel's limits, and at least two k steps of vectors per slice."""
        return refuse_short_k(self, p, super().can_implement(p, pattern))

    def prepare(self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern,
                sparsity: float = 0.0) -> Operands:
        """As the vector-wise kernel; C zeroed for split launches."""
        ops = super().prepare(weights, activations, pattern, sparsity)
        return zeroed(ops, "C") if self.splits > 1 else ops


CSR_TILES = ((4, 2), (8, 1), (4, 1))
"""(rows per block, columns per lane) of the CSR tiles: 4 x 64 (spmm_csr.cu's, unsplit there), 8 x 32,
4 x 32."""

CSR_TILE_KERNELS: tuple[CsrTileKernel, ...] = tuple(
    CsrTileKernel(rows_per_block=rows, columns_per_lane=lanes, splits=s)
    for rows, lanes in CSR_TILES for s in SPLITS if s > 1 or (rows, lanes) != (4, 2)
)
"""The CSR SpMM's tiles and split-K variants (family ``spmm_csr_f32_f32``)."""

CHANNEL_TILE_KERNELS: tuple[ChannelTileKernel, ...] = tuple(
    ChannelTileKernel(dense=k) for k in SIMT_TILE_KERNELS)
"""The channel-pruned SIMT GEMM on every SIMT tile and split (family ``gemm_simt_channel_f32_f32``; the
unsplit
64x64 tile is gemm_simt_channel.cu's kernel)."""

VW_TILE_KERNELS: tuple[VectorWiseTileKernel, ...] = tuple(
    VectorWiseTileKernel(dense=k, kv=kv) for kv in (2, 4, 8) for k in SIMT_TILE_KERNELS
    if k.thread_tile == (4, 4)
)
"""The VectorSparse SGEMM for K = 2, 4, 8 on every 4x4-thread-tile SIMT tile and split (families
``gemm_simt_vw_l16k<K>_f32_f32``; the unsplit 64x64 tiles are gemm_simt_vw.cu's kernels)."""

SIMT_SPARSE_TILE_KERNELS = (*CSR_TILE_KERNELS, *CHANNEL_TILE_KERNELS, *VW_TILE_KERNELS)
"""Every per-shape configuration of paper 001's sparse CUDA-core kernels."""

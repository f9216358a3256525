"""Tensor Core Vector-wise (paper 001) per shape: the SHMMA GEMM's tile configurations and split-K variants
(ptx_kernels/gemm_shmma_tiles.cu), the choice the dense tiled WMMA GEMM has
(stcsim.kernels.descriptors.gemm_tiles).

Block tiles 64x64 (warps 32x32, gemm_shmma.cu's tile), 64x32 (32x16), 32x32 (16x16) and 64x16 (16x16), 4
warps each, for K = 2, 4, 8 non-zeros per row vector of 16; each unsplit and with its k tiles (32 columns,
two vectors) split into 2, 4, 8 or 16 slices over the grid's z, partial sums added to a zeroed C with
``atom.global.add.f32`` through the warp's staging tile. The compressed A is laid out tile-major with
block-tile-high row blocks (ShmmaKernel._tile on the descriptor's block tile). The families stay
``gemm_shmma_k<K>_f16_f32``; the unsplit 64x64 tiles are gemm_shmma.cu's kernels (PTX untouched).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.gemm_tiles import SPLITS
from stcsim.kernels.descriptors.shmma import ShmmaKernel
from stcsim.kernels.descriptors.sparse_tiles import refuse_short_k, zeroed
from stcsim.kernels.operands import Operands
from stcsim.kernels.problem import GemmProblem, TileShape
from stcsim.kernels.protocol import Dim3
from stcsim.sparsity.base import Pattern


@dataclass(frozen=True)
class ShmmaTileKernel(ShmmaKernel):
    """The SHMMA GEMM on `block_tile` with 4 warps of `warp_tile`, its k tiles in `splits` slices (entry
    ``..._splitk``, one per tile for every split)."""

    splits: int = 1

    ptx_file: ClassVar[str] = "gemm_shmma_tiles.ptx"
    sliced: ClassVar[bool] = True
    per_shape: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        warps = (self.block_tile.m // self.warp_tile[0]) * (self.block_tile.n // self.warp_tile[1])
        if warps != 4 or self.block_tile.k != 32:
            raise ValueError(f"the SHMMA tiles are 4 warps over 32-deep k tiles, not {self.block_tile} / "
                             f"{self.warp_tile}")

    @property
    def procedural_name(self) -> str:
        """e.g. gemm_shmma_k4_f16_f32_tile32x32x32_warp16x16_splitk4."""
        return super().procedural_name + (f"_splitk{self.splits}" if self.splits > 1 else "")

    @property
    def entry(self) -> str:
        """The tile's ``_splitk`` entry (the slice count is gridDim.z)."""
        return ShmmaKernel.procedural_name.fget(self) + "_splitk"

    @property
    def estimate_depth(self) -> int:
        """Columns of K per k tile (the short-K estimate's step)."""
        return self.block_tile.k

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """The SHMMA kernel's limits, and at least two k tiles per slice."""
        return refuse_short_k(self, p, super().can_implement(p, pattern))

    def prepare(self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern,
                sparsity: float = 0.0) -> Operands:
        """As the SHMMA kernel (A tile-major in block-tile-high row blocks); C zeroed for split launches."""
        ops = super().prepare(weights, activations, pattern, sparsity)
        return zeroed(ops, "C") if self.splits > 1 else ops

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """The SHMMA kernel's grid on this tile, with z = splits."""
        grid, block, shared = super().launch_geometry(p)
        return (grid[0], grid[1], self.splits), block, shared


SHMMA_TILES = (  # (block tile, warp tile, has an unsplit kernel in gemm_shmma.cu)
    (TileShape(64, 64, 32), (32, 32), True),
    (TileShape(64, 32, 32), (32, 16), False),
    (TileShape(32, 32, 32), (16, 16), False),
    (TileShape(64, 16, 32), (16, 16), False),
)

SHMMA_TILE_KERNELS: tuple[ShmmaTileKernel, ...] = tuple(
    ShmmaTileKernel(nnz, block_tile=tile, warp_tile=warp, splits=s)
    for nnz in (2, 4, 8) for tile, warp, has_unsplit in SHMMA_TILES for s in SPLITS
    if s > 1 or not has_unsplit
)
"""The SHMMA GEMM's tiles and split-K variants for K = 2, 4, 8 (families ``gemm_shmma_k<K>_f16_f32``)."""

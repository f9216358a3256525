"""Tensor Core Vector-wise (paper 001): the tiled WMMA GEMM with SHMMA in place of the dense A path.

The weights are pruned and encoded by the ``vw`` pattern (row vectors of L = 16 along the reduction
dimension, K = 2, 4 or 8 kept per vector; stcsim.sparsity.vectorwise). The kernel (ptx_kernels/gemm_shmma.cu,
one entry per K) reads the compressed A tile-major: for every 64-row block of W and every k tile of 32
columns (two vectors), first the 64 x 2 x K fp16 values ``[row][vector][j]`` of all (block, k tile) pairs,
in a ``values`` array, and the 64 x 2 offset integers ``[row][vector]`` (K 4-bit offsets, lowest nibble
first, in a u8 / u16 / u32) in an ``offsets`` array, both zero-padded to whole blocks and k tiles (padding
adds value 0). X (fp16, k x n row-major, ld = n) and D (fp32, m x n) are as in the dense WMMA GEMMs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.sparse_support import OFFSET_WORDS, pack_offsets, unpack_offsets
from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import OperandArray, Operands, poisoned
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, TileShape, ceil_div
from stcsim.kernels.protocol import Dim3, require
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.vectorwise import VectorWise, VWFormat

VECTOR = 16  # L: the row vector length SHMMA consumes
VECTORS_PER_KTILE = 2
_LAYOUT = OperandLayout(a_dtype="float16", b_dtype="float16")


@dataclass(frozen=True)
class ShmmaKernel(CommittedPtx):
    """Descriptor of the SHMMA GEMM for ``vw:L=16,K=nnz,axis=row`` weights (a `Kernel`)."""

    nnz: int
    block_tile: TileShape = TileShape(64, 64, 32)
    warp_tile: tuple[int, int] = (32, 32)
    threads: Dim3 = (128, 1, 1)

    pattern_name: ClassVar[str] = "vw"
    tolerance: ClassVar[float] = 1e-2
    ptx_file: ClassVar[str] = "gemm_shmma.ptx"
    instruction: ClassVar[str] = "wmma.mma.smma (SHMMA)"

    def __post_init__(self) -> None:
        if self.nnz not in OFFSET_WORDS:
            raise ValueError(f"SHMMA takes K = 2, 4 or 8 non-zeros per vector, got {self.nnz}")

    @property
    def procedural_name(self) -> str:
        """e.g. gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32."""
        warp = "{}x{}".format(*self.warp_tile)
        return f"gemm_shmma_k{self.nnz}_{_LAYOUT.type_tag}_tile{self.block_tile}_warp{warp}"

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """Only row vectors of 16 with exactly this kernel's K (the instruction spelling fixes K)."""
        want = VectorWise(L=VECTOR, K=self.nnz, axis="row")
        if pattern == want:
            return True, ""
        return False, f"{self.procedural_name} implements {want.spec()}, not {pattern.spec()}"

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """Whether the kernel runs problem p with weights in `pattern`, and why not."""
        per_row = self.block_tile.m * self.k_tiles(p) * VECTORS_PER_KTILE * self.nnz
        return check_launch(
            self, p, pattern, lambda grid: {"values": 2 * grid[1] * per_row, "B": p.k * p.n, "C": p.m * p.n}
        )

    def k_tiles(self, p: GemmProblem) -> int:
        """k tiles of 32 columns (two vectors; the last may hold one)."""
        return ceil_div(ceil_div(p.k, VECTOR), VECTORS_PER_KTILE)

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """Prune W with the vw pattern, encode it (values and offsets), lay both out tile-major as fp16 values
        and packed offsets; X as fp16; D poisoned with NaN."""
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        w = np.asarray(weights)
        fmt = pattern.encode(w, pattern.prune(w, sparsity))
        arrays = (
            OperandArray("values", self._tile(fmt.values.astype(np.float16), problem)),
            OperandArray("offsets", self._tile(pack_offsets(fmt.offsets), problem)),
            OperandArray("B", _LAYOUT.pack_b(np.asarray(activations))),
            poisoned("C", _LAYOUT.c_shape(problem), _LAYOUT.c_dtype),
        )
        return Operands(problem, pattern, arrays)

    def _tile(self, per_vector: np.ndarray, p: GemmProblem) -> np.ndarray:
        """``(m, vectors, ...)`` -> flat ``[block][k tile][row][vector][...]``, zero-padded to whole tiles."""
        rows, kt = self.block_tile.m, self.k_tiles(p)
        blocks = ceil_div(p.m, rows)
        padded = np.zeros((blocks * rows, kt * VECTORS_PER_KTILE, *per_vector.shape[2:]), per_vector.dtype)
        padded[: per_vector.shape[0], : per_vector.shape[1]] = per_vector
        tiles = padded.reshape(blocks, rows, kt, VECTORS_PER_KTILE, *per_vector.shape[2:]).swapaxes(1, 2)
        return np.ascontiguousarray(tiles).reshape(-1)

    def _untile(self, flat: np.ndarray, p: GemmProblem) -> np.ndarray:
        """Inverse of `_tile`: ``(m, vectors, ...)`` from the flat device array."""
        rows, kt = self.block_tile.m, self.k_tiles(p)
        blocks = ceil_div(p.m, rows)
        tiles = flat.reshape(blocks, kt, rows, VECTORS_PER_KTILE, -1).swapaxes(1, 2)
        per_vector = tiles.reshape(blocks * rows, kt * VECTORS_PER_KTILE, -1)
        return per_vector[: p.m, : ceil_div(p.k, VECTOR)]

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes): one thread block per 64x64 tile of D, static shared memory."""
        return (ceil_div(p.n, self.block_tile.n), ceil_div(p.m, self.block_tile.m), 1), self.threads, 0

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """values, offsets, B, C, M, N, K, ldb, ldc."""
        p = operands.problem
        ptrs = [pointers[name] for name in ("values", "offsets", "B", "C")]
        return [*ptrs, p.m, p.n, p.k, _LAYOUT.ldb(p), _LAYOUT.ldc(p)]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The m x n result from the C buffer."""
        return _LAYOUT.unpack_c(outputs["C"], operands.problem)

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X, W rebuilt from the tile-major values and offsets through the vw decode."""
        p = operands.problem
        values = self._untile(operands["values"], p)
        offsets = unpack_offsets(self._untile(operands["offsets"], p)[..., 0], self.nnz)
        fmt = VWFormat((p.m, p.k), VECTOR, self.nnz, "row", values, offsets)
        w = operands.pattern.decode(fmt).astype(np.float64)
        return w @ operands["B"][:, : p.n].astype(np.float64)


SHMMA_KERNELS: tuple[ShmmaKernel, ...] = tuple(ShmmaKernel(nnz) for nnz in (2, 4, 8))
"""The SHMMA GEMM for K = 2, 4, 8 (87.5, 75, 50 % sparse row vectors of 16)."""

"""The 2:4 sparse Tensor Core GEMM: ``mma.sp.sync.aligned.m16n8k32`` (fp16 in, fp32 accumulate), multistage.

The weights W (``M x K``) are pruned and encoded by the ``nm:N=2,M=4`` pattern (stcsim.sparsity.nm: two kept
values per four-wide chunk along K, ascending 2-bit positions). The kernel (ptx_kernels/gemm_mma_sp.cu with
the main loop in mma_sp_gemm.cuh) reads only the kept half of W:

* ``values``: ``M x K/2`` fp16, K zero-padded to a multiple of 64 (one pipeline stage of dense k), the
  kept values of every chunk side by side (the NMFormat values, row-major);
* ``meta``: ``ceil(M/16) x K/64 x 32`` uint32 words in the order the instruction's lanes read them: in k step
  ``ks``, lane ``4g + 2s + j`` holds word ``2g + j`` (stcsim.sparsity.mma_sp) of k tile ``2ks + s``, which the
  kernel feeds with sparsity selector ``s`` (CUTLASS's two-k-tiles-per-register scheme, one 32-bit shared
  load per lane and stage);
* ``B`` (X, ``K x N`` fp16, ld padded to 8), ``C`` (``M x N`` fp32).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import OperandArray, Operands, poisoned
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, TileShape, ceil_div
from stcsim.kernels.protocol import Dim3, require
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.mma_sp import tile_metadata_words
from stcsim.sparsity.nm import NM, NMFormat

TWO_FOUR = NM(2, 4)
KSTEP = 64
"""Dense k of one pipeline stage: two m16n8k32 k tiles (sparsity selectors 0 and 1)."""
GROUPS_PER_KSTEP = KSTEP // TWO_FOUR.M
LAYOUT = OperandLayout(a_dtype="float16", b_dtype="float16", align_ab=8)
"""B and C as in the dense mma.sync GEMM (ldb a multiple of 8 for 16-byte cp.async)."""
_ORDERED_PAIR = np.array([0, 1], dtype=np.uint8)


def lane_order_metadata(indices: np.ndarray) -> np.ndarray:
    """Metadata words ``(row tiles, k steps, 32)`` in lane order from 2:4 positions ``(rows, groups, 2)``.

    Rows are padded to a multiple of 16 and groups to a multiple of 16 (one k step) with the positions
    ``(0, 1)``, which select zero values.
    """
    rows, groups, _ = indices.shape
    rp, gp = ceil_div(rows, 16) * 16, ceil_div(groups, GROUPS_PER_KSTEP) * GROUPS_PER_KSTEP
    idx = np.broadcast_to(_ORDERED_PAIR, (rp, gp, 2)).copy()
    idx[:rows, :groups] = indices
    per_tile = idx.reshape(rp // 16, 16, gp // 8, 8, 2).transpose(0, 2, 1, 3, 4)
    words = tile_metadata_words(per_tile)  # (row tiles, k tiles, 2g + j)
    by_lane = words.reshape(rp // 16, gp // 16, 2, 8, 2).transpose(0, 1, 3, 2, 4)  # (.., ks, g, s, j)
    return np.ascontiguousarray(by_lane).reshape(rp // 16, gp // 16, 32)


def metadata_indices(meta: np.ndarray) -> np.ndarray:
    """Inverse of :func:`lane_order_metadata`: the 2:4 positions ``(16 * row tiles, 16 * k steps, 2)``."""
    tiles_m, ksteps, _ = meta.shape
    words = meta.reshape(tiles_m, ksteps, 8, 2, 2).transpose(0, 1, 3, 2, 4).reshape(tiles_m, 2 * ksteps, 8, 2)
    half = np.arange(2).reshape(2, 1, 1, 1, 1, 1)
    chunk = np.arange(4).reshape(1, 1, 1, 1, 1, 4)
    nib = (words[None, ..., None] >> (16 * half + 4 * chunk).astype(np.uint32)) & 0xF  # (h, tm, kt, g, j, c)
    rows = nib.transpose(1, 0, 3, 2, 4, 5).reshape(tiles_m * 16, 2 * ksteps * 8)  # row = 8h + g, group 4j + c
    return np.stack([rows & 3, rows >> 2], axis=-1).astype(np.uint8)


def compressed_values(values: np.ndarray, lda: int) -> np.ndarray:
    """``(rows, lda)`` fp16 from NMFormat values ``(rows, groups, 2)``, zero-padded on the right."""
    flat = values.reshape(values.shape[0], -1).astype(np.float16)
    out = np.zeros((values.shape[0], lda), dtype=np.float16)
    out[:, : flat.shape[1]] = flat
    return out


def ksteps_of(k: int) -> int:
    """Pipeline stages (k steps of 64 dense columns) of a reduction of length k."""
    return ceil_div(k, KSTEP)


def shared_bytes(block_tile: TileShape, stages: int) -> int:
    """Dynamic shared memory of the main loop: per stage A (BM x 32 fp16), B (64 x BN fp16), E (BM / 16 x 32
    words), as SpTile in mma_sp_gemm.cuh."""
    return stages * (block_tile.m * KSTEP + KSTEP * block_tile.n * 2 + block_tile.m * 8)


def decode_nm(shape: tuple[int, int], values: np.ndarray, meta: np.ndarray) -> np.ndarray:
    """The dense float64 W (``shape``) that the device arrays ``values`` (``rows x lda``) and ``meta`` hold,
    through the nm pattern's own decode."""
    m, k = shape
    groups = ceil_div(k, TWO_FOUR.M)
    vals = values[:m].reshape(m, -1, 2)[:, :groups]
    idx = metadata_indices(meta)[:m, :groups]
    return TWO_FOUR.decode(NMFormat(shape, 2, 4, vals, idx)).astype(np.float64)


@dataclass(frozen=True)
class MmaSpGemmKernel(CommittedPtx):
    """Descriptor of one tile configuration of the 2:4 mma.sp GEMM (a `Kernel`)."""

    block_tile: TileShape
    warp_tile: tuple[int, int]
    stages: int
    threads: Dim3 = (128, 1, 1)

    pattern_name: ClassVar[str] = "nm"
    tolerance: ClassVar[float] = 1e-2
    ptx_file: ClassVar[str] = "gemm_mma_sp.ptx"
    instruction: ClassVar[str] = "mma.sp.sync.m16n8k32"

    @property
    def procedural_name(self) -> str:
        """e.g. gemm_mma_sp_f16_f32_tile128x128x64_warp64x64_stage3."""
        warp = "{}x{}".format(*self.warp_tile)
        return f"gemm_mma_sp_{LAYOUT.type_tag}_tile{self.block_tile}_warp{warp}_stage{self.stages}"

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """Only 2:4 (the instruction's sparsity): nm with N = 2, M = 4."""
        if pattern == TWO_FOUR:
            return True, ""
        return False, f"{self.procedural_name} implements {TWO_FOUR.spec()}, not {pattern.spec()}"

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """Any M, N, K >= 1 (K is padded to 64 in prepare, M and N are guarded) within 32-bit indices."""
        ks = ksteps_of(p.k)
        extents = {"values": p.m * ks * KSTEP // 2, "meta": ceil_div(p.m, 16) * ks * 32,
                   "B": p.k * LAYOUT.ldb(p), "C": p.m * p.n}
        return check_launch(self, p, pattern, lambda _: extents)

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.5
    ) -> Operands:
        """Prune W to 2:4 (at least 50 %), encode it, lay out the compressed values and lane-order metadata;
        X as fp16 with ld padded to 8; C poisoned with NaN."""
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        w = np.asarray(weights)
        fmt = pattern.encode(w, pattern.prune(w, sparsity))
        lda = ksteps_of(problem.k) * KSTEP // 2
        arrays = (
            OperandArray("values", compressed_values(fmt.values, lda)),
            OperandArray("meta", lane_order_metadata(fmt.indices)),
            OperandArray("B", LAYOUT.pack_b(np.asarray(activations))),
            poisoned("C", LAYOUT.c_shape(problem), LAYOUT.c_dtype),
        )
        return Operands(problem, pattern, arrays)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes): one block per BM x BN tile of C."""
        grid = (ceil_div(p.n, self.block_tile.n), ceil_div(p.m, self.block_tile.m), 1)
        return grid, self.threads, shared_bytes(self.block_tile, self.stages)

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """values, meta, B, C, M, N, K, lda, ldb, ldc."""
        p = operands.problem
        ptrs = [pointers[name] for name in ("values", "meta", "B", "C")]
        return [*ptrs, p.m, p.n, p.k, operands["values"].shape[1], LAYOUT.ldb(p), LAYOUT.ldc(p)]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The m x n result from the C buffer."""
        return LAYOUT.unpack_c(outputs["C"], operands.problem)

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X, W rebuilt from the device values and metadata through the nm decode."""
        p = operands.problem
        w = decode_nm((p.m, p.k), operands["values"], operands["meta"])
        return w @ operands["B"][:, : p.n].astype(np.float64)


MMA_SP_KERNELS: tuple[MmaSpGemmKernel, ...] = (
    MmaSpGemmKernel(TileShape(128, 128, KSTEP), (64, 64), stages=3),
    MmaSpGemmKernel(TileShape(64, 64, KSTEP), (32, 32), stages=2),
)
"""The 2:4 GEMM in the tiles of the dense mma.sync GEMM (128 x 128 three-stage, 64 x 64 double-buffered)."""

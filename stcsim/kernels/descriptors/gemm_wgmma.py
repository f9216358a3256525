"""Hopper's warp-specialised GEMMs: TMA loads into an mbarrier ring, wgmma.mma_async (dense) or
wgmma.mma_async.sp (2:4 sparse weights), fp16 in, fp32 accumulate (ptx_kernels/gemm_wgmma.cu, sm_90a).

The kernels compute C = A * Bt^T with both operands K-major, so ``prepare`` lays out:

* ``A``: the weights W (``M x Kp`` fp16, K zero-padded to ``Kp``, a multiple of 64); for the sparse kernels
  instead ``values`` (``Mp x Kp/2`` fp16: the 2:4 compressed W, stcsim.sparsity.mma_sp, rows padded to ``Mp``,
  a multiple of 128) and ``meta`` (``Mp/64 x Kp/32 x 128`` uint32: per 64-row block and k32 step, the
  metadata register of each consumer thread, i.e. the m16n8k32 words of its warp's 16 rows, selector 0);
* ``Bt``: the activations X transposed (``N x Kp`` fp16);
* ``C``: ``M x N`` fp32, poisoned with NaN.

The tensor maps (stcsim.sim.TensorMap, passed by value as ``__grid_constant__`` parameters) are built in
``args`` from the device addresses: 64 x 128 boxes with the 128-byte swizzle (64 x BN for Bt), 32 x 128 with
the 64-byte swizzle for the compressed values, and a (128, 2, 2) box of metadata words. M and N are any
(TMA zero-fills rows past the tensor, the epilogue stores only inside C); K is any (padded here).

`WgmmaBatchedGemmKernel` is the dense kernel as a strided-batched launch (ptx_kernels/gemm_wgmma_batched.cu:
grid z = batch, A, Bt and C one matrix per batch element back to back, A and Bt through 3D tensor maps),
for activation x activation GEMMs (attention's score and context GEMMs, one launch per layer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import OperandArray, Operands, float64_product, poisoned
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, TileShape, ceil_div
from stcsim.kernels.protocol import Dim3, require
from stcsim.sim.tensor_map import TensorMap
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.mma_sp import MmaSpOperands, pack_m16n8k32
from stcsim.sparsity.nm import NM

BM, BK = 128, 64
"""Rows of C per block (two consumer warpgroups of 64) and dense k per pipeline stage."""
THREADS: Dim3 = (384, 1, 1)
"""One producer and two consumer warpgroups."""
TWO_FOUR = NM(2, 4)


def padded_k(k: int) -> int:
    """K rounded up to whole pipeline stages."""
    return ceil_div(k, BK) * BK


def k_major(x: np.ndarray, rows: int, kp: int) -> np.ndarray:
    """``rows x kp`` fp16 (per leading index of a batched ``x``) holding `x` (``r x k``, r <= rows, any
    float dtype and strides) top-left, zeros elsewhere: one cast-and-copy pass when nothing is padded."""
    if x.shape[-2:] == (rows, kp):
        return np.ascontiguousarray(x, dtype=np.float16)
    out = np.zeros((*x.shape[:-2], rows, kp), np.float16)
    out[..., : x.shape[-2], : x.shape[-1]] = x
    return out


def lane_metadata_blocks(words: np.ndarray) -> np.ndarray:
    """``(Mp/64, Kp/32, 128)`` metadata registers of the consumer threads from the m16n8k32 tile words
    ``(Mp/16, Kp/32, 16)``: lane ``4g + j`` of warp ``w`` holds word ``2g + j`` of row tile ``4b + w``
    (selector 0; lanes ``4g + 2``, ``4g + 3`` are not read and hold 0)."""
    tiles_m, ksteps, _ = words.shape
    regs = np.zeros((tiles_m, ksteps, 8, 4), np.uint32)
    regs[..., :2] = words.reshape(tiles_m, ksteps, 8, 2)
    by_warp = regs.reshape(tiles_m // 4, 4, ksteps, 32).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(by_warp).reshape(tiles_m // 4, ksteps, 128)


def tile_words(meta: np.ndarray) -> np.ndarray:
    """Inverse of :func:`lane_metadata_blocks`: the tile words ``(Mp/16, Kp/32, 16)``."""
    blocks, ksteps, _ = meta.shape
    regs = meta.reshape(blocks, ksteps, 4, 8, 4).transpose(0, 2, 1, 3, 4)[..., :2]
    return np.ascontiguousarray(regs).reshape(blocks * 4, ksteps, 16)


@dataclass(frozen=True)
class WgmmaGemmKernel(CommittedPtx):
    """Descriptor of one tile configuration of the Hopper GEMM, dense or 2:4 sparse (a `Kernel`)."""

    block_n: int
    stages: int
    sparse: bool = False

    tolerance: ClassVar[float] = 1e-2
    ptx_file: ClassVar[str] = "gemm_wgmma.ptx"
    threads: ClassVar[Dim3] = THREADS

    @property
    def pattern_name(self) -> str:  # type: ignore[override]
        """'nm' (2:4) for the sparse kernels, 'dense' otherwise."""
        return "nm" if self.sparse else "dense"

    @property
    def instruction(self) -> str:
        """The Tensor Core instruction the kernel issues."""
        return f"wgmma.mma_async{'.sp' if self.sparse else ''}.m64n{self.block_n}k{32 if self.sparse else 16}"

    @property
    def per_shape(self) -> bool:
        """The narrow-N tile is registered for the per-shape choice only (``kernel_choice``): the fixed rule
        (``fixed:auto``) keeps the 128- and 256-wide tiles it had."""
        return self.block_n < 128

    @property
    def procedural_name(self) -> str:
        """e.g. gemm_wgmma_sp_f16_f32_tile128x128x64_stage5."""
        kind = "gemm_wgmma_sp" if self.sparse else "gemm_wgmma"
        return f"{kind}_f16_f32_tile{BM}x{self.block_n}x{BK}_stage{self.stages}"

    @property
    def estimate_tile(self) -> TileShape:
        """The C tile of one thread block and its k step: what the kernel choice's shape rule and estimate pad
        a problem to (``kernel_choice.shape_tile``; these kernels have no ``block_tile``, which would make
        them candidates of the fixed rule's ``per_shape`` tiles)."""
        return TileShape(BM, self.block_n, BK)

    def stage_bytes(self) -> int:
        """Shared memory of one pipeline stage: A (compressed for the sparse kernels), Bt, metadata."""
        a = BM * BK if self.sparse else BM * BK * 2
        return a + self.block_n * BK * 2 + (2 * 2 * 128 * 4 if self.sparse else 0)

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """Dense weights, or exactly 2:4 for the sparse kernels."""
        want = TWO_FOUR if self.sparse else None
        ok = pattern == want if self.sparse else pattern.name == "dense"
        if ok:
            return True, ""
        wanted = want.spec() if want else "dense"
        return False, f"{self.procedural_name} implements {wanted}, not {pattern.spec()}"

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """Any M, N, K >= 1 within 32-bit indices (K padded to 64 here; TMA dims below 2^32)."""
        kp, mp = padded_k(p.k), ceil_div(p.m, BM) * BM
        extents = {"A": (mp if self.sparse else p.m) * kp, "Bt": p.n * kp, "C": p.m * p.n}
        return check_launch(self, p, pattern, lambda _: extents)

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """Prune and encode W (2:4 for the sparse kernels), lay out A / values + meta, Bt = X^T, C."""
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        kp = padded_k(problem.k)
        w = np.asarray(weights)
        bt, c = self._activation_side(problem, activations)
        if not self.sparse:
            a = OperandArray("A", k_major(w, problem.m, kp))
            return Operands(problem, pattern, (a, bt, c))
        mp = ceil_div(problem.m, BM) * BM
        w16 = w.astype(np.float16)
        mask = np.zeros((mp, kp), bool)
        mask[: problem.m, : problem.k] = pattern.prune(w16, max(sparsity, 0.5))
        packed = pack_m16n8k32(k_major(w16, mp, kp), mask)
        arrays = (OperandArray("values", np.ascontiguousarray(packed.values)),
                  OperandArray("meta", lane_metadata_blocks(packed.metadata)), bt, c)
        return Operands(problem, pattern, arrays)

    def with_activations(self, operands: Operands, activations: np.ndarray) -> Operands:
        """`operands`' A (or values and meta) with Bt and C made for `activations` (K x N'): what
        `prepare` gives for the same weights, without pruning and packing them again (ReusesWeights)."""
        p = operands.problem
        problem = GemmProblem.of((p.m, p.k), np.shape(activations))
        require(self, problem, operands.pattern)
        weights = tuple(a for a in operands.arrays if a.name not in ("Bt", "C"))
        return Operands(problem, operands.pattern, (*weights, *self._activation_side(problem, activations)))

    @staticmethod
    def _activation_side(problem: GemmProblem, activations: np.ndarray) -> tuple[OperandArray, OperandArray]:
        """Bt = X^T (fp16, K-major, K padded to BK) and the poisoned fp32 C."""
        bt = k_major(np.asarray(activations).T, problem.n, padded_k(problem.k))
        return OperandArray("Bt", bt), poisoned("C", (problem.m, problem.n), np.float32)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes): one block per 128 x BN tile of C."""
        grid = (ceil_div(p.n, self.block_n), ceil_div(p.m, BM), 1)
        return grid, self.threads, self.stages * self.stage_bytes() + 1024

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float | TensorMap]:
        """The tensor maps of A (or values and meta) and Bt, then C, M, N, Kp."""
        p = operands.problem
        kp = operands["Bt"].shape[1]
        map_b = TensorMap("f16", pointers["Bt"], (kp, p.n), (2 * kp,), (BK, self.block_n), swizzle="128B")
        if self.sparse:
            mp = operands["values"].shape[0]
            maps = [TensorMap("f16", pointers["values"], (kp // 2, p.m), (kp,), (BK // 2, BM), swizzle="64B"),
                    map_b,
                    TensorMap("u32", pointers["meta"], (128, kp // 32, mp // 64), (512, 512 * (kp // 32)),
                              (128, 2, 2))]
        else:
            maps = [TensorMap("f16", pointers["A"], (kp, p.m), (2 * kp,), (BK, BM), swizzle="128B"), map_b]
        return [*maps, pointers["C"], p.m, p.n, kp]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The m x n result: C as it is."""
        return outputs["C"]

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 W @ X with W as the device arrays hold it (the sparse values decoded through their
        metadata, stcsim.sparsity.mma_sp)."""
        p = operands.problem
        if self.sparse:
            w = MmaSpOperands((p.m, p.k), operands["values"], tile_words(operands["meta"])).to_dense()
        else:
            w = operands["A"][:, : p.k]
        return float64_product(w, operands["Bt"][:, : p.k])


WGMMA_KERNELS: tuple[WgmmaGemmKernel, ...] = (
    WgmmaGemmKernel(8, 6),
    WgmmaGemmKernel(128, 4),
    WgmmaGemmKernel(256, 4),
    WgmmaGemmKernel(8, 6, sparse=True),
    WgmmaGemmKernel(128, 5, sparse=True),
    WgmmaGemmKernel(256, 4, sparse=True),
)
"""Dense and 2:4 sparse, in 128 x 8 tiles (N of one to eight: decode steps, lm_head, as a library's narrow-N
kernels serve them), 128 x 128 and 128 x 256 (the wider tile for large GEMMs on the H100)."""


@dataclass(frozen=True)
class WgmmaBatchedGemmKernel(CommittedPtx):
    """The dense Hopper GEMM as a strided-batched launch (a `Kernel` with ``batched``): C[z] = A[z] @ B[z]
    for z < ``problem.batch``, blockIdx.z the batch index. ``prepare`` takes 3-D operands (batch x M x K,
    batch x K x N) or 2-D ones (a batch of one) and lays out A (batch x M x Kp), Bt (batch x N x Kp) and C
    (batch x M x N, poisoned); ``unpack`` and ``reference`` return batch x M x N (M x N for a 2-D prepare)."""

    block_n: int
    stages: int

    tolerance: ClassVar[float] = 1e-2
    ptx_file: ClassVar[str] = "gemm_wgmma_batched.ptx"
    threads: ClassVar[Dim3] = THREADS
    pattern_name: ClassVar[str] = "dense"
    batched: ClassVar[bool] = True

    @property
    def instruction(self) -> str:
        """The Tensor Core instruction the kernel issues."""
        return f"wgmma.mma_async.m64n{self.block_n}k16"

    @property
    def procedural_name(self) -> str:
        """e.g. gemm_wgmma_batched_f16_f32_tile128x128x64_stage4."""
        return f"gemm_wgmma_batched_f16_f32_tile{BM}x{self.block_n}x{BK}_stage{self.stages}"

    @property
    def estimate_tile(self) -> TileShape:
        """The C tile of one thread block and its k step (``WgmmaGemmKernel.estimate_tile``)."""
        return TileShape(BM, self.block_n, BK)

    def stage_bytes(self) -> int:
        """Shared memory of one pipeline stage: the A and Bt tiles."""
        return BM * BK * 2 + self.block_n * BK * 2

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """Dense operands only (the batched GEMMs multiply two activations: nothing to prune)."""
        if pattern.name == "dense":
            return True, ""
        return False, f"{self.procedural_name} implements dense, not {pattern.spec()}"

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """Any M, N, K >= 1 and batch within the grid's z (K padded to 64 here); each operand's elements, all
        batch matrices together, within 32-bit indices (the epilogue's offsets are 64-bit, the tensor maps'
        dimensions 32-bit)."""
        kp = padded_k(p.k)
        extents = {"A": p.batch * p.m * kp, "Bt": p.batch * p.n * kp, "C": p.batch * p.m * p.n}
        return check_launch(self, p, pattern, lambda _: extents)

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """A = the left operands (fp16, K padded), Bt = the right ones transposed, C poisoned."""
        a3, b3 = np.asarray(weights), np.asarray(activations)
        if a3.ndim == 2 and b3.ndim == 2:
            a3, b3 = a3[None], b3[None]
        if a3.ndim != 3 or b3.ndim != 3 or a3.shape[0] != b3.shape[0] or a3.shape[2] != b3.shape[1]:
            raise ValueError(f"A {np.shape(weights)} @ B {np.shape(activations)}: need (batch, m, k) and "
                             "(batch, k, n), or 2-D (m, k) and (k, n)")
        batch, m, k = a3.shape
        problem = GemmProblem(m, b3.shape[2], k, batch)
        require(self, problem, pattern)
        kp = padded_k(k)
        a = k_major(a3, m, kp)
        bt = k_major(b3.transpose(0, 2, 1), problem.n, kp)
        c = poisoned("C", (batch, m, problem.n), np.float32)
        return Operands(problem, pattern, (OperandArray("A", a), OperandArray("Bt", bt), c))

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes): one block per 128 x BN tile of each C[z]."""
        grid = (ceil_div(p.n, self.block_n), ceil_div(p.m, BM), p.batch)
        return grid, self.threads, self.stages * self.stage_bytes() + 1024

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float | TensorMap]:
        """The 3D tensor maps of A and Bt (K, rows, batch), then C, M, N, Kp and C's batch stride."""
        p = operands.problem
        kp = operands["Bt"].shape[2]
        map_a = TensorMap("f16", pointers["A"], (kp, p.m, p.batch), (2 * kp, 2 * kp * p.m), (BK, BM, 1),
                          swizzle="128B")
        map_b = TensorMap("f16", pointers["Bt"], (kp, p.n, p.batch), (2 * kp, 2 * kp * p.n),
                          (BK, self.block_n, 1), swizzle="128B")
        return [map_a, map_b, pointers["C"], p.m, p.n, kp, p.m * p.n]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """C: batch x M x N (M x N for a batch of one)."""
        c = outputs["C"]
        return c[0] if operands.problem.batch == 1 else c

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 A[z] @ B[z] of the fp16 device operands."""
        p = operands.problem
        a = operands["A"][:, :, : p.k].astype(np.float64)
        bt = operands["Bt"][:, :, : p.k].astype(np.float64)
        out = np.matmul(a, bt.transpose(0, 2, 1))
        return out[0] if p.batch == 1 else out


WGMMA_BATCHED_KERNELS: tuple[WgmmaBatchedGemmKernel, ...] = (
    WgmmaBatchedGemmKernel(128, 4),
    WgmmaBatchedGemmKernel(256, 4),
)
"""The dense Hopper GEMM's two tiles as strided-batched launches (activation x activation GEMMs)."""

"""The CUDA Core Vector-wise kernel: paper 001's VectorSparse SGEMM (Sec. 3.3) on the SIMT tiles of the dense
fp32 SGEMM, for vector-wise weights with L = 16 and KV in {2, 4, 8} non-zeros per vector
(ptx_kernels/gemm_simt_vw.cu).

Parameters (vals, offs, B, C, M, N, K, ldv, ldo, ldb, ldc): four 64-bit pointers then seven 32-bit integers.
The weights are the vw pattern's VWFormat (row vectors along K, `axis=row`) laid out as the kernel reads
it: vals (M x nvec*KV fp32, the KV values of each vector in order) and offs (M x nvec integers of 4*KV bits:
u8, u16, u32 for KV = 2, 4, 8), each holding its vector's KV 4-bit offsets least-significant nibble first.
B = X (K x N) and C (M x N) are dense row-major fp32.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.gemm import GemmKernel
from stcsim.kernels.descriptors.sparse_support import (
    FP32_TOLERANCE,
    OFFSET_WORDS,
    check_simt_f32,
    pack_offsets,
    unpack_offsets,
)
from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import OperandArray, Operands, poisoned
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, TileShape, ceil_div
from stcsim.kernels.protocol import Dim3, require
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.vectorwise import VWFormat

VECTOR_LENGTH = 16


@dataclass(frozen=True)
class VectorWiseSimtKernel(CommittedPtx):
    """Descriptor of the VectorSparse SGEMM for vw:L=16,K=`kv`,axis=row: the tiles, threads and launch of
    the dense fp32 SIMT kernel `dense`, whose k step of BK columns of A becomes BK compressed columns
    (BK / kv whole vectors)."""

    dense: GemmKernel
    kv: int
    ptx_file: str = "gemm_simt_vw.ptx"
    summary: str = "SGEMM tiles; each row vector's kv values multiply the rows of B its offsets select"

    pattern_name: ClassVar[str] = "vw"
    tolerance: ClassVar[float] = FP32_TOLERANCE

    def __post_init__(self) -> None:
        check_simt_f32(self.dense, "VectorWiseSimtKernel")
        if self.kv not in OFFSET_WORDS:
            raise ValueError(f"non-zeros per vector must be one of {sorted(OFFSET_WORDS)}, got {self.kv}")

    @property
    def instruction(self) -> str:
        """The math instruction of the inner loop (the dense kernel's)."""
        return self.dense.instruction

    @property
    def block_tile(self) -> TileShape:
        """The dense kernel's block tile (its k step counts compressed columns: BK / kv whole vectors)."""
        return self.dense.block_tile

    @property
    def estimate_depth(self) -> int:
        """Columns of K one block k step covers (BK / kv vectors of 16), for the per-shape choice's
        short-K estimate."""
        return self.dense.block_tile.k // self.kv * VECTOR_LENGTH

    @property
    def procedural_name(self) -> str:
        """The dense kernel's name with the algorithm simt_vw_l16k<kv>."""
        algorithm = f"simt_vw_l{VECTOR_LENGTH}k{self.kv}"
        return dataclasses.replace(self.dense, algorithm=algorithm).procedural_name

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """Only vw with L = 16, K = kv and row vectors (along the reduction dimension)."""
        want = f"vw:L={VECTOR_LENGTH},K={self.kv},axis=row"
        if pattern.name == self.pattern_name and pattern.spec() == want:
            return True, ""
        return False, f"{self.procedural_name} implements {want}, not {pattern.spec()}"

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """The pattern, a non-empty problem, the CUDA grid limits and 32-bit indices into A, X and C."""
        slots = p.m * ceil_div(p.k, VECTOR_LENGTH) * self.kv
        return check_launch(self, p, pattern, lambda _: {"vals": slots, "X": p.k * p.n, "C": p.m * p.n})

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """W pruned to `sparsity` (at least 1 - kv/16) and encoded vector-wise; vals and packed offs as the
        kernel reads them, B = X in fp32, C poisoned with NaN."""
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        w = np.asarray(weights, dtype=np.float32)
        fmt = pattern.encode(w, pattern.prune(w, sparsity))
        arrays = (
            OperandArray("vals", fmt.values.reshape(problem.m, -1).astype(np.float32)),
            OperandArray("offs", pack_offsets(fmt.offsets)),
            OperandArray("B", np.asarray(activations, dtype=np.float32)),
            poisoned("C", (problem.m, problem.n), np.float32),
        )
        return Operands(problem, pattern, arrays)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """The dense kernel's: one thread block per 64 x 64 tile of C."""
        return self.dense.launch_geometry(p)

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """vals, offs, B, C, M, N, K, ldv, ldo, ldb, ldc."""
        p = operands.problem
        ptrs = [pointers[name] for name in ("vals", "offs", "B", "C")]
        ldv, ldo = operands["vals"].shape[1], operands["offs"].shape[1]
        return [*ptrs, p.m, p.n, p.k, ldv, ldo, p.n, p.n]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The M x N result C."""
        return outputs["C"]

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X, W rebuilt from vals and offs through the vw pattern's decode."""
        p, kv = operands.problem, self.kv
        offs = operands["offs"]
        values = operands["vals"].reshape(p.m, offs.shape[1], kv)
        fmt = VWFormat((p.m, p.k), VECTOR_LENGTH, kv, "row", values, unpack_offsets(offs, kv))
        return operands.pattern.decode(fmt).astype(np.float64) @ operands["B"].astype(np.float64)

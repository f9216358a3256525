"""The CUDA Core Unified kernel: the dense SIMT GEMM on the kept reduction columns of a channel-pruned
weight matrix (ptx_kernels/gemm_simt_channel.cu).

Parameters (A, ids, B, C, M, N, kept, lda, ldb, ldc): four 64-bit pointers then six 32-bit integers.
A holds the kept columns of W (M x kept, fp32, row-major), ids their column numbers (ascending int32) closed
by K (kept + 1 entries, as CSR row pointers close with nnz; the kernel reads only the first kept), B the full
activations X (K x N) and C the result (M x N). The kernel gathers the kept rows of X in its B-tile loads:
every CUDA-core configuration reads the same K x N activations (docs/kernels.md, "Where the gather is paid").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.gemm import GemmKernel
from stcsim.kernels.descriptors.sparse_support import FP32_TOLERANCE, check_simt_f32
from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import OperandArray, Operands, poisoned
from stcsim.kernels.paths import CommittedPtx
from stcsim.kernels.problem import GemmProblem, TileShape
from stcsim.kernels.protocol import Dim3, require, supports_family
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.channel import ChannelFormat


@dataclass(frozen=True)
class ChannelGemmKernel(CommittedPtx):
    """Descriptor of the channel-pruned SIMT GEMM: the tiles, threads and launch of the dense fp32 SIMT
    kernel `dense` (a GemmKernel), run over the kept reduction columns only."""

    dense: GemmKernel
    ptx_file: str = "gemm_simt_channel.ptx"
    summary: str = "the dense SIMT GEMM on the kept reduction columns, kept rows of X gathered in the kernel"

    pattern_name: ClassVar[str] = "channel"
    tolerance: ClassVar[float] = FP32_TOLERANCE

    def __post_init__(self) -> None:
        check_simt_f32(self.dense, "ChannelGemmKernel")

    @property
    def instruction(self) -> str:
        """The math instruction of the inner loop (the dense kernel's)."""
        return self.dense.instruction

    @property
    def block_tile(self) -> TileShape:
        """The dense kernel's block tile (its k step counts kept columns)."""
        return self.dense.block_tile

    @property
    def estimate_depth(self) -> int:
        """Columns of K per block k step in the per-shape choice's short-K estimate: the tile's k step."""
        return self.dense.block_tile.k

    @property
    def procedural_name(self) -> str:
        """The dense kernel's name with the algorithm simt_channel."""
        return dataclasses.replace(self.dense, algorithm="simt_channel").procedural_name

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """The channel pattern (any sparsity)."""
        return supports_family(self, pattern)

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """The pattern, a non-empty problem, the CUDA grid limits and 32-bit indices into A, X and C."""
        return check_launch(self, p, pattern, lambda _: {"A": p.m * p.k, "X": p.k * p.n, "C": p.m * p.n})

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """W pruned to `sparsity` by whole reduction columns; A = the kept columns (fp32, at least one
        column wide: all zeros when nothing is kept), ids = their numbers closed by K, B = X in fp32, C
        poisoned with NaN."""
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        w = np.asarray(weights, dtype=np.float32)
        fmt = pattern.encode(w, pattern.prune(w, sparsity))
        kept = fmt.columns.size
        a = np.zeros((problem.m, max(kept, 1)), dtype=np.float32)
        a[:, :kept] = fmt.values
        arrays = (
            OperandArray("A", a),
            OperandArray("ids", np.append(fmt.columns, problem.k).astype(np.int32)),
            OperandArray("B", np.asarray(activations, dtype=np.float32)),
            poisoned("C", (problem.m, problem.n), np.float32),
        )
        return Operands(problem, pattern, arrays)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """The dense kernel's: one thread block per 64 x 64 tile of C."""
        return self.dense.launch_geometry(p)

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """A, ids, B, C, M, N, kept, lda, ldb, ldc."""
        p = operands.problem
        ptrs = [pointers[name] for name in ("A", "ids", "B", "C")]
        return [*ptrs, p.m, p.n, kept_columns(operands), operands["A"].shape[1], p.n, p.n]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The M x N result C."""
        return outputs["C"]

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X, W rebuilt from A and ids through the channel pattern's decode."""
        p, kept = operands.problem, kept_columns(operands)
        fmt = ChannelFormat((p.m, p.k), operands["ids"][:kept], operands["A"][:, :kept])
        return operands.pattern.decode(fmt).astype(np.float64) @ operands["B"].astype(np.float64)


def kept_columns(operands: Operands) -> int:
    """Number of reduction columns the channel-pruned operands keep (ids holds them and the closing K)."""
    return operands["ids"].size - 1

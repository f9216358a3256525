"""The dense GEMM kernel descriptor: the kernel protocol (stcsim.kernels.protocol) for the dense kernel set.

Every dense kernel computes C = A @ B (A = the weights W, B = the activations X) and takes the parameters
(A, B, C, M, N, K, lda, ldb, ldc): three 64-bit pointers then six 32-bit integers.

A *split-K* descriptor (``splits`` > 1) launches ``splits`` K slices along the grid's z (the entry's
``_splitk`` form, which reads the slice count from ``gridDim.z``) and adds its partial sums to a zeroed C
with atomic adds. The tile configurations registered for the per-shape choice (issue 44: ``per_shape``)
are ignored by the fixed rule of stcsim.harness.kernel_choice.
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
from stcsim.kernels.protocol import Dim3, require, supports_family
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.dense import DenseFormat

_TOLERANCE = {"float16": 1e-2, "float32": 1e-5}


@dataclass(frozen=True)
class GemmKernel(CommittedPtx):
    """Descriptor of one dense GEMM kernel compiled into the PTX of `ptx_file` (a `Kernel`).

    algorithm: naive | simt | wmma_global | wmma | mma (procedural-name token).
    block_tile: the C tile of one thread block and its k step. threads: the thread-block shape.
    warp_tile / thread_tile: (m, n) of C computed by one warp / one thread, where the algorithm has them.
    instruction: the math instruction (PTX opcode family) of the inner loop.
    stages: shared-memory pipeline depth. dynamic_shared_bytes: dynamic shared memory per block (static
    `.shared` arrays are declared in the PTX itself).
    sliced: the entry is the ``_splitk`` form that splits K over ``gridDim.z`` (stores with one slice, adds
    atomically with several). splits: K slices per launch (> 1 only for a sliced entry; the name ends in
    ``_splitk<S>``). per_shape: registered for the per-shape choice among tiles and splits (issue 44), not for
    the fixed rule.
    """

    algorithm: str
    layout: OperandLayout
    block_tile: TileShape
    threads: Dim3
    ptx_file: str
    instruction: str
    warp_tile: tuple[int, int] | None = None
    thread_tile: tuple[int, int] | None = None
    stages: int = 1
    dynamic_shared_bytes: int = 0
    summary: str = ""
    sliced: bool = False
    splits: int = 1
    per_shape: bool = False

    pattern_name: ClassVar[str] = "dense"

    @property
    def procedural_name(self) -> str:
        """Name that says algorithm, data types and tiles, e.g. gemm_wmma_f16_f32_tile64x64x32_warp32x32."""
        parts = ["gemm", self.algorithm, self.layout.type_tag, f"tile{self.block_tile}"]
        if self.warp_tile is not None:
            parts.append("warp{}x{}".format(*self.warp_tile))
        if self.thread_tile is not None:
            parts.append("thread{}x{}".format(*self.thread_tile))
        if self.stages > 1:
            parts.append(f"stage{self.stages}")
        if self.splits > 1:
            parts.append(f"splitk{self.splits}")
        return "_".join(parts)

    @property
    def entry(self) -> str:
        """The `.entry` in the PTX: the procedural name, or for a sliced kernel its ``_splitk`` form (one
        entry for every slice count)."""
        if not self.sliced:
            return self.procedural_name
        return self.procedural_name.removesuffix(f"_splitk{self.splits}") + "_splitk"

    @property
    def min_k(self) -> int:
        """Smallest K a split-K launch takes: two block k steps per slice (1 for an unsplit kernel)."""
        return 2 * self.splits * self.block_tile.k if self.splits > 1 else 1

    def __post_init__(self) -> None:
        if self.splits < 1 or (self.splits > 1 and not self.sliced):
            raise ValueError(f"splits = {self.splits} needs a sliced (_splitk) entry")

    @property
    def tolerance(self) -> float:
        """Largest accepted max|C - ref| / max|ref| for this kernel's input type."""
        return _TOLERANCE[self.layout.a_dtype]

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """Only the dense pattern (the weights are used as they are)."""
        return supports_family(self, pattern)

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """Whether the kernel runs problem p with weights in `pattern` correctly, and why not."""
        lay = self.layout
        ok, why = check_launch(
            self, p, pattern, lambda _: {"A": p.m * lay.lda(p), "B": p.k * lay.ldb(p), "C": p.m * lay.ldc(p)}
        )
        if ok and p.k < self.min_k:
            return False, (f"{self.procedural_name} splits K into {self.splits} slices of at least two "
                           f"{self.block_tile.k}-deep steps: K = {p.k} < {self.min_k}")
        return ok, why

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """A = the dense pattern's encoding of the weights, B = the activations, both padded to the layout and
        rounded to its input type; C poisoned with NaN (zeros for split-K, whose slices add into C)."""
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        w = np.asarray(weights)
        encoded = pattern.encode(w, pattern.prune(w, sparsity))
        lay = self.layout
        arrays = (
            OperandArray("A", lay.pack_a(encoded.values)),
            OperandArray("B", lay.pack_b(np.asarray(activations))),
            poisoned("C", lay.c_shape(problem), lay.c_dtype) if self.splits == 1
            else OperandArray("C", np.zeros(lay.c_shape(problem), dtype=lay.c_dtype), output=True),
        )
        return Operands(problem, pattern, arrays)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes): one thread block per block tile of C and K slice."""
        grid = (ceil_div(p.n, self.block_tile.n), ceil_div(p.m, self.block_tile.m), self.splits)
        return grid, self.threads, self.dynamic_shared_bytes

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """Kernel arguments in `.param` order: A, B, C, M, N, K, lda, ldb, ldc."""
        p, lay = operands.problem, self.layout
        ptrs = [pointers["A"], pointers["B"], pointers["C"]]
        return [*ptrs, p.m, p.n, p.k, lay.lda(p), lay.ldb(p), lay.ldc(p)]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The m x n result from the C buffer."""
        return self.layout.unpack_c(outputs["C"], operands.problem)

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 product of the operands as the kernel reads them (rounded to its input types), A decoded
        through the dense pattern."""
        p = operands.problem
        a = operands.pattern.decode(DenseFormat(operands["A"][:, : p.k]))
        return a.astype(np.float64) @ operands["B"][:, : p.n].astype(np.float64)

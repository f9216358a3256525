"""The SparseRT kernel (paper 003) through the kernel protocol: PTX generated per weight matrix.

``prepare`` prunes W (the ``sparsert`` pattern: unstructured magnitude pruning, CSR) and lays out X and the
NaN-poisoned Y; the CSR arrays ride along as operands the kernel never reads (the weights are in its code),
so the reference decodes exactly what the generator was given and their hash keys the PTX cache. A launch
loads ``generated_ptx(operands)`` (stcsim.kernels.protocol.ptx_for); the kernel takes two parameters, the
X and Y pointers: M, N, K, the strides and the weights are all baked in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from stcsim.kernels.codegen.sparsert_codegen import ENTRY, Generated, generate_cached
from stcsim.kernels.codegen.sparsert_plan import ROW_CAP_FACTOR, SplitParams
from stcsim.kernels.descriptors.sparse_support import FP32_TOLERANCE, csr_of, csr_operands, csr_reference
from stcsim.kernels.limits import INT32_MAX, check_launch
from stcsim.kernels.operands import Operands
from stcsim.kernels.problem import GemmProblem, ceil_div
from stcsim.kernels.protocol import Dim3, supports_family
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.csr import CSRFormat
from stcsim.sparsity.unstructured import SparseRT

STATIC_SHARED_LIMIT = 48 * 1024
SPECIMEN_SHAPE = (64, 64, 64)
SPECIMEN_SPARSITY = 0.9


@dataclass(frozen=True)
class SparseRtKernel:
    """Descriptor of the generated SpMM for one split setting
    (stcsim.kernels.codegen.sparsert_plan.SplitParams)."""

    params: SplitParams = field(default_factory=SplitParams)
    instruction: str = "fma.rn.f32"
    summary: str = "PTX generated per weight matrix: unrolled FMAs with the weights as constants (SparseRT)"

    pattern_name: ClassVar[str] = "sparsert"
    tolerance: ClassVar[float] = FP32_TOLERANCE
    entry: ClassVar[str] = ENTRY

    @property
    def procedural_name(self) -> str:
        """spmm_sparsert_f32_f32_tile<rows>x<columns>_groups<G>_<weights>."""
        p = self.params
        return f"spmm_sparsert_f32_f32_tile{p.rows_per_block}x{p.columns}_groups{p.groups}_{p.weights}"

    @property
    def ptx_path(self) -> Path:
        """A specimen: the kernel generated for a seeded 64 x 64 W at 90% and N = 64 (what the kernel choice
        reads for its math units and the job cache digests; it changes when the generator does)."""
        m, k, n = SPECIMEN_SHAPE
        w = np.random.default_rng(0).uniform(-1.0, 1.0, (m, k)).astype(np.float32)
        pattern = SparseRT()
        return generate_cached(pattern.encode(w, pattern.prune(w, SPECIMEN_SPARSITY)), n, self.params).path

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """The sparsert pattern (any sparsity)."""
        return supports_family(self, pattern)

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """The pattern, a non-empty problem in the grid limits, byte offsets into X and Y that fit the 32-bit
        immediates of the generated addresses, and the partial sums in 48 KiB of static shared memory."""
        extents = {"X": p.k * p.n, "Y": p.m * p.n}
        ok, reason = check_launch(self, p, pattern, lambda _: extents)
        if not ok:
            return False, reason
        if 4 * max(extents.values()) > INT32_MAX:
            return False, f"byte offsets into X or Y of {p} pass the 32-bit immediates of the generated code"
        rows = min(p.m, ROW_CAP_FACTOR * self.params.rows_per_block)
        shared = 4 * (self.params.groups - 1) * rows * self.params.columns
        if shared > STATIC_SHARED_LIMIT:
            return False, f"{shared} bytes of partial sums exceed {STATIC_SHARED_LIMIT} of static shared"
        return True, ""

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """W pruned to `sparsity` as CSR (fp32; not read by the kernel), X in fp32, Y poisoned with NaN
        (sparse_support.csr_operands)."""
        return csr_operands(self, weights, activations, pattern, sparsity)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """Grid (ceil(N / columns), ceil(M / rows_per_block), 1); block (columns * groups, 1, 1); the shared
        partial sums are static in the PTX."""
        grid = (ceil_div(p.n, self.params.columns), ceil_div(p.m, self.params.rows_per_block), 1)
        return grid, (self.params.columns * self.params.groups, 1, 1), 0

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """x, y (everything else is in the code)."""
        return [pointers["x"], pointers["y"]]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The M x N result Y."""
        return outputs["y"]

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X from the CSR the generator was given."""
        return csr_reference(operands)

    def csr(self, operands: Operands) -> CSRFormat:
        """The weights of `operands` as the CSR they were encoded to."""
        return csr_of(operands)

    def generated(self, operands: Operands) -> Generated:
        """The module generated (or found in the cache) for the weights and N of `operands`."""
        return generate_cached(self.csr(operands), operands.problem.n, self.params)

    def generated_ptx(self, operands: Operands) -> Path:
        """The PTX file a launch of `operands` loads."""
        return self.generated(operands).path

    def generation_stats(self, operands: Operands) -> dict[str, float | int | str]:
        """codegen_seconds (first generation of this module in the process, or its disk-cache read),
        codegen_cached, codegen_ptx_lines, codegen_weights (imm or const)."""
        g = self.generated(operands)
        return {"codegen_seconds": g.seconds, "codegen_cached": int(g.cached), "codegen_ptx_lines": g.lines,
                "codegen_weights": g.weights}


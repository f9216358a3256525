"""The ExTensor chunk SpMM (paper 004): one PTX entry (ptx_kernels/spmm_extensor.cu) driven by a stream of
chunk records, one descriptor per instruction-selection scheme (stcsim.kernels.descriptors.extensor_plans).

The weights are pruned by the ``extensor`` pattern (unstructured magnitude pruning), planned by the scheme,
encoded by stcsim.sparsity.extensor.encode_chunks and laid out as records
(stcsim.kernels.descriptors.extensor_records). X is fp16 row-major with its rows padded to whole K panels of
64 and its leading dimension rounded up to 8 (zero padding, which the kernel never multiplies into D), D fp32
m x n. """

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from stcsim.kernels.descriptors.extensor_plans import SCHEMES, required_max_l, scheme_plans
from stcsim.kernels.descriptors.extensor_records import (
    GROUPS,
    MAX_PANEL_BYTES,
    PANEL,
    SLICES_PER_ROW,
    RecordStream,
    pack_records,
    unpack_records,
)
from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.limits import check_launch
from stcsim.kernels.operands import OperandArray, Operands, float64_product, poisoned
from stcsim.kernels.paths import PTX_DIR
from stcsim.kernels.problem import GemmProblem, ceil_div, round_up
from stcsim.kernels.protocol import Dim3, require
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.extensor import ExTensor, encode_chunks
from stcsim.sparsity.extensor_planner import SLICE_ROWS

_LAYOUT = OperandLayout(a_dtype="float16", b_dtype="float16", align_ab=8)
BLOCK_N = 32  # columns of D per thread block (2 warps of 16 per slice)
BLOCK_M = SLICES_PER_ROW * SLICE_ROWS
# Shared memory of one warp group (GroupSmem in the .cu): two X panels of 64 rows x (32 + 8) halves, then the
# larger of the staged records (two slices' worth) and four 16x16 f32 epilogue tiles.
GROUP_SHARED_BYTES = 2 * PANEL * (BLOCK_N + 8) * 2 + max(SLICES_PER_ROW * MAX_PANEL_BYTES, 4 * 16 * 16 * 4)


@dataclass(frozen=True)
class ExtensorSpmmKernel:
    """Descriptor of the chunk SpMM running the plans of one scheme (a `Kernel`)."""

    scheme: str
    threads: Dim3 = (GROUPS * 128, 1, 1)

    pattern_name: ClassVar[str] = "extensor"
    tolerance: ClassVar[float] = 1e-2
    entry: ClassVar[str] = "spmm_extensor_f16_f32_tile32x32_warp16x16"
    ptx_file: ClassVar[str] = "spmm_extensor.ptx"
    instruction: ClassVar[str] = "wmma.smma.mma (wmma.smma.L)"

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown ExTensor scheme {self.scheme!r}; allowed: {', '.join(SCHEMES)}")

    @property
    def procedural_name(self) -> str:
        """e.g. spmm_extensor_dynamic_f16_f32_tile16x64_warp16x16."""
        return f"spmm_extensor_{self.scheme}_{_LAYOUT.type_tag}_tile{BLOCK_M}x{BLOCK_N}_warp16x16"

    @property
    def ptx_path(self) -> Path:
        """The committed PTX of the chunk SpMM (one entry for every scheme)."""
        return PTX_DIR / self.ptx_file

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """The extensor pattern with chunks as wide as the scheme needs (maxL >= 32 for l32, 64 for l64)."""
        if not isinstance(pattern, ExTensor):
            return False, f"{self.procedural_name} implements the extensor pattern, not {pattern.spec()}"
        need = required_max_l(self.scheme)
        if pattern.maxL < need:
            return False, f"{self.procedural_name} needs extensor maxL >= {need}, got {pattern.spec()}"
        return True, ""

    def can_implement(self, p: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """Whether the kernel runs problem p with weights in `pattern`, and why not."""
        x_elements = round_up(p.k, PANEL) * _LAYOUT.ldb(p)
        return check_launch(self, p, pattern, lambda _: {"X": x_elements, "D": p.m * p.n})

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """Prune W (unstructured), plan the chunks by the scheme, encode and lay them out as records; X as
        fp16 in whole K panels with ldb a multiple of 8; D poisoned with NaN."""
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        w = np.asarray(weights)
        mask = pattern.prune(w, sparsity)
        fmt = encode_chunks(w, mask, scheme_plans(mask, self.scheme, pattern))
        stream = pack_records(fmt, mask, pattern.reading)
        x = np.zeros((round_up(problem.k, PANEL), _LAYOUT.ldb(problem)), dtype=np.float16)
        x[: problem.k] = _LAYOUT.pack_b(np.asarray(activations))
        arrays = (
            OperandArray("records", stream.records),
            OperandArray("offsets", stream.offsets),
            OperandArray("split", stream.split),
            OperandArray("X", x),
            poisoned("D", _LAYOUT.c_shape(problem), _LAYOUT.c_dtype),
        )
        return Operands(problem, pattern, arrays)

    def launch_geometry(self, p: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes): a block per two 16-row slices and 32 columns of D; dynamic
        shared memory holds the warp groups' buffers and the block row's record offsets."""
        offsets_bytes = 4 * (2 * ceil_div(p.k, PANEL) + 1)
        shared = GROUPS * GROUP_SHARED_BYTES + round_up(offsets_bytes, 16)
        return (ceil_div(p.n, BLOCK_N), ceil_div(p.m, BLOCK_M), 1), self.threads, shared

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """records, offsets, split, X, D, M, N, K, ldb, ldc."""
        p = operands.problem
        ptrs = [pointers[name] for name in ("records", "offsets", "split", "X", "D")]
        return [*ptrs, p.m, p.n, p.k, _LAYOUT.ldb(p), _LAYOUT.ldc(p)]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The m x n result from the D buffer."""
        return _LAYOUT.unpack_c(outputs["D"], operands.problem)

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 decode(W) @ X, W rebuilt from the records through the extensor pattern's decode."""
        p = operands.problem
        stream = RecordStream(operands["records"], operands["offsets"], operands["split"])
        fmt = unpack_records(stream, (p.m, p.k))
        if fmt is None:
            return np.zeros((p.m, p.n))
        decoded = operands.pattern.decode(fmt)  # (the columns past it are zero: they add nothing)
        return float64_product(decoded, operands["X"][: decoded.shape[1], : p.n].T)


EXTENSOR_KERNELS: tuple[ExtensorSpmmKernel, ...] = tuple(ExtensorSpmmKernel(s) for s in SCHEMES)
"""The chunk SpMM under each of paper 004's five schemes."""

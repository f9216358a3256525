"""Operand layouts: how A, B and C of a GEMM lie in device memory for one kernel."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stcsim.kernels.problem import GemmProblem, round_up

_SHORT = {"float16": "f16", "float32": "f32"}


@dataclass(frozen=True)
class OperandLayout:
    """Row-major A (m x k), B (k x n) and C (m x n) with their element types.

    Rows of A and B are padded with zeros to a multiple of `align_ab` elements (the kernel's leading
    dimensions lda and ldb), so that vector copies of `align_ab` elements stay aligned. C is dense (ldc = n).
    """

    a_dtype: str
    b_dtype: str
    c_dtype: str = "float32"
    align_ab: int = 1

    def __post_init__(self) -> None:
        for dtype in (self.a_dtype, self.b_dtype, self.c_dtype):
            if dtype not in _SHORT:
                raise ValueError(f"unsupported dtype {dtype!r}; allowed: {sorted(_SHORT)}")
        if self.align_ab < 1:
            raise ValueError(f"align_ab must be >= 1, got {self.align_ab}")

    @property
    def type_tag(self) -> str:
        """Input and accumulator types as they appear in procedural names, e.g. 'f16_f32'."""
        return f"{_SHORT[self.a_dtype]}_{_SHORT[self.c_dtype]}"

    def lda(self, p: GemmProblem) -> int:
        """Leading dimension of A in elements."""
        return round_up(p.k, self.align_ab)

    def ldb(self, p: GemmProblem) -> int:
        """Leading dimension of B in elements."""
        return round_up(p.n, self.align_ab)

    def ldc(self, p: GemmProblem) -> int:
        """Leading dimension of C in elements."""
        return p.n

    def c_shape(self, p: GemmProblem) -> tuple[int, int]:
        """Shape of the C buffer in device memory."""
        return (p.m, self.ldc(p))

    def pack_a(self, a: np.ndarray) -> np.ndarray:
        """A as the kernel reads it: contiguous (m, lda) array of a_dtype, zero padded."""
        return _pad_rows(a, round_up(a.shape[1], self.align_ab), self.a_dtype)

    def pack_b(self, b: np.ndarray) -> np.ndarray:
        """B as the kernel reads it: contiguous (k, ldb) array of b_dtype, zero padded."""
        return _pad_rows(b, round_up(b.shape[1], self.align_ab), self.b_dtype)

    def unpack_c(self, c: np.ndarray, p: GemmProblem) -> np.ndarray:
        """The m x n result from the C buffer read back from the device."""
        return np.ascontiguousarray(c[:, : p.n])


def _pad_rows(x: np.ndarray, width: int, dtype: str) -> np.ndarray:
    out = np.zeros((x.shape[0], width), dtype=dtype)
    out[:, : x.shape[1]] = x
    return out

"""GEMM problem sizes and tile shapes shared by every kernel descriptor."""

from __future__ import annotations

from dataclasses import dataclass


def ceil_div(a: int, b: int) -> int:
    """Smallest integer not below a / b (for positive b)."""
    return -(-a // b)


def round_up(a: int, multiple: int) -> int:
    """Smallest multiple of `multiple` not below a."""
    return ceil_div(a, multiple) * multiple


@dataclass(frozen=True)
class GemmProblem:
    """C (m x n) = A (m x k) @ B (k x n); ``batch`` > 1: that many GEMMs of this shape in one strided-batched
    launch (C[i] = A[i] @ B[i], as cublasGemmStridedBatchedEx runs them; only kernels with a batch dimension,
    ``batched``, take one)."""

    m: int
    n: int
    k: int
    batch: int = 1

    @classmethod
    def of(cls, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> GemmProblem:
        """The problem that multiplies matrices of these shapes; ValueError if they do not chain."""
        if len(a_shape) != 2 or len(b_shape) != 2 or a_shape[1] != b_shape[0]:
            raise ValueError(f"A {a_shape} @ B {b_shape}: need 2-D A (m, k) and B (k, n)")
        return cls(int(a_shape[0]), int(b_shape[1]), int(a_shape[1]))

    @property
    def flops(self) -> int:
        """Floating-point operations of the product (one multiply and one add per term), every batch GEMM."""
        return 2 * self.m * self.n * self.k * self.batch

    def __str__(self) -> str:
        shape = f"{self.m}x{self.n}x{self.k}"
        return f"{self.batch} x {shape}" if self.batch > 1 else shape


@dataclass(frozen=True)
class TileShape:
    """An m x n x k tile; k is the step along the reduction dimension."""

    m: int
    n: int
    k: int

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

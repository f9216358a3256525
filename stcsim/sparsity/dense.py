"""Dense baseline: keeps every weight, stored as a plain row-major ``M x K`` array (no metadata)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.sparsity.base import FP16_BYTES, Pattern, SparseFormat, check_mask, check_sparsity, check_weights


@dataclass(frozen=True, eq=False)
class DenseFormat(SparseFormat):
    """Row-major dense values; ``nbytes`` = ``M * K * value_bytes``, no index metadata."""

    values: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        """Matrix shape ``(M, K)``."""
        return self.values.shape

    def to_dense(self) -> np.ndarray:
        """Return a copy of the stored matrix."""
        return self.values.copy()

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Only values: ``M * K * value_bytes``."""
        return {"values": self.values.size * value_bytes}


@dataclass(frozen=True)
class Dense(Pattern):
    """The dense baseline: ``prune`` keeps everything whatever the target (it is the reference point)."""

    name: ClassVar[str] = "dense"

    def prune(self, weights: np.ndarray, sparsity: float) -> np.ndarray:
        """Return an all-True mask (the target sparsity is validated, then ignored)."""
        check_sparsity(sparsity)
        return np.ones(check_weights(weights).shape, dtype=bool)

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> DenseFormat:
        """Store ``weights * mask`` densely."""
        w, m = check_mask(weights, mask)
        return DenseFormat(np.where(m, w, np.zeros((), dtype=w.dtype)))

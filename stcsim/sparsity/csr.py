"""Compressed Sparse Row storage (used by unstructured pruning and by TEW's element-wise part).

Orientation: rows are the output dimension ``M`` of ``W`` (``M x K``), column indices run along the
reduction dimension ``K``. This is the CSC of the transposed ``K x N`` weight of paper 002.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stcsim.sparsity.base import FP16_BYTES, SparseFormat

CSR_INDEX_BYTES = 4  # int32 row pointers and column indices (cuSPARSE convention)


@dataclass(frozen=True, eq=False)
class CSRFormat(SparseFormat):
    """CSR: ``indptr`` (M+1 int32), ``indices`` (nnz int32 column ids), ``values`` (nnz, W's dtype)."""

    shape: tuple[int, int]
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray

    @classmethod
    def from_masked(cls, weights: np.ndarray, mask: np.ndarray) -> CSRFormat:
        """Build the CSR of ``weights * mask`` (row-major order of the kept positions)."""
        rows, cols = np.nonzero(mask)
        indptr = np.zeros(mask.shape[0] + 1, dtype=np.int32)
        np.cumsum(np.bincount(rows, minlength=mask.shape[0]), out=indptr[1:])
        return cls(mask.shape, indptr, cols.astype(np.int32), weights[rows, cols])

    def to_dense(self) -> np.ndarray:
        """Scatter the values back into a zero matrix."""
        out = np.zeros(self.shape, dtype=self.values.dtype)
        rows = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        out[rows, self.indices] = self.values
        return out

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Values at ``value_bytes`` each; ``indptr`` and ``indices`` as int32."""
        return {
            "values": self.values.size * value_bytes,
            "indptr": self.indptr.size * CSR_INDEX_BYTES,
            "indices": self.indices.size * CSR_INDEX_BYTES,
        }

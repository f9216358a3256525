"""Shuffled block-wise (Shfl-BW) sparsity of paper 000.

Orientation: ``W`` is ``M x K`` (output rows x reduction). Rows are zero-padded to a multiple of both 16
(the Tensor Core tile height) and ``V`` (so that they form whole groups; the paper leaves padding open):
the 1000-row classifier of a CNN runs as 1024 rows at ``V = 32`` or ``64``. A mask is Shfl-BW when the
rows can be permuted into groups of ``V`` consecutive rows that keep the same reduction columns (``V x 1``
vectors); stitching a group's kept columns gives a dense ``V x n`` block (the column gather is per group).

Pruning (paper 000, Sec. 5) with target density ``alpha = 1 - s``:

1. unstructured magnitude mask keeping ``beta = min(1, beta_factor * alpha)`` of the weights (paper: 2);
2. balanced K-Means of the mask rows into groups of exactly ``V`` (:mod:`stcsim.sparsity.kmeans`, seeded);
3. rows permuted so that groups are contiguous;
4. vector-wise pruning in that order: every group keeps the same ``round(alpha * K)`` columns with the
   largest summed ``|w|`` over its rows (equal width per group: balanced work, exact density);
5. the permutation is undone (the mask is returned in the original row order).

Format: ``row_indices`` (original row of each stored row, group-major; ids ``>= M`` are padding rows),
per-group column metadata ``col_ptr`` / ``col_indices`` and ``values`` (each group's ``V x n_g`` block,
row-major, groups concatenated). All indices are int32; values at ``value_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import lcm
from typing import ClassVar

import numpy as np

from stcsim.sparsity.base import (
    FP16_BYTES,
    Pattern,
    SparseFormat,
    check_mask,
    check_sparsity,
    check_weights,
    keep_count,
    pad_to,
)
from stcsim.sparsity.csr import CSR_INDEX_BYTES
from stcsim.sparsity.kmeans import balanced_kmeans
from stcsim.sparsity.select import magnitude, rank_magnitude, top_k_flat

ROW_ALIGN = 16


@dataclass(frozen=True, eq=False)
class ShflBWFormat(SparseFormat):
    """Shfl-BW storage: ``row_indices``, ``col_ptr``, ``col_indices`` (int32) and stitched ``values``."""

    shape: tuple[int, int]
    V: int
    row_indices: np.ndarray
    col_ptr: np.ndarray
    col_indices: np.ndarray
    values: np.ndarray

    def to_dense(self) -> np.ndarray:
        """Scatter each group's stitched block to its original rows and columns."""
        padded_rows = len(self.row_indices)
        out = np.zeros((padded_rows, self.shape[1]), dtype=self.values.dtype)
        start = 0
        for g in range(len(self.col_ptr) - 1):
            cols = self.col_indices[self.col_ptr[g] : self.col_ptr[g + 1]]
            rows = self.row_indices[g * self.V : (g + 1) * self.V]
            block = self.values[start : start + self.V * len(cols)].reshape(self.V, len(cols))
            out[np.ix_(rows, cols)] = block
            start += block.size
        return out[: self.shape[0]]

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Values at ``value_bytes``; row indices, group column pointers and column indices as int32."""
        return {
            "values": self.values.size * value_bytes,
            "row_indices": self.row_indices.size * CSR_INDEX_BYTES,
            "col_ptr": self.col_ptr.size * CSR_INDEX_BYTES,
            "col_indices": self.col_indices.size * CSR_INDEX_BYTES,
        }


@dataclass(frozen=True)
class ShflBW(Pattern):
    """Shuffled block-wise pattern with group height ``V`` (see module docstring)."""

    name: ClassVar[str] = "shflbw"
    V: int = 64
    beta_factor: float = 2.0
    seed: int = 0

    def __post_init__(self) -> None:
        """Validate ``V >= 1`` and ``beta_factor >= 1``."""
        if self.V < 1:
            raise ValueError(f"shflbw: V must be >= 1, got {self.V}")
        if self.beta_factor < 1.0:
            raise ValueError(f"shflbw: beta_factor must be >= 1 (beta >= alpha), got {self.beta_factor}")

    def shape_unit(self) -> tuple[int, int]:
        """Rows in whole groups of ``V`` and whole Tensor Core tiles of 16."""
        return (lcm(ROW_ALIGN, self.V), 1)

    def padded_rows(self, rows: int) -> int:
        """``rows`` rounded up to a multiple of ``lcm(16, V)``."""
        unit = self.shape_unit()[0]
        return -(-rows // unit) * unit

    def group_rows(self, weights: np.ndarray, sparsity: float) -> np.ndarray:
        """Steps 1-3: the row permutation (padded row ids, group-major) from balanced K-Means."""
        w = check_weights(weights)
        padded = self.padded_rows(w.shape[0])
        beta = min(1.0, self.beta_factor * (1.0 - check_sparsity(sparsity)))
        beta_mask = top_k_flat(rank_magnitude(w), keep_count(w.size, 1.0 - beta))
        labels = balanced_kmeans(pad_to(beta_mask, padded, 1).astype(np.float64), self.V, self.seed)
        return np.argsort(labels, kind="stable")

    def prune(self, weights: np.ndarray, sparsity: float) -> np.ndarray:
        """Steps 1-5 of the module docstring."""
        w = check_weights(weights)
        order = self.group_rows(w, sparsity)
        scores = pad_to(magnitude(w), len(order), 1)[order]
        n_cols = keep_count(w.shape[1], sparsity)
        group_scores = scores.reshape(-1, self.V, w.shape[1]).sum(axis=1)
        keep_cols = np.stack([top_k_flat(g, n_cols) for g in group_scores])
        mask = np.zeros((len(order), w.shape[1]), dtype=bool)
        mask[order] = np.repeat(keep_cols, self.V, axis=0)
        return mask[: w.shape[0]]

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> ShflBWFormat:
        """Group rows with identical masks (padding rows fill incomplete groups) and stitch the columns."""
        w, m = check_mask(weights, mask)
        padded = self.padded_rows(w.shape[0])
        patterns, inverse = np.unique(m, axis=0, return_inverse=True)
        order = np.argsort(inverse.ravel(), kind="stable")
        spare = list(range(w.shape[0], padded))
        rows: list[int] = []
        cols: list[np.ndarray] = []
        for p, members in enumerate(np.split(order, np.cumsum(np.bincount(inverse.ravel()))[:-1])):
            fill = -len(members) % self.V
            if fill > len(spare):
                raise ValueError(f"shflbw:V={self.V}: mask rows do not form groups of V identical rows")
            group_rows = list(members) + [spare.pop(0) for _ in range(fill)]
            rows += group_rows
            cols += [np.flatnonzero(patterns[p])] * (len(group_rows) // self.V)
        rows += spare
        cols += [np.zeros(0, dtype=np.int64)] * (len(spare) // self.V)
        wp = pad_to(w, padded, 1)
        row_ids = np.asarray(rows, dtype=np.int32)
        values = [wp[np.ix_(row_ids[g * self.V : (g + 1) * self.V], c)].ravel() for g, c in enumerate(cols)]
        col_ptr = np.concatenate(([0], np.cumsum([len(c) for c in cols]))).astype(np.int32)
        col_indices = np.concatenate(cols).astype(np.int32)
        return ShflBWFormat(w.shape, self.V, row_ids, col_ptr, col_indices, np.concatenate(values))

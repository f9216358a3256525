"""Channel ("unified") sparsity of paper 001, Fig. 1(b): whole reduction columns kept or pruned.

Orientation: a pruning unit is one column ``W[:, k]`` of ``W`` (``M x K``), i.e. one index of the reduction
dimension (an input channel / im2col row of ``X``) for all outputs. Columns are ranked by L2 norm and
``round((1 - s) * K)`` are kept. Storage: the kept column ids (int32) and the dense ``M x K'`` values.
"""

from __future__ import annotations

from dataclasses import dataclass
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
)
from stcsim.sparsity.csr import CSR_INDEX_BYTES
from stcsim.sparsity.select import l2_norm, top_k_flat


@dataclass(frozen=True, eq=False)
class ChannelFormat(SparseFormat):
    """``columns`` (kept reduction indices, int32) and dense ``values`` of shape ``(M, len(columns))``."""

    shape: tuple[int, int]
    columns: np.ndarray
    values: np.ndarray

    def to_dense(self) -> np.ndarray:
        """Scatter the kept columns back."""
        out = np.zeros(self.shape, dtype=self.values.dtype)
        out[:, self.columns] = self.values
        return out

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Values at ``value_bytes``; column ids as int32."""
        return {"values": self.values.size * value_bytes, "columns": self.columns.size * CSR_INDEX_BYTES}


@dataclass(frozen=True)
class Channel(Pattern):
    """Keep the reduction columns with the largest L2 norm."""

    name: ClassVar[str] = "channel"

    def prune(self, weights: np.ndarray, sparsity: float) -> np.ndarray:
        """Keep ``round((1 - sparsity) * K)`` whole columns by descending L2 norm."""
        w = check_weights(weights)
        keep = top_k_flat(l2_norm(w, 0), keep_count(w.shape[1], check_sparsity(sparsity)))
        return np.broadcast_to(keep, w.shape).copy()

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> ChannelFormat:
        """Kept column ids plus their dense values; ValueError if a column is only partly kept."""
        w, m = check_mask(weights, mask)
        kept = m.any(axis=0)
        if np.any(kept & ~m.all(axis=0)):
            raise ValueError("channel: the mask keeps part of a reduction column (whole columns only)")
        columns = np.flatnonzero(kept).astype(np.int32)
        return ChannelFormat(w.shape, columns, w[:, columns])

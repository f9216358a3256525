"""Block-wise sparsity: ``B x B`` blocks kept or pruned whole, ranked by L2 norm per element; BSR storage.

Orientation: blocks tile ``W`` (``M x K``) in both dimensions (block rows along the output dimension
``M``, block columns along the reduction dimension ``K``). Both dimensions are zero-padded to multiples
of ``B``. A block's score is the mean square of its real elements (its L2 norm per element), so a
partial edge block is ranked on equal terms with full ones (a plain norm over fewer elements would
always rank it low); it counts only its real elements toward the target, so the achieved sparsity is
within half a block of the target.
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
    pad_to,
)
from stcsim.sparsity.csr import CSR_INDEX_BYTES
from stcsim.sparsity.select import select_groups


def to_blocks(arr: np.ndarray, B: int) -> np.ndarray:
    """Zero-pad and reshape a 2-D array to ``(block_rows, block_cols, B, B)``."""
    padded = pad_to(arr, B, B)
    return padded.reshape(padded.shape[0] // B, B, padded.shape[1] // B, B).transpose(0, 2, 1, 3)


@dataclass(frozen=True, eq=False)
class BSRFormat(SparseFormat):
    """Block CSR: ``indptr`` (block rows + 1, int32), ``indices`` (block column ids, int32), ``values``.

    ``values`` has shape ``(n_blocks, B, B)``, counted at ``value_bytes`` each (padding included).
    """

    shape: tuple[int, int]
    B: int
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray

    def to_dense(self) -> np.ndarray:
        """Place the stored blocks and crop the padding."""
        block_rows = len(self.indptr) - 1
        block_cols = -(-self.shape[1] // self.B)
        blocks = np.zeros((block_rows, block_cols, self.B, self.B), dtype=self.values.dtype)
        rows = np.repeat(np.arange(block_rows), np.diff(self.indptr))
        blocks[rows, self.indices] = self.values
        dense = blocks.transpose(0, 2, 1, 3).reshape(block_rows * self.B, block_cols * self.B)
        return dense[: self.shape[0], : self.shape[1]]

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Values at ``value_bytes``; block row pointers and block column indices as int32."""
        return {
            "values": self.values.size * value_bytes,
            "indptr": self.indptr.size * CSR_INDEX_BYTES,
            "indices": self.indices.size * CSR_INDEX_BYTES,
        }


@dataclass(frozen=True)
class BlockWise(Pattern):
    """Keep the ``B x B`` blocks with the largest L2 norm per element (see module docstring)."""

    name: ClassVar[str] = "bw"
    B: int = 16

    def __post_init__(self) -> None:
        """Validate ``B >= 1``."""
        if self.B < 1:
            raise ValueError(f"bw: block size B must be >= 1, got {self.B}")

    def shape_unit(self) -> tuple[int, int]:
        """``B x B`` blocks."""
        return (self.B, self.B)

    def prune(self, weights: np.ndarray, sparsity: float) -> np.ndarray:
        """Keep whole blocks by descending mean square until the kept count is closest to the target."""
        w = check_weights(weights)
        squares = to_blocks(np.square(w, dtype=np.float64), self.B).sum(axis=(2, 3))
        sizes = to_blocks(np.ones(w.shape, dtype=np.int64), self.B).sum(axis=(2, 3))
        target = keep_count(w.size, check_sparsity(sparsity))
        keep = select_groups((squares / sizes).ravel(), sizes.ravel(), target)
        block_mask = np.kron(keep.reshape(sizes.shape), np.ones((self.B, self.B), dtype=bool)).astype(bool)
        return block_mask[: w.shape[0], : w.shape[1]]

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> BSRFormat:
        """BSR of the blocks the mask keeps; ValueError if a block is only partly kept."""
        w, m = check_mask(weights, mask)
        kept = to_blocks(m, self.B)
        real = to_blocks(np.ones(m.shape, dtype=bool), self.B)
        any_kept = kept.any(axis=(2, 3))
        if np.any(any_kept & ~np.all(kept | ~real, axis=(2, 3))):
            raise ValueError(f"bw:B={self.B}: the mask keeps part of a {self.B}x{self.B} block")
        rows, cols = np.nonzero(any_kept)
        indptr = np.zeros(any_kept.shape[0] + 1, dtype=np.int32)
        np.cumsum(any_kept.sum(axis=1), out=indptr[1:])
        return BSRFormat(w.shape, self.B, indptr, cols.astype(np.int32), to_blocks(w, self.B)[rows, cols])

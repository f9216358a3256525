"""Tile-element-wise (TEW) sparsity of paper 002: TW plus a restored element-wise fraction ``delta``.

Orientation and tiling as in :mod:`stcsim.sparsity.tilewise` (``W`` is ``M x K``; TW tiles are groups of
``G`` kept output rows). For a target ``s_t``, TW prunes to ``s_t + delta`` and then the
``round(delta * M * K)`` pruned weights of highest importance are restored. Importance is the ``score``
option of :mod:`stcsim.sparsity.tilewise` (``l2``: ``|w|``; ``taylor``: ``|g w|``, needs gradients), used
by the TW stage and by the restore alike (Alg. 3 ranks both with ImportanceScoreElement/-Vector).

Format: the TW part in CTO format plus the restored elements stored per tile of ``G`` *original* output
rows as CSR (paper 002's per-tile CSC of ``B``, which is CSR of our ``W = B^T``; int32 indices).

Decomposition on ``encode``: the TW row tiling is recomputed from the weights (TW-C ranking at the
sparsity the mask implies, plus ``delta``); every tile segment the mask keeps whole goes to the TW part
and every other kept weight to the element-wise part. This is exact for any mask; for a mask from
``prune`` of the same weights with ``score=l2`` it recovers the TW part of the pruning (with ``taylor`` the
row ranking needs the gradients, so the split between the two parts may differ; the sum is exact).
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
from stcsim.sparsity.csr import CSRFormat
from stcsim.sparsity.importance import check_score, element_importance
from stcsim.sparsity.select import top_k_flat
from stcsim.sparsity.tilewise import TileSelection, TWFormat, check_granularity, encode_tiles, tw_select


@dataclass(frozen=True, eq=False)
class TEWFormat(SparseFormat):
    """TW part (CTO) plus a CSR per tile of ``G`` original rows for the element-wise part."""

    shape: tuple[int, int]
    tw: TWFormat
    ew: tuple[CSRFormat, ...]

    def to_dense(self) -> np.ndarray:
        """TW part plus the element-wise part (disjoint positions)."""
        out = self.tw.to_dense()
        G = self.tw.cto.G
        for t, csr in enumerate(self.ew):
            out[t * G : t * G + csr.shape[0]] += csr.to_dense()
        return out

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """TW arrays prefixed ``tw_``; element-wise CSR arrays summed over tiles, prefixed ``ew_``."""
        out = {f"tw_{k}": v for k, v in self.tw.byte_breakdown(value_bytes).items()}
        for csr in self.ew:
            for k, v in csr.byte_breakdown(value_bytes).items():
                out[f"ew_{k}"] = out.get(f"ew_{k}", 0) + v
        return out


@dataclass(frozen=True)
class TileElementWise(Pattern):
    """TEW with tile granularity ``G``, restored fraction ``delta`` and importance ``score`` (see module)."""

    name: ClassVar[str] = "tew"
    accepts_gradients: ClassVar[bool] = True
    G: int = 64
    delta: float = 0.015
    score: str = "l2"

    def __post_init__(self) -> None:
        """Validate ``G``, ``score`` and ``0 <= delta < 1``."""
        check_granularity(self.name, self.G)
        check_score(self.name, self.score)
        if not 0.0 <= self.delta < 1.0:
            raise ValueError(f"tew: delta must be in [0, 1), got {self.delta}")

    def tw_sparsity(self, sparsity: float) -> float:
        """Sparsity of the TW stage, ``s_t + delta``; ValueError unless ``s_t`` is in ``[0, 1 - delta)``."""
        s = check_sparsity(sparsity)
        if s + self.delta >= 1.0:
            raise ValueError(
                f"tew:delta={self.delta}: sparsity must be in [0, {1 - self.delta:.4g}) "
                f"so that sparsity + delta < 1, got {s}"
            )
        return s + self.delta

    def prune_parts(
        self, weights: np.ndarray, sparsity: float, gradients: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(tw_mask, restored_mask)``: TW at ``s_t + delta``, then the most important ``delta`` back."""
        w = check_weights(weights)
        importance = element_importance(self.name, w, self.score, gradients)
        tw_mask = tw_select(w, self.tw_sparsity(sparsity), self.G, importance).mask(w.shape)
        n_restore = min(keep_count(w.size, 1.0 - self.delta), int((~tw_mask).sum()))
        restored = top_k_flat(np.where(tw_mask, -1.0, importance), n_restore) & ~tw_mask
        return tw_mask, restored

    def prune(self, weights: np.ndarray, sparsity: float, gradients: np.ndarray | None = None) -> np.ndarray:
        """Union of the TW mask and the restored elements (``gradients``: score=taylor)."""
        tw_mask, restored = self.prune_parts(weights, sparsity, gradients)
        return tw_mask | restored

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> TEWFormat:
        """Split the mask into whole tile segments (TW part) and the rest (element-wise part)."""
        w, m = check_mask(weights, mask)
        implied = min(1.0 - m.sum() / m.size, np.nextafter(1.0 - self.delta, 0.0))
        rows = tw_select(w, implied + self.delta, self.G).rows
        tiles = [rows[t * self.G : (t + 1) * self.G] for t in range(-(-len(rows) // self.G))]
        selection = TileSelection(rows, self.G, tuple(np.flatnonzero(m[r].all(axis=0)) for r in tiles))
        rest = m & ~selection.mask(m.shape)
        starts = range(0, m.shape[0], self.G)
        ew = tuple(CSRFormat.from_masked(w[r : r + self.G], rest[r : r + self.G]) for r in starts)
        return TEWFormat(w.shape, encode_tiles(w, selection), ew)

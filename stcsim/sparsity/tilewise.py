"""Tile-wise (TW) sparsity of paper 002 and its compressed-tile-offset (CTO) format.

Mapping to our convention: paper 002 prunes ``B`` (``K x N``, reduction x outputs) in ``C = A @ B``; our
``W`` (``M x K``) is ``B`` transposed. Hence:

* TW-C (paper: prune whole ``(K, 1)`` columns of ``B``) prunes whole *rows* of ``W`` (output channels),
  ranked globally by importance, a fraction ``s = 1 - sqrt(1 - s_t)`` of them.
* Condensing: the kept rows, in original order, are cut into tiles of ``G`` consecutive kept rows (the
  paper's re-organisation that makes every tile exactly ``G`` wide); the last tile may hold fewer rows
  (logically zero-padded to ``G``).
* TW-R (paper: prune ``(1, G)`` rows of a ``B`` tile) prunes one reduction column ``k`` for all rows of a
  tile: a ``G x 1`` segment of ``W``. Segments are ranked globally and kept in descending order until the
  kept element count is closest to ``(1 - s_t) * M * K`` (within half a segment of the target).

Importance (option ``score``, :mod:`stcsim.sparsity.importance`): ``l2`` (magnitude, default) or ``taylor``
(paper 002's criterion; needs the caller's gradients). A group's score is the mean of its elements'
scores, so every tile's segments, a partial last tile's (fewer than ``G`` rows) included, are ranked on
equal terms: Alg. 3 ranks ``(1, G)`` vectors of one length, and a sum over fewer rows would always rank
the partial tile's segments low and starve it.

Format (CTO, paper 002 Sec. V): ``row_offsets[j] = row[j] - j`` for the condensed rows (``CTO_n``),
per tile the kept reduction indices as offsets ``k[p] - p`` (``CTO_k``, merged into one zero-padded
``n_tiles x max_len`` matrix plus per-tile lengths) and the condensed tile values (``rows_t x len_t``,
row-major, tiles concatenated). Offsets and lengths are int32 as in the paper's kernel (``int *CTO_n``).
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
from stcsim.sparsity.importance import check_score, element_importance
from stcsim.sparsity.select import select_groups, top_k_flat


def check_granularity(name: str, G: int) -> None:
    """Validate a tile granularity ``G >= 1``."""
    if G < 1:
        raise ValueError(f"{name}: tile granularity G must be >= 1, got {G}")


@dataclass(frozen=True, eq=False)
class TileSelection:
    """Kept rows (condensed order) cut into tiles of ``G`` rows, and each tile's kept reduction columns."""

    rows: np.ndarray
    G: int
    columns: tuple[np.ndarray, ...]

    def tile_rows(self, tile: int) -> np.ndarray:
        """Original row ids of ``tile``."""
        return self.rows[tile * self.G : (tile + 1) * self.G]

    def mask(self, shape: tuple[int, int]) -> np.ndarray:
        """The boolean mask of this selection."""
        out = np.zeros(shape, dtype=bool)
        for t, cols in enumerate(self.columns):
            out[np.ix_(self.tile_rows(t), cols)] = True
        return out


def tile_count(n_rows: int, G: int) -> int:
    """Number of tiles of ``G`` rows needed for ``n_rows`` condensed rows."""
    return -(-n_rows // G)


def tw_select(
    weights: np.ndarray, sparsity: float, G: int, importance: np.ndarray | None = None
) -> TileSelection:
    """TW-C then TW-R selection of ``weights`` at ``sparsity`` (see module docstring).

    ``importance`` holds the element scores (default ``weights ** 2``, the ``l2`` score); rows and segments
    are ranked by the mean score of their elements.
    """
    w = check_weights(weights)
    s_t = check_sparsity(sparsity)
    scores = element_importance("tw", w, "l2") if importance is None else np.asarray(importance, np.float64)
    s = 1.0 - np.sqrt(1.0 - s_t)
    rows = np.flatnonzero(top_k_flat(scores.mean(axis=1), keep_count(w.shape[0], s)))
    n_tiles = tile_count(len(rows), G)
    tiles = [rows[t * G : (t + 1) * G] for t in range(n_tiles)]
    segment_scores = np.concatenate([scores[r].mean(axis=0) for r in tiles]) if tiles else np.zeros(0)
    sizes = np.repeat([len(r) for r in tiles], w.shape[1])
    keep = select_groups(segment_scores, sizes, keep_count(w.size, s_t)).reshape(n_tiles, w.shape[1])
    return TileSelection(rows, G, tuple(np.flatnonzero(k) for k in keep))


def tiles_from_mask(mask: np.ndarray, G: int) -> TileSelection:
    """Recover the tiles of a TW mask: rows with any kept weight, ``G`` per tile, uniform segments.

    Raises ValueError if a tile keeps a reduction column for some of its rows only.
    """
    rows = np.flatnonzero(mask.any(axis=1))
    columns = []
    for t in range(tile_count(len(rows), G)):
        block = mask[rows[t * G : (t + 1) * G]]
        kept = block.any(axis=0)
        if np.any(kept & ~block.all(axis=0)):
            raise ValueError(f"tw:G={G}: tile {t} keeps a reduction column for only some of its rows")
        columns.append(np.flatnonzero(kept))
    return TileSelection(rows, G, tuple(columns))


@dataclass(frozen=True, eq=False)
class CTO:
    """Compressed tile offsets: ``row_offsets`` (CTO_n), ``k_lengths`` and ``k_offsets`` (CTO_k), int32."""

    G: int
    row_offsets: np.ndarray
    k_lengths: np.ndarray
    k_offsets: np.ndarray

    @classmethod
    def build(cls, rows: np.ndarray, columns: list[np.ndarray], G: int) -> CTO:
        """Offsets of condensed rows and of each tile's (condensed) reduction index list."""
        lengths = np.array([len(c) for c in columns], dtype=np.int32)
        offsets = np.zeros((len(columns), int(lengths.max(initial=0))), dtype=np.int32)
        for t, cols in enumerate(columns):
            offsets[t, : len(cols)] = np.asarray(cols) - np.arange(len(cols))
        return cls(G, (np.asarray(rows) - np.arange(len(rows))).astype(np.int32), lengths, offsets)

    @property
    def n_tiles(self) -> int:
        """Number of tiles."""
        return len(self.k_lengths)

    def tile_rows(self, tile: int) -> np.ndarray:
        """Original row ids of ``tile``."""
        rows = self.row_offsets + np.arange(len(self.row_offsets))
        return rows[tile * self.G : (tile + 1) * self.G]

    def tile_columns(self, tile: int) -> np.ndarray:
        """Reduction indices of ``tile`` (condensed order)."""
        n = int(self.k_lengths[tile])
        return self.k_offsets[tile, :n] + np.arange(n)

    def byte_breakdown(self) -> dict[str, int]:
        """All CTO arrays as int32."""
        return {
            "cto_rows": self.row_offsets.size * CSR_INDEX_BYTES,
            "cto_k": (self.k_offsets.size + self.k_lengths.size) * CSR_INDEX_BYTES,
        }


@dataclass(frozen=True, eq=False)
class TWFormat(SparseFormat):
    """CTO plus condensed tile values (``rows_t x len_t`` per tile, concatenated)."""

    shape: tuple[int, int]
    cto: CTO
    values: np.ndarray

    def to_dense(self) -> np.ndarray:
        """Scatter every condensed tile back."""
        out = np.zeros(self.shape, dtype=self.values.dtype)
        start = 0
        for t in range(self.cto.n_tiles):
            rows, cols = self.cto.tile_rows(t), self.cto.tile_columns(t)
            n = rows.size * cols.size
            out[np.ix_(rows, cols)] = self.values[start : start + n].reshape(rows.size, cols.size)
            start += n
        return out

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Values at ``value_bytes`` plus the int32 CTO arrays."""
        return {"values": self.values.size * value_bytes, **self.cto.byte_breakdown()}


def encode_tiles(weights: np.ndarray, selection: TileSelection) -> TWFormat:
    """TW/CTO format of ``weights`` restricted to ``selection``."""
    cto = CTO.build(selection.rows, list(selection.columns), selection.G)
    blocks = [weights[np.ix_(selection.tile_rows(t), c)].ravel() for t, c in enumerate(selection.columns)]
    values = np.concatenate(blocks) if blocks else np.zeros(0, dtype=weights.dtype)
    return TWFormat(weights.shape, cto, values)


@dataclass(frozen=True)
class TileWise(Pattern):
    """TW = TW-C + TW-R with tile granularity ``G`` and importance ``score`` (see module docstring)."""

    name: ClassVar[str] = "tw"
    accepts_gradients: ClassVar[bool] = True
    G: int = 64
    score: str = "l2"

    def __post_init__(self) -> None:
        """Validate ``G`` and ``score``."""
        check_granularity(self.name, self.G)
        check_score(self.name, self.score)

    def prune(self, weights: np.ndarray, sparsity: float, gradients: np.ndarray | None = None) -> np.ndarray:
        """TW-C at ``1 - sqrt(1 - s)``, condense, TW-R to the target count (``gradients``: score=taylor)."""
        w = check_weights(weights)
        importance = element_importance(self.name, w, self.score, gradients)
        return tw_select(w, sparsity, self.G, importance).mask(w.shape)

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> TWFormat:
        """CTO format; ValueError if the mask is not tile-wise for this ``G``."""
        w, m = check_mask(weights, mask)
        return encode_tiles(w, tiles_from_mask(m, self.G))

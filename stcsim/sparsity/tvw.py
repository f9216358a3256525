"""Tile-vector-wise (TVW) sparsity of paper 002: TW at ``1 - 2 (1 - s_t)`` followed by 2:4.

Orientation and tiling as in :mod:`stcsim.sparsity.tilewise` (``W`` is ``M x K``, tiles are ``G`` kept
output rows, TW-R keeps reduction columns per tile); importance ``score`` as there (``l2`` or ``taylor``
with the caller's gradients), used by both stages. Targets below 0.5 are impossible (2:4 alone halves
the weights) and raise ValueError.

Where the 2:4 groups lie (option ``nm_order``; Alg. 3 writes ``w = TW(w, s, ...)``, ``w = VW(w, 0.5, 4)``
without saying whether ``VW`` sees the condensed tiles):

* ``condensed`` (default): groups of four consecutive *condensed* columns of each tile (its kept
  reduction columns side by side, as the fused TW + sparse-Tensor-Core kernel loads them; a tile's
  column count is zero-padded to a multiple of 4), two kept per row. This is the reading under which
  Alg. 3's split ``s = 1 - 2 (1 - s_t)`` is exact. The mask is 2:4 in the condensed order, not in the
  original ``K`` order.
* ``original``: ``VW`` applied literally to the TW-pruned matrix: groups of four consecutive *original*
  reduction indices, the two most important TW-kept weights of each kept. The mask is 2:4 in the original
  ``K`` order, but groups that TW already thinned lose less than half, so the achieved sparsity falls
  short of the target (at ``s_t = 0.75`` on Gaussian weights about 0.66).

Format: CTO as in TW, where each tile's condensed column list may contain padding entries (index 0,
zero values), plus per tile the 2:4 values and 2-bit indices (:class:`stcsim.sparsity.nm.NMFormat`).

``encode`` recovers the tiles from the mask (rows with a kept weight, ``G`` per tile) and packs each
tile's kept columns greedily, in order, into groups of four in which no row keeps more than two; a
group is closed (and padded) when the next column would break that. It works for masks of either order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.sparsity.base import FP16_BYTES, Pattern, SparseFormat, check_mask, check_sparsity, check_weights
from stcsim.sparsity.importance import check_score, element_importance
from stcsim.sparsity.nm import NM, NMFormat, top_n_scores_per_group
from stcsim.sparsity.tilewise import CTO, TileSelection, check_granularity, tile_count, tw_select

TWO_FOUR = NM(2, 4)
NM_ORDERS = ("condensed", "original")


@dataclass(frozen=True, eq=False)
class TVWFormat(SparseFormat):
    """CTO (condensed column lists padded to groups of 4) plus a 2:4 ``NMFormat`` per tile."""

    shape: tuple[int, int]
    cto: CTO
    tiles: tuple[NMFormat, ...]

    def to_dense(self) -> np.ndarray:
        """Decode every tile's 2:4 block and add it at its rows and columns (padding adds zeros)."""
        dtype = self.tiles[0].values.dtype if self.tiles else np.float16
        out = np.zeros(self.shape, dtype=dtype)
        for t, tile in enumerate(self.tiles):
            rows, cols = self.cto.tile_rows(t), self.cto.tile_columns(t)
            np.add.at(out, np.ix_(rows, cols), tile.to_dense())
        return out

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """2:4 values and 2-bit indices summed over tiles, plus the int32 CTO arrays."""
        out = dict(self.cto.byte_breakdown())
        for tile in self.tiles:
            for k, v in tile.byte_breakdown(value_bytes).items():
                out[k] = out.get(k, 0) + v
        return out


def pack_groups_of_four(block: np.ndarray) -> np.ndarray:
    """Greedy in-order packing of a tile's kept columns into groups of four with <= 2 kept per row.

    Returns the condensed column list with ``-1`` for padding slots (length a multiple of 4).
    """
    slots: list[int] = []
    group: list[int] = []
    for col in np.flatnonzero(block.any(axis=0)):
        if len(group) == 4 or np.any(block[:, group + [col]].sum(axis=1) > 2):
            slots += group + [-1] * (4 - len(group))
            group = []
        group.append(int(col))
    if group:
        slots += group + [-1] * (4 - len(group))
    return np.asarray(slots, dtype=np.int64)


@dataclass(frozen=True)
class TileVectorWise(Pattern):
    """TVW = TW + 2:4 with tile granularity ``G``, importance ``score`` and 2:4 ``nm_order`` (see module)."""

    name: ClassVar[str] = "tvw"
    accepts_gradients: ClassVar[bool] = True
    G: int = 64
    score: str = "l2"
    nm_order: str = "condensed"

    def __post_init__(self) -> None:
        """Validate ``G``, ``score`` and ``nm_order``."""
        check_granularity(self.name, self.G)
        check_score(self.name, self.score)
        if self.nm_order not in NM_ORDERS:
            raise ValueError(f"tvw: nm_order must be one of {NM_ORDERS}, got {self.nm_order!r}")

    def tile_selection(
        self, weights: np.ndarray, sparsity: float, importance: np.ndarray | None = None
    ) -> TileSelection:
        """The TW stage at ``1 - 2 (1 - s_t)``; ValueError unless ``s_t`` is in ``[0.5, 1)``."""
        s = check_sparsity(sparsity)
        if s < 0.5:
            raise ValueError(f"tvw: sparsity must be in [0.5, 1) (2:4 keeps half), got {s}")
        return tw_select(weights, 1.0 - 2.0 * (1.0 - s), self.G, importance)

    def prune(self, weights: np.ndarray, sparsity: float, gradients: np.ndarray | None = None) -> np.ndarray:
        """TW selection, then the top 2 of every 4 columns per row in ``nm_order`` (``gradients``: taylor)."""
        w = check_weights(weights)
        importance = element_importance(self.name, w, self.score, gradients)
        selection = self.tile_selection(w, sparsity, importance)
        if self.nm_order == "original":
            tw_mask = selection.mask(w.shape)
            return top_n_scores_per_group(np.where(tw_mask, importance, -1.0), 2, 4) & tw_mask
        mask = np.zeros(w.shape, dtype=bool)
        for t, cols in enumerate(selection.columns):
            rows = selection.tile_rows(t)
            sub = importance[np.ix_(rows, cols)]
            mask[np.ix_(rows, cols)] = top_n_scores_per_group(sub, 2, 4) if sub.size else sub.astype(bool)
        return mask

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> TVWFormat:
        """Tiles from the mask, greedy groups of four per tile, 2:4 compression of each condensed tile."""
        w, m = check_mask(weights, mask)
        rows = np.flatnonzero(m.any(axis=1))
        slot_lists, tiles = [], []
        for t in range(tile_count(len(rows), self.G)):
            tile_rows = rows[t * self.G : (t + 1) * self.G]
            slots = pack_groups_of_four(m[tile_rows])
            real = slots >= 0
            sub_w = np.zeros((len(tile_rows), len(slots)), dtype=w.dtype)
            sub_m = np.zeros(sub_w.shape, dtype=bool)
            sub_w[:, real] = w[np.ix_(tile_rows, slots[real])]
            sub_m[:, real] = m[np.ix_(tile_rows, slots[real])]
            slot_lists.append(np.where(real, slots, 0))
            tiles.append(TWO_FOUR.encode(sub_w, sub_m))
        return TVWFormat(w.shape, CTO.build(rows, slot_lists, self.G), tuple(tiles))

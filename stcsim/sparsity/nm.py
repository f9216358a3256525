"""N:M structured sparsity, including the 2:4 pattern of the Ampere/Hopper sparse Tensor Cores.

Orientation: groups of ``M`` consecutive weights along the reduction dimension ``K`` of each row of ``W``
(``M_rows x K``), i.e. along the rows of operand A of ``mma.sp``. ``K`` is zero-padded to a multiple of
``M``; padding is never kept. (The pattern's ``M`` is the group size, not the row count of ``W``.)

Pruning keeps the top ``N`` magnitudes of every group; a target above ``1 - N/M`` is then reached by
trimming the smallest kept weights globally (the mask stays N:M, with extra zeros). A target below
``1 - N/M`` cannot be met and raises ValueError.

Format: ``values`` and ``indices`` of shape ``(rows, groups, N)``; indices are the positions inside the
group, ascending and distinct, ``ceil(log2 M)`` bits each (2 bits for 2:4, as the hardware metadata).
A group with fewer than ``N`` kept weights is filled with its lowest unused positions holding value 0,
so the metadata stays valid for ``mma.sp`` (see :mod:`stcsim.sparsity.mma_sp` for the PTX layout).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import numpy as np

from stcsim.sparsity import base
from stcsim.sparsity.base import (
    FP16_BYTES,
    Pattern,
    SparseFormat,
    bits_to_bytes,
    check_mask,
    check_sparsity,
    check_weights,
    index_bits,
    keep_count,
    pad_to,
    row_blocks,
)
from stcsim.sparsity.select import magnitude, top_k_per_row, trim_to_count
from stcsim.sparsity.vectorwise import compact_positions


@dataclass(frozen=True, eq=False)
class NMFormat(SparseFormat):
    """``values``/``indices`` of shape ``(rows, groups, N)``; indices counted at ``ceil(log2 M)`` bits."""

    shape: tuple[int, int]
    N: int
    M: int
    values: np.ndarray
    indices: np.ndarray

    def to_dense(self) -> np.ndarray:
        """Scatter the values into their groups and crop the padding."""
        rows, groups, _ = self.values.shape
        dense = np.zeros((rows, groups, self.M), dtype=self.values.dtype)
        np.put_along_axis(dense, self.indices.astype(np.intp), self.values, axis=-1)
        return dense.reshape(rows, -1)[:, : self.shape[1]]

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Values at ``value_bytes``; indices at ``ceil(log2 M)`` bits, bit-packed."""
        return {
            "values": self.values.size * value_bytes,
            "indices": bits_to_bytes(self.indices.size * index_bits(self.M)),
        }


def top_n_per_group(weights: np.ndarray, N: int, M: int) -> np.ndarray:
    """Mask keeping the ``N`` largest magnitudes of every group of ``M`` along K.

    A zero-padded last group keeps ``min(N, real elements)``; ties keep the lower index. Rows are ranked
    independently, BLOCK_ELEMENTS at a time.
    """
    w = np.asarray(weights)
    if w.ndim != 2 or w.size <= base.BLOCK_ELEMENTS:
        return _top_n_block(w, N, M)
    keep = np.empty(w.shape, dtype=bool)
    for rows in row_blocks(*w.shape):
        keep[rows] = _top_n_block(w[rows], N, M)
    return keep


def _top_n_block(w: np.ndarray, N: int, M: int) -> np.ndarray:
    """``top_n_per_group`` of the rows in `w`."""
    if w.dtype in (np.float16, np.float32):  # |w| exact in float32: the order and ties of float64's
        return top_n_scores_per_group(np.abs(w, dtype=np.float32), N, M)
    return top_n_scores_per_group(magnitude(w), N, M)


def top_n_scores_per_group(scores: np.ndarray, N: int, M: int) -> np.ndarray:
    """Mask keeping the ``N`` highest of the non-negative ``scores`` in every group of ``M`` along K.

    A zero-padded last group keeps ``min(N, real elements)``; ties keep the lower index. Float32 scores are
    ranked as they are (each converts to float64 exactly), others in float64.
    """
    scores = np.asarray(scores)
    dtype = np.float32 if scores.dtype == np.float32 else np.float64
    if scores.ndim == 2 and scores.shape[1] % M == 0:  # whole groups: no padding
        padded = np.ascontiguousarray(scores, dtype=dtype)
    else:
        real = pad_to(np.ones(scores.shape, dtype=bool), 1, M)
        padded = np.where(real, pad_to(np.asarray(scores, dtype=dtype), 1, M), dtype(-1.0))
    keep = top_k_per_row(padded.reshape(-1, M), N).reshape(padded.shape)
    return keep[:, : scores.shape[1]]


def group_positions(mask: np.ndarray, N: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group of ``M`` (K zero-padded), ``N`` ascending distinct positions and whether each is kept.

    Kept positions come first in the choice; missing ones are the lowest unused positions. Raises
    ValueError if a group keeps more than ``N``.
    """
    if M > SMALL_GROUP:
        groups = pad_to(mask, 1, M).reshape(mask.shape[0], -1, M)
        _check_kept(int(groups.sum(axis=-1).max()) if groups.size else 0, N, M)
        return _group_positions(groups, N)
    code = group_codes(mask, N, M)
    positions, kept = position_table(N, M)
    return positions[code], kept[code]


def group_codes(mask: np.ndarray, N: int, M: int) -> np.ndarray:
    """Each group's mask bits (bit j: element j kept; K zero-padded), ``(rows, groups)`` uint8, for groups
    of at most SMALL_GROUP; ValueError if a group keeps more than ``N``. Index ``position_table(N, M)`` with
    them for ``group_positions``."""
    if M > SMALL_GROUP:
        raise ValueError(f"group_codes takes groups of at most {SMALL_GROUP}, got M={M}")
    groups = pad_to(mask, 1, M).reshape(mask.shape[0], -1, M)
    code = np.zeros(groups.shape[:-1], dtype=np.uint8)  # (2:4: 16 masks)
    for j in range(M):
        code |= groups[..., j].view(np.uint8) << np.uint8(j)
    present = np.flatnonzero(np.bincount(code.ravel(), minlength=1 << M))
    _check_kept(max((bin(c).count("1") for c in present), default=0), N, M)
    return code


def _check_kept(most: int, N: int, M: int) -> None:
    """ValueError when a group keeps ``most`` > ``N`` weights."""
    if most > N:
        raise ValueError(f"nm:N={N},M={M}: a group of {M} keeps {most} weights, more than N={N}")


SMALL_GROUP = 8
"""Groups of at most this many elements take ``group_positions`` from a table of every mask of a group."""


def _group_positions(groups: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """``group_positions`` of ``(..., M)`` boolean groups: the first ``N`` kept positions, then the lowest
    unused ones, in ascending order, and whether each is kept."""
    chosen, kept = compact_positions(groups, N)
    order = np.argsort(chosen, axis=-1, kind="stable")
    return np.take_along_axis(chosen, order, axis=-1), np.take_along_axis(kept, order, axis=-1)


@cache
def position_table(N: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    """``_group_positions`` of each of the 2^M masks of a group (mask bit j: element j kept), by mask."""
    masks = (np.arange(1 << M)[:, None] >> np.arange(M)) & 1 == 1
    return _group_positions(masks, N)


@dataclass(frozen=True)
class NM(Pattern):
    """Keep at most ``N`` of every ``M`` consecutive weights along the reduction dimension."""

    name: ClassVar[str] = "nm"
    N: int = 2
    M: int = 4

    def __post_init__(self) -> None:
        """Validate ``1 <= N <= M``."""
        if not 1 <= self.N <= self.M:
            raise ValueError(f"nm: need 1 <= N <= M, got N={self.N}, M={self.M}")

    def shape_unit(self) -> tuple[int, int]:
        """Groups of ``M`` along ``K``."""
        return (1, self.M)

    def prune(self, weights: np.ndarray, sparsity: float) -> np.ndarray:
        """Top-``N`` per group, then a global trim to the target count."""
        w = check_weights(weights)
        s = check_sparsity(sparsity)
        if s < 1.0 - self.N / self.M - 1e-12:
            raise ValueError(
                f"nm:N={self.N},M={self.M} keeps at most N/M = {self.N / self.M:.4g}: "
                f"sparsity must be in [{1 - self.N / self.M:.4g}, 1), got {s}"
            )
        return trim_to_count(w, top_n_per_group(w, self.N, self.M), keep_count(w.size, s))

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> NMFormat:
        """Compressed values plus ascending in-group indices (see module docstring)."""
        w, m = check_mask(weights, mask)
        positions, kept = group_positions(m, self.N, self.M)
        vals = np.take_along_axis(pad_to(w, 1, self.M).reshape(w.shape[0], -1, self.M), positions, axis=-1)
        values = np.where(kept, vals, np.zeros((), dtype=w.dtype))
        return NMFormat(w.shape, self.N, self.M, values, positions.astype(np.min_scalar_type(self.M - 1)))

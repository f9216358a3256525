"""Vector-wise sparsity and its encoding (paper 001, VectorSparse, Sec. 3.1 and Fig. 5).

Orientation (option ``axis``): with ``axis="row"`` (default) every row of ``W`` (``M x K``) is split into
``L``-long vectors along the reduction dimension ``K``: the row vectors of operand A that the SHMMA sparse
Tensor Core consumes (L=16, 4 kept; paper 001 Sec. 3.3 and Fig. 7 multiply "row vectors" of A).
``axis="col"`` splits every column into ``L``-long vectors along ``M``: the reading of the encoding
section's "Without losing generality, we use column vectors unless specifically illustrated", with the
weight matrix as paper 001 defines it (filters x C*H*W, i.e. ``M x K``). The vector dimension is
zero-padded to a multiple of ``L``; padding is never kept and is dropped again by ``decode``.

Pruning keeps the top ``K`` magnitudes in every vector (``K`` defaults to ``ceil((1 - s) * L)``); if that
keeps more than the target, the smallest kept weights are trimmed globally (the result still has at
most ``K`` non-zeros per vector). Note the parameter ``K`` (non-zeros per vector, the paper's name) is not
the reduction dimension.

Encoding (Fig. 5): each vector becomes ``K`` values plus ``K`` offsets of ``ceil(log2 L)`` bits; a vector
with fewer than ``K`` kept elements is padded with value 0 at offset 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

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
)
from stcsim.sparsity.select import magnitude, top_k_per_row, trim_to_count

AXES = ("row", "col")


def compression_ratio(L: int, K: int, value_bits: int = 16) -> float:
    """Ideal vector-wise compression ratio ``P*L / ((P + log2 L) * K)`` of paper 001 (P = value bits)."""
    return value_bits * L / ((value_bits + np.log2(L)) * K)


def to_vectors(arr: np.ndarray, L: int, axis: str) -> np.ndarray:
    """Reshape a 2-D array into ``(outer, n_vectors, L)`` vectors along ``axis`` (zero-padded)."""
    rows = arr if axis == "row" else arr.T
    padded = pad_to(rows, 1, L)
    return padded.reshape(padded.shape[0], -1, L)


def from_vectors(vecs: np.ndarray, shape: tuple[int, int], axis: str) -> np.ndarray:
    """Inverse of :func:`to_vectors`: crop the padding and restore the orientation."""
    outer, inner = shape if axis == "row" else shape[::-1]
    rows = vecs.reshape(vecs.shape[0], -1)[:outer, :inner]
    return rows if axis == "row" else rows.T


def top_k_per_vector(weights: np.ndarray, L: int, k: int, axis: str) -> np.ndarray:
    """Mask keeping the ``k`` largest magnitudes of every ``L``-vector (ties: the lower index is kept)."""
    scores = to_vectors(magnitude(weights), L, axis)
    real = to_vectors(np.ones(weights.shape, dtype=bool), L, axis)
    keep = top_k_per_row(np.where(real, scores, -1.0).reshape(-1, L), k).reshape(scores.shape)
    return from_vectors(keep & real, weights.shape, axis)


def compact_positions(vec_mask: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the first ``width`` kept entries of each last-axis vector, ascending, and validity.

    Returns ``(positions, valid)``, both of shape ``vec_mask.shape[:-1] + (width,)``; where a vector holds
    fewer than ``width`` kept entries the remaining positions are arbitrary and ``valid`` is False.
    """
    order = np.argsort(~vec_mask, axis=-1, kind="stable")[..., :width]
    return order, np.take_along_axis(vec_mask, order, axis=-1)


@dataclass(frozen=True, eq=False)
class VWFormat(SparseFormat):
    """Fig. 5 encoding: ``values`` and ``offsets`` of shape ``(outer, n_vectors, K)``.

    ``offsets`` hold the position inside the ``L``-vector and are counted at ``ceil(log2 L)`` bits each
    (4 bits for L=16); values at ``value_bytes`` each.
    """

    shape: tuple[int, int]
    L: int
    K: int
    axis: str
    values: np.ndarray
    offsets: np.ndarray

    def to_dense(self) -> np.ndarray:
        """Scatter values to their offsets (padding entries add 0) and undo padding/orientation."""
        vecs = np.zeros(self.values.shape[:2] + (self.L,), dtype=self.values.dtype)
        outer, nvec, _ = np.indices(self.values.shape)
        np.add.at(vecs, (outer, nvec, self.offsets), self.values)
        return from_vectors(vecs, self.shape, self.axis)

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Values at ``value_bytes``; offsets at ``ceil(log2 L)`` bits, bit-packed."""
        return {
            "values": self.values.size * value_bytes,
            "offsets": bits_to_bytes(self.offsets.size * index_bits(self.L)),
        }

    def compression_ratio(self, value_bits: int = 16) -> float:
        """Dense bits of the padded vectors over encoded bits (paper 001's ratio for this matrix)."""
        dense_bits = self.values.shape[0] * self.values.shape[1] * self.L * value_bits
        return dense_bits / (self.values.size * (value_bits + index_bits(self.L)))


@dataclass(frozen=True)
class VectorWise(Pattern):
    """Keep at most ``K`` of every ``L`` consecutive weights along ``axis`` (see module docstring)."""

    name: ClassVar[str] = "vw"
    L: int = 16
    K: int | None = None
    axis: str = "row"

    def __post_init__(self) -> None:
        """Validate ``L >= 1``, ``1 <= K <= L`` and the axis."""
        if self.L < 1:
            raise ValueError(f"vw: L must be >= 1, got {self.L}")
        if self.K is not None and not 1 <= self.K <= self.L:
            raise ValueError(f"vw: K must be in [1, L={self.L}] (or unset), got K={self.K}")
        if self.axis not in AXES:
            raise ValueError(f"vw: axis must be one of {AXES}, got {self.axis!r}")

    def shape_unit(self) -> tuple[int, int]:
        """Vectors of ``L`` along ``K`` (``axis=row``) or along ``M`` (``axis=col``)."""
        return (1, self.L) if self.axis == "row" else (self.L, 1)

    def kept_per_vector(self, sparsity: float) -> int:
        """``K`` if set, else ``ceil((1 - sparsity) * L)``; ValueError if ``K`` cannot reach the target."""
        s = check_sparsity(sparsity)
        if self.K is None:
            return max(1, int(np.ceil((1.0 - s) * self.L - 1e-9)))
        if s < 1.0 - self.K / self.L - 1e-12:
            raise ValueError(
                f"vw:L={self.L},K={self.K} keeps at most K/L = {self.K / self.L:.4g} of the weights: "
                f"sparsity must be in [{1 - self.K / self.L:.4g}, 1), got {s}"
            )
        return self.K

    def prune(self, weights: np.ndarray, sparsity: float) -> np.ndarray:
        """Top-``K`` magnitudes per vector, then a global trim to the exact target count."""
        w = check_weights(weights)
        mask = top_k_per_vector(w, self.L, self.kept_per_vector(sparsity), self.axis)
        return trim_to_count(w, mask, keep_count(w.size, sparsity))

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> VWFormat:
        """Fig. 5 encoding padded to ``K`` (``K`` unset: the largest kept count of any vector)."""
        w, m = check_mask(weights, mask)
        vec_mask = to_vectors(m, self.L, self.axis)
        most = int(vec_mask.sum(axis=-1).max())
        k = most if self.K is None else self.K
        if most > k:
            raise ValueError(f"vw:L={self.L},K={k}: a vector keeps {most} elements, more than K={k}")
        offsets, valid = compact_positions(vec_mask, k)
        vals = np.take_along_axis(to_vectors(w, self.L, self.axis), offsets, axis=-1)
        values = np.where(valid, vals, np.zeros((), dtype=w.dtype))
        offsets = np.where(valid, offsets, 0).astype(np.min_scalar_type(self.L - 1))
        return VWFormat(w.shape, self.L, k, self.axis, values, offsets)

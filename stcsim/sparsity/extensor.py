"""ExTensor chunks (paper 004): unstructured pruning encoded as variable-width ``16 x L`` chunks.

Orientation: ``W`` (``M x K``) is operand A of ``wmma.smma.L``; 16-row slices along ``M`` (zero-padded to a
multiple of 16), chunks along the reduction dimension ``K`` (zero-padded to a multiple of 16), widths
``L`` chosen per slice by the planner (:mod:`stcsim.sparsity.extensor_planner`) under the PhaseLat model
(:mod:`stcsim.sparsity.extensor_latency`).

Pruning is unstructured magnitude pruning (Deep Compression, as the paper's benchmarks).

Format, per chunk: ``values`` and ``coords`` of shape ``(16, Kmax)``: each row's non-zeros in ascending
column order with their chunk-relative column (``0 .. L-1``), rows shorter than the longest row padded
with value 0 at coordinate 0. Counted bytes: values at ``value_bytes``; coordinates at
``ceil(log2 L)`` bits (4 bits for L=16, 5 for 32, 6 for 48 and 64), bit-packed; one header byte per
chunk holding ``L/16`` (``Kmax`` is implied by the value count, the start column by the widths).
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
    index_bits,
    pad_to,
)
from stcsim.sparsity.extensor_latency import BLOCK, BlockSkip
from stcsim.sparsity.extensor_planner import PLANNERS, SLICE_ROWS, SlicePlan, plan_matrix
from stcsim.sparsity.unstructured import Unstructured
from stcsim.sparsity.vectorwise import compact_positions

CHUNK_HEADER_BYTES = 1


@dataclass(frozen=True, eq=False)
class Chunk:
    """One ``wmma.smma.L`` operand: slice index, first column, width ``L``, padded values/coordinates."""

    slice_index: int
    start: int
    width: int
    values: np.ndarray
    coords: np.ndarray


@dataclass(frozen=True, eq=False)
class ExTensorFormat(SparseFormat):
    """All chunks of a matrix, slice by slice, left to right."""

    shape: tuple[int, int]
    chunks: tuple[Chunk, ...]

    def to_dense(self) -> np.ndarray:
        """Scatter every chunk's values to ``(slice row, start + coordinate)``; padding adds zeros."""
        dtype = self.chunks[0].values.dtype
        rows = -(-self.shape[0] // SLICE_ROWS) * SLICE_ROWS
        cols = max(c.start + c.width for c in self.chunks)
        out = np.zeros((rows, cols), dtype=dtype)
        for c in self.chunks:
            r = SLICE_ROWS * c.slice_index + np.arange(SLICE_ROWS)[:, None]
            np.add.at(out, (np.broadcast_to(r, c.coords.shape), c.coords.astype(np.intp) + c.start), c.values)
        return out[: self.shape[0], : self.shape[1]]

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Values at ``value_bytes``; coordinates at ``ceil(log2 L)`` bits; one header byte per chunk."""
        coord_bits = sum(c.coords.size * index_bits(c.width) for c in self.chunks)
        return {
            "values": sum(c.values.size for c in self.chunks) * value_bytes,
            "coords": bits_to_bytes(coord_bits),
            "headers": len(self.chunks) * CHUNK_HEADER_BYTES,
        }


def encode_chunks(weights: np.ndarray, mask: np.ndarray, plans: list[SlicePlan]) -> ExTensorFormat:
    """Cut a masked matrix into the planned chunks and encode each (see module docstring)."""
    w = pad_to(np.where(mask, weights, np.zeros((), dtype=weights.dtype)), SLICE_ROWS, BLOCK)
    m = pad_to(mask, SLICE_ROWS, BLOCK)
    chunks = []
    for s, plan in enumerate(plans):
        rows = slice(SLICE_ROWS * s, SLICE_ROWS * (s + 1))
        start = 0
        for width in plan.widths:
            sub_m, sub_w = m[rows, start : start + width], w[rows, start : start + width]
            kmax = int(sub_m.sum(axis=1).max())
            coords, valid = compact_positions(sub_m, kmax)
            values = np.where(valid, np.take_along_axis(sub_w, coords, axis=1), np.zeros((), dtype=w.dtype))
            coords = np.where(valid, coords, 0).astype(np.min_scalar_type(width - 1))
            chunks.append(Chunk(s, start, width, values, coords))
            start += width
    return ExTensorFormat(weights.shape, tuple(chunks))


@dataclass(frozen=True)
class ExTensor(Pattern):
    """Unstructured pruning stored as ExTensor chunks of width ``<= maxL`` (see module docstring).

    ``planner``: ``greedy`` (Alg. 1, fixed), ``dp`` (exact) or ``fixed`` (all 16-wide); ``reading``: the
    PhaseLat block-skip reading; ``tensor_cores``: ``T`` of Alg. 1 (0 = no ``Ntc`` stop).
    """

    name: ClassVar[str] = "extensor"
    maxL: int = 64
    planner: str = "greedy"
    reading: BlockSkip = BlockSkip.PHASE_SKIP
    tensor_cores: int = 0

    def __post_init__(self) -> None:
        """Validate ``maxL``, the planner, the reading and ``tensor_cores``."""
        if self.maxL < BLOCK or self.maxL % BLOCK:
            raise ValueError(f"extensor: maxL must be a positive multiple of {BLOCK}, got {self.maxL}")
        if self.planner not in PLANNERS:
            raise ValueError(f"extensor: planner must be one of {PLANNERS}, got {self.planner!r}")
        if self.reading not in tuple(BlockSkip):
            raise ValueError(f"extensor: reading must be one of {[r.value for r in BlockSkip]}")
        object.__setattr__(self, "reading", BlockSkip(self.reading))
        if self.tensor_cores < 0:
            raise ValueError(f"extensor: tensor_cores must be >= 0 (0 = no limit), got {self.tensor_cores}")

    def shape_unit(self) -> tuple[int, int]:
        """16-row slices, chunks of multiples of 16 columns."""
        return (SLICE_ROWS, BLOCK)

    def plan(self, mask: np.ndarray) -> list[SlicePlan]:
        """Per-slice chunk plans of a mask under this pattern's settings."""
        cores = self.tensor_cores or None
        return plan_matrix(mask, self.maxL, self.reading, self.planner, cores)

    def prune(self, weights: np.ndarray, sparsity: float) -> np.ndarray:
        """Unstructured magnitude pruning (any position may be kept)."""
        return Unstructured().prune(weights, sparsity)

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> ExTensorFormat:
        """Plan the chunks of ``mask`` and encode them."""
        w, m = check_mask(weights, mask)
        return encode_chunks(w, m, self.plan(m))

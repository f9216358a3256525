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
    ranges,
    run_ranks,
)
from stcsim.sparsity.extensor_latency import BLOCK, BlockSkip
from stcsim.sparsity.extensor_planner import PLANNERS, SLICE_ROWS, SlicePlan, plan_matrix
from stcsim.sparsity.unstructured import Unstructured

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
        values, coords, base, kmax = self.stacked()
        per_chunk = SLICE_ROWS * kmax
        chunk = np.repeat(np.arange(len(self.chunks)), per_chunk)
        row = ranges(per_chunk) // np.repeat(np.maximum(kmax, 1), per_chunk)
        slices = np.array([c.slice_index for c in self.chunks], dtype=np.int64)
        starts = np.array([c.start for c in self.chunks], dtype=np.int64)
        np.add.at(out, (SLICE_ROWS * slices[chunk] + row, coords + starts[chunk]), values.astype(dtype))
        return out[: self.shape[0], : self.shape[1]]

    def stacked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every chunk's values and coordinates (as int64) flattened, row by row, into one array each; each
        chunk's first index in them and its row length Kmax."""
        if not self.chunks:
            return np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        kmax = np.array([c.values.shape[1] for c in self.chunks], dtype=np.int64)
        base = np.concatenate(([0], np.cumsum(SLICE_ROWS * kmax)))[:-1]
        values = np.concatenate([c.values.ravel() for c in self.chunks])
        coords = np.concatenate([c.coords.ravel() for c in self.chunks]).astype(np.int64)
        return values, coords, base, kmax

    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Values at ``value_bytes``; coordinates at ``ceil(log2 L)`` bits; one header byte per chunk."""
        coord_bits = sum(c.coords.size * index_bits(c.width) for c in self.chunks)
        return {
            "values": sum(c.values.size for c in self.chunks) * value_bytes,
            "coords": bits_to_bytes(coord_bits),
            "headers": len(self.chunks) * CHUNK_HEADER_BYTES,
        }


def encode_chunks(weights: np.ndarray, mask: np.ndarray, plans: list[SlicePlan]) -> ExTensorFormat:
    """Cut a masked matrix into the planned chunks and encode each (see module docstring).

    All chunks at once from the mask's non-zeros (row-major, so the entries of one row of one chunk are
    consecutive and in column order): each chunk's arrays are views of one buffer."""
    w = pad_to(np.where(mask, weights, np.zeros((), dtype=weights.dtype)), SLICE_ROWS, BLOCK)
    m = pad_to(mask, SLICE_ROWS, BLOCK)
    slices = np.repeat(np.arange(len(plans)), [len(p.widths) for p in plans])
    widths = np.array([x for p in plans for x in p.widths], dtype=np.int64)
    starts = np.concatenate([np.cumsum((0,) + p.widths[:-1]) for p in plans]).astype(np.int64) if plans \
        else np.zeros(0, dtype=np.int64)
    r, c = np.nonzero(m)
    # the chunk of each entry: the last chunk of its slice that starts at or before its column
    chunk = np.searchsorted(slices * m.shape[1] + starts, r // SLICE_ROWS * m.shape[1] + c, side="right") - 1
    if chunk.size and (chunk.min() < 0 or np.any(c >= starts[chunk] + widths[chunk])):
        raise ValueError("the plans do not cover the mask's columns")
    group = chunk * SLICE_ROWS + r % SLICE_ROWS
    counts = np.bincount(group, minlength=len(widths) * SLICE_ROWS).reshape(len(widths), SLICE_ROWS)
    kmax = counts.max(axis=1) if len(widths) else np.zeros(0, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(SLICE_ROWS * kmax)))
    at = offsets[chunk] + (r % SLICE_ROWS) * kmax[chunk] + run_ranks(group)
    values = np.zeros(int(offsets[-1]), dtype=w.dtype)
    values[at] = w[r, c]
    coord_type = np.min_scalar_type(int(widths.max(initial=1)) - 1)
    coords = np.zeros(int(offsets[-1]), dtype=coord_type)
    coords[at] = c - starts[chunk]
    chunks = []
    for i, (s, start, width, k) in enumerate(zip(slices.tolist(), starts.tolist(), widths.tolist(),
                                                 kmax.tolist(), strict=True)):
        span = slice(int(offsets[i]), int(offsets[i + 1]))
        own = coords[span].reshape(SLICE_ROWS, k)
        if own.dtype != np.min_scalar_type(width - 1):
            own = own.astype(np.min_scalar_type(width - 1))
        chunks.append(Chunk(s, start, width, values[span].reshape(SLICE_ROWS, k), own))
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

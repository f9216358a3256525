"""PhaseLat: the latency model of a ``wmma.smma.L`` ExTensor instruction (paper 004, Sec. III-B).

A chunk is ``R`` rows (16 on the hardware) by ``L`` columns (``L`` a multiple of 16) of the weight matrix
``W`` (``M x K``, columns along the reduction dimension). Each row's non-zeros, in ascending column
order, are consumed four per phase; the instruction has ``ceil(Kmax / 4)`` phases, ``Kmax`` being the
longest row. ``Hist[i][j]`` counts the non-zeros of row ``i`` in this phase that fall in input block
``j`` (columns ``16j .. 16j+15``). The paper's model is

    PhaseLat = sum_i sum_j max(Hist[i][j], 2) + 2        latency = sum of PhaseLat over phases

and it also says that a block no coordinate of the phase refers to is not fetched, which the literal
formula contradicts (it charges 2 cycles for every row and block). The three readings
(:class:`BlockSkip`):

* ``literal``: every row pays ``max(Hist, 2)`` for every block of the chunk;
* ``row_skip``: a row pays only for the blocks it has a non-zero in during this phase;
* ``phase_skip``: every row pays for the blocks that some row of the chunk uses in this phase.

All rows of the chunk are summed (``N_row`` = rows given, 16 for a real chunk), empty rows included.
A chunk without non-zeros has no phase and latency 0 (no instruction needs to be issued).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

import numpy as np

from stcsim.sparsity.base import ranges, run_ranks

BLOCK = 16  # columns of one input register block (a 16 x 16 tile of B)
NNZ_PER_PHASE = 4  # non-zeros of a row consumed per phase (one 4-dim dot product)
MIN_BLOCK_CYCLES = 2  # register access of an operand block
DP_TAIL_CYCLES = 2  # latency of the last dot product of a phase


class BlockSkip(str, Enum):
    """Which block-skip reading of PhaseLat to use (see module docstring)."""

    LITERAL = "literal"
    ROW_SKIP = "row_skip"
    PHASE_SKIP = "phase_skip"


def phase_histograms(chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Hist`` per chunk, row, phase and block, and which phases exist.

    ``chunks`` is a boolean ``(n, R, L)`` stack of non-zero masks. Returns ``hist`` of shape
    ``(n, R, P, L/16)`` and ``valid`` of shape ``(n, P)``, ``P`` the most phases of any chunk.
    """
    n, rows, width = chunks.shape
    if width % BLOCK:
        raise ValueError(f"chunk width L={width} must be a multiple of {BLOCK}")
    n_phases = -(-chunks.sum(axis=2).max(axis=1) // NNZ_PER_PHASE)
    p_max = int(n_phases.max(initial=0))
    c, r, col = np.nonzero(chunks)
    rank = np.cumsum(chunks, axis=2)[c, r, col] - 1
    flat = ((c * rows + r) * p_max + rank // NNZ_PER_PHASE) * (width // BLOCK) + col // BLOCK
    hist = np.bincount(flat, minlength=n * rows * p_max * (width // BLOCK))
    valid = np.arange(p_max)[None, :] < n_phases[:, None]
    return hist.reshape(n, rows, p_max, width // BLOCK), valid


def phase_latency_table(chunks: np.ndarray, reading: BlockSkip) -> np.ndarray:
    """PhaseLat (with the +2) of every phase of every chunk, ``(n, P)``; 0 for phases a chunk lacks."""
    return _phase_latencies(*phase_histograms(chunks), reading)


def _phase_latencies(hist: np.ndarray, valid: np.ndarray, reading: BlockSkip) -> np.ndarray:
    """PhaseLat (with the +2) from ``Hist`` ``(n, R, P, blocks)`` and the phases that exist ``(n, P)``."""
    cost = np.maximum(hist, MIN_BLOCK_CYCLES)
    reading = BlockSkip(reading)
    if reading is BlockSkip.ROW_SKIP:
        cost = np.where(hist > 0, cost, 0)
    elif reading is BlockSkip.PHASE_SKIP:
        cost = cost * hist.any(axis=1, keepdims=True)
    return np.where(valid, cost.sum(axis=(1, 3)) + DP_TAIL_CYCLES, 0)


def chunk_latencies(chunks: np.ndarray, reading: BlockSkip) -> np.ndarray:
    """Instruction latency (sum of PhaseLat) of each chunk of a boolean ``(n, R, L)`` stack."""
    return phase_latency_table(chunks, reading).sum(axis=1)


HIST_CELLS = 1 << 23
"""Histogram cells (chunks x rows x phases x blocks) one batch of MaskIndex.latencies holds at most."""


class MaskIndex:
    """The non-zeros of a keep-mask cut into slices of ``rows`` rows and 16-column blocks, indexed so that
    the latency of any chunk (a slice's columns from block ``b`` for ``w`` blocks) is computed from its
    non-zeros alone: the same numbers as :func:`chunk_latencies` on the chunk's dense mask, without
    cutting one out per chunk (the planner's every window and the kernel's every record; a 4096 x 25088
    layer has about 400,000 chunks).

    ``mask``: boolean, its row count a multiple of ``rows`` and its column count one of 16.
    """

    def __init__(self, mask: np.ndarray, rows: int) -> None:
        mask = np.asarray(mask, dtype=bool)
        n_rows, width = mask.shape
        if rows < 1 or n_rows % rows or width % BLOCK:
            raise ValueError(f"mask {mask.shape}: rows must be a multiple of {rows}, columns of {BLOCK}")
        self.rows, self.n_blocks = rows, width // BLOCK
        r, c = np.nonzero(mask)  # row-major: each row's columns ascending
        per_block = np.bincount(r * self.n_blocks + c // BLOCK, minlength=n_rows * self.n_blocks)
        # before[r, b]: row r's non-zeros left of block b (b = 0 .. n_blocks)
        self.before = np.zeros((n_rows, self.n_blocks + 1), dtype=np.int64)
        np.cumsum(per_block.reshape(n_rows, self.n_blocks), axis=1, out=self.before[:, 1:])
        rank = run_ranks(r)  # the entry's place in its row
        cell = (r // rows) * self.n_blocks + c // BLOCK  # (slice, block)
        order = np.argsort(cell, kind="stable")
        self.row, self.block, self.rank = r[order], (c // BLOCK)[order], rank[order]
        self.start = np.zeros(n_rows // rows * self.n_blocks + 1, dtype=np.int64)
        np.cumsum(np.bincount(cell, minlength=self.start.size - 1), out=self.start[1:])

    def latencies(self, slices: np.ndarray, starts: np.ndarray, width: int, reading: BlockSkip) -> np.ndarray:
        """Latency (sum of PhaseLat) of the chunks of ``width`` blocks starting at block ``starts[i]`` of
        slice ``slices[i]``; 0 for a chunk without non-zeros."""
        slices, starts = np.asarray(slices, dtype=np.int64), np.asarray(starts, dtype=np.int64)
        out = np.zeros(slices.size, dtype=np.int64)
        if not slices.size:
            return out
        if starts.min() < 0 or starts.max() + width > self.n_blocks:
            raise ValueError(f"chunks of {width} blocks must lie within the {self.n_blocks} blocks")
        rows = slices[:, None] * self.rows + np.arange(self.rows)
        kmax = (self.before[rows, (starts + width)[:, None]] - self.before[rows, starts[:, None]]).max(axis=1)
        phases = -(-kmax // NNZ_PER_PHASE)
        p_max = max(int(phases.max()), 1)
        batch = max(1, HIST_CELLS // (self.rows * p_max * width))
        for lo in range(0, slices.size, batch):
            hi = min(lo + batch, slices.size)
            out[lo:hi] = self._batch(slices[lo:hi], starts[lo:hi], width, phases[lo:hi], p_max, reading)
        return out

    def _batch(self, slices: np.ndarray, starts: np.ndarray, width: int, phases: np.ndarray, p_max: int,
               reading: BlockSkip) -> np.ndarray:
        first = slices * self.n_blocks + starts
        lo, hi = self.start[first], self.start[first + width]
        counts = hi - lo
        chunk = np.repeat(np.arange(slices.size), counts)
        entry = ranges(counts) + np.repeat(lo, counts)
        row, b0 = self.row[entry], starts[chunk]
        phase = (self.rank[entry] - self.before[row, b0]) // NNZ_PER_PHASE
        flat = ((chunk * self.rows + row % self.rows) * p_max + phase) * width + self.block[entry] - b0
        hist = np.bincount(flat, minlength=slices.size * self.rows * p_max * width).astype(np.uint8)
        valid = np.arange(p_max)[None, :] < phases[:, None]
        table = _phase_latencies(hist.reshape(slices.size, self.rows, p_max, width), valid, reading)
        return table.sum(axis=1)


def coordinate_chunk(coordinates: Sequence[Sequence[int]], L: int) -> np.ndarray:
    """Boolean ``(R, L)`` chunk from per-row column coordinates (``0 <= c < L``, distinct per row)."""
    chunk = np.zeros((len(coordinates), L), dtype=bool)
    for row, coords in enumerate(coordinates):
        cols = np.asarray(coords, dtype=np.int64)
        if cols.size and (cols.min() < 0 or cols.max() >= L or len(set(cols.tolist())) != cols.size):
            raise ValueError(f"row {row}: coordinates must be distinct and in [0, {L}), got {list(coords)}")
        chunk[row, cols] = True
    return chunk


def phase_latencies(coordinates: Sequence[Sequence[int]], L: int, reading: BlockSkip) -> list[int]:
    """PhaseLat (with the +2) of each phase of one chunk given by per-row coordinates."""
    table = phase_latency_table(coordinate_chunk(coordinates, L)[None], reading)
    return [int(x) for x in table[0]]

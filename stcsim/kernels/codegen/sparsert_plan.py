"""SparseRT's static load balancing (paper 003, section 3.4): which rows and which non-zeros each thread
group of each thread block owns, decided at generation time from the weights.

The grid is 2-D over the external axes: ``grid.x`` tiles N by ``columns`` (one output column per thread of a
group), ``grid.y`` splits M into ``ceil(M / rows_per_block)`` contiguous row ranges of (as nearly as the row
boundaries allow) equal non-zero counts (the paper's Figure 2b: blocks get different numbers of rows, no
atomics). Inside a block, ``groups`` thread groups split the reduction axis K into contiguous ranges of
equal non-zero counts (Figure 3b); every group keeps accumulators for the rows its range touches, and the
groups are reduced through shared memory. The three split parameters are what the autotuner searches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stcsim.kernels.problem import ceil_div
from stcsim.sparsity.csr import CSRFormat

WARP = 32
ROW_CAP_FACTOR = 2
"""A balanced block may hold up to this many times ``rows_per_block`` rows (its accumulator registers)."""
WEIGHT_MODES = ("imm", "const", "auto")
"""Where the weights live: immediate operands of the FMAs, a ``.const`` array, or ``.const`` when it fits."""


@dataclass(frozen=True)
class SplitParams:
    """The generator's parameters: the three split factors of the paper and where the weights live."""

    rows_per_block: int = 8
    columns: int = 64
    groups: int = 2
    weights: str = "auto"

    def __post_init__(self) -> None:
        if self.rows_per_block < 1:
            raise ValueError(f"rows_per_block must be >= 1, got {self.rows_per_block}")
        if self.columns < WARP or self.columns % WARP or self.columns & (self.columns - 1):
            raise ValueError(f"columns must be a power-of-two multiple of {WARP}, got {self.columns}")
        if self.groups < 1 or self.groups * self.columns > 1024:
            raise ValueError(f"groups must be >= 1 with groups * columns <= 1024 threads, got {self.groups}")
        if self.weights not in WEIGHT_MODES:
            raise ValueError(f"weights must be one of {', '.join(WEIGHT_MODES)}, got {self.weights!r}")

    @property
    def tag(self) -> str:
        """Short name of the setting, e.g. r8c64g2-auto."""
        return f"r{self.rows_per_block}c{self.columns}g{self.groups}-{self.weights}"


@dataclass(frozen=True)
class Segment:
    """The straight-line code of one thread group of one block: for each column k of W it reads (ascending),
    the (block-local row, value) pairs of its non-zeros."""

    block: int
    group: int
    columns: tuple[tuple[int, tuple[tuple[int, float], ...]], ...]

    @property
    def nnz(self) -> int:
        """Non-zeros (FMAs per thread) of the segment."""
        return sum(len(entries) for _, entries in self.columns)

    @property
    def rows(self) -> frozenset[int]:
        """Block-local rows the segment accumulates."""
        return frozenset(r for _, entries in self.columns for r, _ in entries)


@dataclass(frozen=True)
class Plan:
    """Row ranges of the blocks (``row_starts[b]`` .. ``row_starts[b + 1]``) and one segment per (block,
    group) in block-major order."""

    params: SplitParams
    m: int
    k: int
    row_starts: tuple[int, ...]
    segments: tuple[Segment, ...]

    @property
    def blocks(self) -> int:
        """Thread blocks along M (grid.y)."""
        return len(self.row_starts) - 1

    @property
    def max_rows(self) -> int:
        """Most rows of one block: the accumulator registers per thread."""
        return max(b - a for a, b in zip(self.row_starts[:-1], self.row_starts[1:], strict=True))

    def block_rows(self, block: int) -> int:
        """Rows of a block."""
        return self.row_starts[block + 1] - self.row_starts[block]

    def segment(self, block: int, group: int) -> Segment:
        """The segment of group `group` of block `block`."""
        return self.segments[block * self.params.groups + group]

    def shared_bytes(self) -> int:
        """Static shared memory of a block: the partial sums groups 1.. hand to group 0."""
        return 4 * (self.params.groups - 1) * self.max_rows * self.params.columns

    def imbalance(self) -> float:
        """Largest block non-zero count over the mean (1.0 is perfect balance)."""
        g = self.params.groups
        per_block = [sum(s.nnz for s in self.segments[b * g : (b + 1) * g]) for b in range(self.blocks)]
        mean = sum(per_block) / len(per_block)
        return max(per_block) / mean if mean else 1.0


def row_partition(row_nnz: np.ndarray, blocks: int, cap: int) -> tuple[int, ...]:
    """Start rows of `blocks` contiguous row ranges (and the end), each of 1..`cap` rows: boundary b is the
    first row at which the cumulative non-zero count reaches b / blocks of the total (equal non-zeros per
    block as nearly as rows allow), moved as little as the caps require."""
    m = len(row_nnz)
    if not 1 <= blocks <= m or blocks * cap < m:
        raise ValueError(f"cannot split {m} rows into {blocks} blocks of 1..{cap} rows")
    cumulative = np.concatenate([[0], np.cumsum(row_nnz)])
    total = cumulative[-1]
    starts = [0]
    for b in range(1, blocks):
        left = blocks - b  # blocks after this boundary
        target = int(np.searchsorted(cumulative, total * b / blocks)) if total else m * b // blocks
        lo = max(starts[-1] + 1, m - left * cap)
        hi = min(starts[-1] + cap, m - left)
        starts.append(min(max(target, lo), hi))
    return (*starts, m)


def k_partition(column_nnz: np.ndarray, groups: int) -> list[int]:
    """Start columns of `groups` contiguous K ranges (and the end) with equal non-zero counts: every group but
    the last takes the columns up to where the cumulative count reaches its share (paper Figure 3b)."""
    cumulative = np.cumsum(column_nnz)
    total = int(cumulative[-1]) if len(cumulative) else 0
    starts = [0]
    for g in range(1, groups):
        starts.append(max(starts[-1], int(np.searchsorted(cumulative, total * g / groups, side="right"))))
    return [*starts, len(column_nnz)]


def make_plan(csr: CSRFormat, params: SplitParams) -> Plan:
    """The load-balanced plan of a CSR weight matrix for a split setting (module docstring)."""
    m, k = csr.shape
    row_nnz = np.diff(np.asarray(csr.indptr, dtype=np.int64))
    blocks = ceil_div(m, params.rows_per_block)
    starts = row_partition(row_nnz, blocks, ROW_CAP_FACTOR * params.rows_per_block)
    segments = []
    for b in range(blocks):
        lo, hi = csr.indptr[starts[b]], csr.indptr[starts[b + 1]]
        rows = np.repeat(np.arange(starts[b + 1] - starts[b]), row_nnz[starts[b] : starts[b + 1]])
        cols = np.asarray(csr.indices[lo:hi], dtype=np.int64)
        vals = np.asarray(csr.values[lo:hi], dtype=np.float32)
        order = np.lexsort((rows, cols))
        rows, cols, vals = rows[order], cols[order], vals[order]
        bounds = k_partition(np.bincount(cols, minlength=k), params.groups)
        for g in range(params.groups):
            sel = (cols >= bounds[g]) & (cols < bounds[g + 1])
            segments.append(Segment(b, g, _by_column(rows[sel], cols[sel], vals[sel])))
    return Plan(params, m, k, starts, tuple(segments))


def _by_column(
    rows: np.ndarray, cols: np.ndarray, vals: np.ndarray
) -> tuple[tuple[int, tuple[tuple[int, float], ...]], ...]:
    """Non-zeros sorted by (column, row) grouped by column."""
    grouped: list[tuple[int, tuple[tuple[int, float], ...]]] = []
    if not len(cols):
        return ()
    cuts = np.flatnonzero(np.diff(cols)) + 1
    for r, c, v in zip(np.split(rows, cuts), np.split(cols, cuts), np.split(vals, cuts), strict=True):
        grouped.append((int(c[0]), tuple((int(ri), float(vi)) for ri, vi in zip(r, v, strict=True))))
    return tuple(grouped)

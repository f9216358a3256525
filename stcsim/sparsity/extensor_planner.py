"""Chunk planning for ExTensor (paper 004, Sec. IV): which ``wmma.smma.L`` widths cover each 16-row slice.

The weight ``W`` (``M x K``) is cut into 16-row slices (``M`` zero-padded to a multiple of 16, ``K`` to a
multiple of 16); each slice is covered left to right by chunks whose widths are multiples of 16 and at
most ``maxL``. A plan's cost is the sum of the chunks' PhaseLat latencies
(:mod:`stcsim.sparsity.extensor_latency`).

* :func:`greedy_plan` is Algorithm 1 with its bugs fixed: one result per slice (the listing overwrote
  ``chunks`` for every slice), an integer ``Ntc = max(1, T // n_slices)`` (the listing divides), and
  coordinates re-based to each merged chunk (the latency table is computed on chunk-relative columns).
  Like the listing it merges the adjacent pair with the largest positive gain ``lat(a) + lat(b) -
  lat(a+b)`` while the merged width is ``<= maxL``, and stops when no merge gains or when the slice has
  no more than ``Ntc`` chunks (``tensor_cores=None`` disables that stop). It optimises the sum of
  latencies per slice, not the max-per-Tensor-Core objective the paper states.
* :func:`dp_plan` is the exact optimum of the same sum objective, ``best[j] = min_w best[j-w] +
  lat(chunk of w blocks ending at block j)`` in ``O(n * maxL/16)``: the oracle for the heuristic.

Every merge the greedy makes lowers the sum, so it is never worse than all-16 chunks, and the DP is never
worse than the greedy.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from stcsim.sparsity.base import pad_to
from stcsim.sparsity.extensor_latency import BLOCK, BlockSkip, MaskIndex

SLICE_ROWS = 16
PLANNERS = ("greedy", "dp", "fixed")


@dataclass(frozen=True)
class SlicePlan:
    """The chunk widths (in columns, left to right) chosen for one slice and their total latency."""

    widths: tuple[int, ...]
    latency: int


def latency_table(slice_mask: np.ndarray, max_blocks: int, reading: BlockSkip) -> np.ndarray:
    """``table[b, w-1]``: latency of the chunk of ``w`` blocks starting at block ``b`` (-1 past the end)."""
    return latency_tables(slice_mask, max_blocks, reading, rows=slice_mask.shape[0])[0]


def latency_tables(
    mask: np.ndarray, max_blocks: int, reading: BlockSkip, rows: int = SLICE_ROWS
) -> np.ndarray:
    """:func:`latency_table` of every slice of ``rows`` rows of a padded mask (rows a multiple of ``rows``,
    columns of 16): ``tables[s, b, w-1]``, computed from the non-zeros (extensor_latency.MaskIndex)."""
    index = MaskIndex(mask, rows)
    n_slices, n_blocks = mask.shape[0] // rows, index.n_blocks
    tables = np.full((n_slices, n_blocks, max_blocks), -1, dtype=np.int64)
    for w in range(1, min(max_blocks, n_blocks) + 1):
        starts = n_blocks - w + 1
        lat = index.latencies(np.repeat(np.arange(n_slices), starts), np.tile(np.arange(starts), n_slices), w,
                              reading)
        tables[:, :starts, w - 1] = lat.reshape(n_slices, starts)
    return tables


def plan_cost(table: np.ndarray, block_widths: list[int]) -> int:
    """Total latency of consecutive chunks of the given widths (in blocks)."""
    starts = np.concatenate(([0], np.cumsum(block_widths)[:-1])).astype(int)
    return int(sum(table[s, w - 1] for s, w in zip(starts, block_widths, strict=True)))


def greedy_plan(table: np.ndarray, ntc: int | None = None) -> list[int]:
    """Algorithm 1 of paper 004 (fixed) on one slice; returns chunk widths in blocks.

    Each step merges the adjacent pair with the largest positive gain (the leftmost of equal gains) whose
    merged width fits; the candidate pairs wait in a heap keyed by (gain, start), so a step costs a few heap
    operations instead of a scan of the slice (a 1568-block slice: about 1,500 merges)."""
    max_blocks = table.shape[1]
    n = table.shape[0]
    width = {b: 1 for b in range(n)}  # chunk start -> width, in blocks
    after = {b: b + 1 for b in range(n - 1)}  # chunk start -> the next chunk's start
    before = {b + 1: b for b in range(n - 1)}
    heap: list[tuple[int, int, int, int]] = []

    def offer(left: int) -> None:
        right = after.get(left)
        if right is None or width[left] + width[right] > max_blocks:
            return
        wl, wr = width[left], width[right]
        gain = int(table[left, wl - 1] + table[right, wr - 1] - table[left, wl + wr - 1])
        if gain > 0:
            heapq.heappush(heap, (-gain, left, wl, wr))

    for b in range(n - 1):
        offer(b)
    while heap and (ntc is None or len(width) > ntc):
        _, left, wl, wr = heapq.heappop(heap)
        right = after.get(left)
        if width.get(left) != wl or right is None or width[right] != wr:
            continue  # a pair a merge has changed since it was offered
        width[left] = wl + wr
        del width[right]
        nxt = after.pop(right, None)
        del before[right]
        if nxt is None:
            del after[left]
        else:
            after[left], before[nxt] = nxt, left
        offer(left)
        if left in before:
            offer(before[left])
    return [width[b] for b in sorted(width)]


def dp_plan(table: np.ndarray) -> list[int]:
    """Exact minimum-sum plan of one slice; returns chunk widths in blocks."""
    n_blocks, max_blocks = table.shape
    best = np.zeros(n_blocks + 1, dtype=np.int64)
    choice = np.zeros(n_blocks + 1, dtype=np.int64)
    for j in range(1, n_blocks + 1):
        options = [best[j - w] + table[j - w, w - 1] for w in range(1, min(max_blocks, j) + 1)]
        choice[j] = int(np.argmin(options)) + 1
        best[j] = options[choice[j] - 1]
    widths = []
    j = n_blocks
    while j > 0:
        widths.append(int(choice[j]))
        j -= widths[-1]
    return widths[::-1]


def plan_matrix(
    mask: np.ndarray,
    max_l: int = 64,
    reading: BlockSkip = BlockSkip.PHASE_SKIP,
    planner: str = "greedy",
    tensor_cores: int | None = None,
) -> list[SlicePlan]:
    """One :class:`SlicePlan` per 16-row slice of a non-zero ``mask`` (``planner``: greedy, dp or fixed)."""
    if max_l < BLOCK or max_l % BLOCK:
        raise ValueError(f"maxL must be a positive multiple of {BLOCK}, got {max_l}")
    if planner not in PLANNERS:
        raise ValueError(f"planner must be one of {PLANNERS}, got {planner!r}")
    if tensor_cores is not None and tensor_cores < 1:
        raise ValueError(f"tensor_cores must be >= 1 (or None for no limit), got {tensor_cores}")
    padded = pad_to(np.asarray(mask, dtype=bool), SLICE_ROWS, BLOCK)
    n_slices = padded.shape[0] // SLICE_ROWS
    ntc = None if tensor_cores is None else max(1, tensor_cores // n_slices)
    plans = []
    for table in latency_tables(padded, max_l // BLOCK, reading):
        if planner == "greedy":
            blocks = greedy_plan(table, ntc)
        elif planner == "dp":
            blocks = dp_plan(table)
        else:
            blocks = [1] * table.shape[0]
        plans.append(SlicePlan(tuple(BLOCK * w for w in blocks), plan_cost(table, blocks)))
    return plans

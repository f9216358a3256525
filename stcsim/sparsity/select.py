"""Magnitude-based selection primitives shared by the patterns.

All selections are deterministic: ties in score are broken in favour of the lower index (stable sorts),
so the same weights always give the same mask.
"""

from __future__ import annotations

import numpy as np


def magnitude(weights: np.ndarray) -> np.ndarray:
    """Element importance score ``|w|`` as float64."""
    return np.abs(np.asarray(weights, dtype=np.float64))


def rank_magnitude(weights: np.ndarray) -> np.ndarray:
    """``|w|`` of floating weights in their own dtype, for scores that are only ranked (``top_k_flat``): the
    absolute value is exact and widening to float64 preserves order and ties, so the ranking is
    ``magnitude``'s, without a float64 copy (a 4096 x 25088 layer: 0.8 GB, and another in the partition)."""
    return np.abs(np.asarray(weights))


def l2_norm(weights: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
    """L2 norm along ``axis`` computed in float64 (group importance score)."""
    w = np.asarray(weights, dtype=np.float64)
    return np.sqrt(np.sum(w * w, axis=axis))


def top_k_flat(scores: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask (same shape as ``scores``) keeping the ``k`` highest scores overall.

    Ties at the threshold keep the lower indices (the mask a stable sort of the negated scores gives); the
    threshold is found by partition, O(n), instead of sorting (a 4096 x 25088 layer: 28 s -> about 2 s).
    Scores with NaN are sorted (NaN ranks below every number, as in the sort).
    """
    flat = np.asarray(scores).ravel()
    keep = np.zeros(flat.size, dtype=bool)
    if k >= flat.size:
        keep[:] = True
    elif k > 0 and np.isnan(flat).any():
        keep[np.argsort(-flat, kind="stable")[:k]] = True
    elif k > 0:
        threshold = np.partition(flat, flat.size - k)[flat.size - k]
        np.greater(flat, threshold, out=keep)
        ties = np.flatnonzero(flat == threshold)
        keep[ties[: k - int(np.count_nonzero(keep))]] = True
    return keep.reshape(np.shape(scores))


SHORT_ROW = 8
"""Rows of at most this many scores (N:M groups) are ranked by pairwise comparison instead of a sort."""


def top_k_per_row(scores: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask keeping the ``k`` highest scores in every row of a 2-D score array.

    Ties keep the lower index (as a stable sort of the negated scores). Short rows without NaN (the groups
    of N:M pruning: millions of rows of 4) count for each element the elements ranked before it - higher,
    or equal at a lower index - and keep those with fewer than ``k``: the same mask as the sort, without
    sorting every row.
    """
    scores = np.asarray(scores)
    keep = np.zeros(scores.shape, dtype=bool)
    if k <= 0:
        return keep
    width = scores.shape[1] if scores.ndim == 2 else 0
    if 0 < width <= SHORT_ROW and not np.isnan(scores).any():
        columns = [scores[:, j] for j in range(width)]
        for j, column in enumerate(columns):
            rank = np.zeros(len(column), dtype=np.uint8)
            for i, other in enumerate(columns):
                if i != j:
                    rank += (other >= column) if i < j else (other > column)
            keep[:, j] = rank < k
        return keep
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    np.put_along_axis(keep, order, True, axis=1)
    return keep


def select_groups(scores: np.ndarray, sizes: np.ndarray, target: int) -> np.ndarray:
    """Keep groups in descending score order; the kept prefix whose total size is closest to ``target``.

    ``sizes`` is the number of real (unpadded) elements of each group, so partial groups at a padded edge
    count for what they hold. The achieved total differs from ``target`` by at most half the largest
    group size, which is the granularity of a group-wise pattern.
    """
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    cum = np.concatenate(([0], np.cumsum(np.asarray(sizes)[order])))
    prefix = int(np.argmin(np.abs(cum - target)))
    keep = np.zeros(len(order), dtype=bool)
    keep[order[:prefix]] = True
    return keep


def trim_to_count(weights: np.ndarray, mask: np.ndarray, keep: int) -> np.ndarray:
    """Drop the smallest-magnitude kept elements of ``mask`` until at most ``keep`` remain."""
    if int(mask.sum()) <= keep:
        return mask
    scores = np.where(mask, magnitude(weights), -1.0)
    return top_k_flat(scores, keep) & mask

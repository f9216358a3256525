"""Balanced K-Means: cluster ``n`` points into groups of exactly ``V`` points (Shfl-BW, paper 000).

Method (the paper leaves it open):

1. Initialisation: k-means++ seeding (``k = n / V`` centres) with ``numpy.random.default_rng(seed)``.
2. Balanced assignment, in rounds: every unassigned point proposes to its nearest centre that still has
   room; each centre accepts its closest proposers up to its remaining capacity (ties: lower point
   index first). At most ``k`` rounds place every point, and each cluster ends with exactly ``V`` points.
3. Update: each centre becomes the mean of its ``V`` points. Steps 2-3 repeat until the assignment no
   longer changes or ``max_iter`` is reached.

Everything is deterministic for a given seed (stable sorts, seeded generator).
"""

from __future__ import annotations

import numpy as np


def squared_distances(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Matrix of squared Euclidean distances, shape ``(n_points, n_centres)``."""
    d = (points * points).sum(1)[:, None] - 2.0 * points @ centres.T + (centres * centres).sum(1)[None, :]
    return np.maximum(d, 0.0)


def kmeans_plus_plus(points: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: ``k`` initial centres drawn from ``points`` (each draw updates every point's
    distance to its nearest centre with the new centre alone: O(n k d) in all)."""
    norms = (points * points).sum(1)

    def distances_to(centre: np.ndarray) -> np.ndarray:
        return np.maximum(norms - 2.0 * (points @ centre) + centre @ centre, 0.0)

    centres = [points[rng.integers(len(points))]]
    d = distances_to(centres[0])  # each point's squared distance to its nearest centre so far
    for _ in range(1, k):
        total = d.sum()
        pick = rng.integers(len(points)) if total == 0 else rng.choice(len(points), p=d / total)
        centres.append(points[pick])
        d = np.minimum(d, distances_to(points[pick]))
    return np.asarray(centres, dtype=np.float64)


def balanced_assign(dist: np.ndarray, capacity: int) -> np.ndarray:
    """Assign every point to a centre with each centre taking exactly ``capacity`` points (see module)."""
    n, k = dist.shape
    labels = np.full(n, -1)
    room = np.full(k, capacity)
    while (labels < 0).any():
        todo = np.flatnonzero(labels < 0)
        masked = np.where(room[None, :] > 0, dist[todo], np.inf)
        choice = np.argmin(masked, axis=1)
        for c in np.unique(choice):
            proposers = todo[choice == c]
            order = np.argsort(dist[proposers, c], kind="stable")[: room[c]]
            labels[proposers[order]] = c
            room[c] -= len(order)
    return labels


def balanced_kmeans(points: np.ndarray, group_size: int, seed: int = 0, max_iter: int = 25) -> np.ndarray:
    """Cluster labels (``0 .. n/V - 1``), every label used exactly ``group_size`` times."""
    pts = np.asarray(points, dtype=np.float64)
    n = len(pts)
    if group_size < 1 or n % group_size:
        raise ValueError(f"group size V={group_size} must be >= 1 and divide the number of points {n}")
    k = n // group_size
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    centres = kmeans_plus_plus(pts, k, np.random.default_rng(seed))
    labels = balanced_assign(squared_distances(pts, centres), group_size)
    for _ in range(max_iter):
        centres = np.stack([pts[labels == c].mean(axis=0) for c in range(k)])
        new = balanced_assign(squared_distances(pts, centres), group_size)
        if np.array_equal(new, labels):
            break
        labels = new
    return labels

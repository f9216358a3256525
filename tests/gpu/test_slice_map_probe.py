"""The CPU-side parts of the L2 slice map probe: the mapping walk against a synthetic GPU, and the tables.

benchmarks/calibration/slice_map_probe.py times pairs of words on silicon; here a fake timer answers from a
known map (one slice: 50 us, buddy slices: 38, two free slices: 28, plus noise and a slow first reading),
and the walk must recover the map up to slice numbering.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.calibration import slice_map_probe as probe
from benchmarks.calibration import slice_map_table as table

UNIT = probe.UNIT


class FakeTimer:
    """Launch times of pair_red from a known slice map: one slice 50 us, buddies 38, else 28 (+ noise)."""

    def __init__(self, slices: np.ndarray, buddy: np.ndarray, seed: int = 0) -> None:
        self.slices, self.buddy = slices, buddy
        self.rng = np.random.default_rng(seed)
        self.calls = 0

    def times_us(self, pairs: list[tuple[int, int]]) -> np.ndarray:
        out = []
        for a, b in pairs:
            sa, sb = self.slices[a // UNIT], self.slices[b // UNIT]
            t = 50.0 if sa == sb else 38.0 if self.buddy[sa] == sb else 28.0
            self.calls += 1
            if self.calls % 997 == 0:  # now and then a launch slowed by something else
                t += 40.0
            out.append(t + self.rng.normal(0, 0.5))
        return np.array(out)


def synthetic_map(units: int, slices: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A map with silicon's structure (u and u ^ 2 on one slice) and a buddy for every slice."""
    rng = np.random.default_rng(seed)
    half = rng.integers(0, slices, units // 2)
    u = np.arange(units)
    m = half[(u >> 2) * 2 + (u & 1)]
    order = rng.permutation(slices)
    buddy = np.empty(slices, np.int64)
    buddy[order[0::2]], buddy[order[1::2]] = order[1::2], order[0::2]
    return m, buddy


def test_map_units_recovers_a_synthetic_map():
    slices, buddy = synthetic_map(512, 16)
    timer = FakeTimer(slices, buddy)
    reps: list[int] = []
    rows = probe.map_units(timer, [u * UNIT for u in range(512)], reps, threshold=45.0, deadline=float("inf"),
                           times=[])
    found = np.array([r["slice"] for r in rows])
    assert len(reps) == len(set(slices.tolist()))
    # the same partition of units into slices, whatever the numbering
    for s in set(found.tolist()):
        assert len(set(slices[found == s].tolist())) == 1
    assert all(r["matches"] <= 1 for r in rows)  # noisy readings were timed again


def test_pair_levels_and_buddies_from_a_pair_matrix(tmp_path):
    slices, buddy = synthetic_map(64, 8)
    timer = FakeTimer(slices, buddy)
    matrix = np.stack([timer.times_us([(i * UNIT, j * UNIT) for j in range(64)]) for i in range(64)])
    levels = table.pair_levels(matrix, slices)
    path = tmp_path / "levels.csv"
    levels.to_csv(path, index=False)
    same = levels[levels.slice_a == levels.slice_b]
    assert (same.median_us > 45).all()
    pairs = levels[(levels.slice_a != levels.slice_b) & levels.median_us.between(*table.BUDDY_US)]
    for a, b in zip(pairs.slice_a, pairs.slice_b, strict=True):
        assert buddy[a] == b
    with pytest.raises(ValueError, match="without a buddy"):  # buddies() wants a buddy for each of 80 slices
        table.buddies(path)


def test_committed_map_tables_are_consistent():
    buddy = table.buddies()
    assert sorted(buddy[buddy].tolist()) == list(range(table.SLICES))
    assert (buddy[buddy] == np.arange(table.SLICES)).all() and (buddy != np.arange(table.SLICES)).all()

"""The L1's capacity is what the kernel's shared carve-out leaves (issue 43, step 27). The driver configures
each kernel's shared capacity as the smallest carve-out (`sm.shared_carveouts_kb`) holding its resident CTAs'
shared memory and reserve; on the H100 the L1 then holds exactly the rest of the 256 KB
(results/reference/h100_l1_carveout.csv: one CTA reading a footprint 8 times hits from the second pass while
the footprint fits 256 KB less the carve-out ncu reports). Pinned with the probe's own kernel
(benchmarks/calibration/l1_carveout_probe.py) and its silicon table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.calibration.l1_carveout_probe import PASSES, probe_ptx
from stcsim.config import load_config
from stcsim.sim import Engine

KB = 1024
REFERENCE = Path(__file__).resolve().parents[2] / "results/reference/h100_l1_carveout.csv"


@pytest.fixture(scope="module")
def probe():
    """launch(threads, shared bytes, footprint bytes) -> the launch's stats, on the h100 config."""
    eng = Engine("h100", ptxas_facts=False)
    eng.load_ptx(probe_ptx())
    most = 240 * KB
    data = np.random.default_rng(3).random(most // 4, dtype=np.float32)
    src, out, clk = eng.malloc(most), eng.malloc(4 * 1024), eng.malloc(8)
    eng.copy_to(src, data)

    def launch(threads: int, shared: int, footprint: int) -> dict:
        args = [src, footprint // 16, PASSES, out, clk]
        stats = eng.launch("l1_sweep", 1, threads, args, shared_bytes=shared)
        n16 = footprint // 16  # each thread's sum over its 16-byte words' first floats, PASSES times
        firsts = data[: n16 * 4].reshape(n16, 4)[:, 0].astype(np.float64)
        want = np.array([firsts[t::threads].sum() * PASSES for t in range(threads)])
        np.testing.assert_allclose(eng.copy_from(out, threads, np.float32), want, rtol=1e-4)
        return stats

    return launch


def _hit_rate(stats: dict) -> float:
    return stats["l1d_hits"] / (stats["l1d_hits"] + stats["l1d_misses"])


@pytest.mark.parametrize(("threads", "shared", "carveout"), [
    (1024, 0, 8), (1024, 6 * KB, 16), (1024, 12 * KB, 32), (1024, 24 * KB, 64), (1024, 60 * KB, 132),
    (1024, 96 * KB, 196), (1024, 160 * KB, 164), (1024, 226 * KB, 228), (64, 4 * KB, 164),
])
def test_the_carveout_is_the_smallest_holding_the_resident_ctas(probe, threads, shared, carveout):
    """The model's carve-out is the one ncu reports the driver chose (resident CTAs x (shared + 1 KB))."""
    stats = probe(threads, shared, 16 * KB)
    assert stats["shared_carveout_bytes"] == carveout * KB
    assert stats["l1d_bytes"] == 256 * KB - carveout * KB
    silicon = pd.read_csv(REFERENCE, comment="#")
    measured = silicon[(silicon.threads == threads) & (silicon.shared_bytes == shared)]
    assert set(measured.carveout_bytes) == {carveout * KB}


@pytest.mark.parametrize(("threads", "shared"), [(1024, 0), (1024, 24 * KB), (1024, 96 * KB), (64, 4 * KB)])
def test_a_footprint_hits_from_the_second_pass_while_it_fits_the_l1(probe, threads, shared):
    """Every pass after the first hits while the footprint fits the L1 the carve-out leaves; one 16 KB
    beyond it (a sequential sweep, least recently used first out) misses, as silicon's hit rate falls."""
    l1 = probe(threads, shared, 16 * KB)["l1d_bytes"]
    fits = int(min(l1, 240 * KB) // (16 * KB) * 16 * KB)
    assert _hit_rate(probe(threads, shared, fits)) == pytest.approx((PASSES - 1) / PASSES)
    if fits + 16 * KB <= 240 * KB:
        assert _hit_rate(probe(threads, shared, fits + 16 * KB)) < 0.1
    # silicon: full hits up to a step below the capacity (its replacement is not exactly LRU at the edge)
    silicon = pd.read_csv(REFERENCE, comment="#")
    measured = silicon[(silicon.threads == threads) & (silicon.shared_bytes == shared)]
    assert (measured[measured.footprint_bytes < fits].l1_hit_rate > 0.85).all()
    assert (measured[measured.footprint_bytes >= l1 + 32 * KB].l1_hit_rate < 0.75).all()


def test_a_config_without_carveouts_keeps_its_fixed_l1(probe):
    """A config listing no carve-outs keeps l1d.size_bytes whatever the kernel's shared memory."""
    eng = Engine(load_config("h100", {"sm.shared_carveouts_kb": ""}), ptxas_facts=False)
    eng.load_ptx(probe_ptx())
    src, out, clk = eng.malloc(64 * KB), eng.malloc(4 * 1024), eng.malloc(8)
    stats = eng.launch("l1_sweep", 1, 1024, [src, 64 * KB // 16, PASSES, out, clk])
    assert stats["l1d_bytes"] == 28 * KB and stats["shared_carveout_bytes"] == 0

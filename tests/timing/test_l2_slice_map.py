"""The H100's measured L2 slice map (l2.slice_map: h100): the table, its silicon facts and what it predicts.

results/reference/h100_l2_slice_map.csv holds the slice of every 256-byte unit of four 2 MiB pages, read on
an H100 by atomic contention (benchmarks/calibration/slice_map_probe.py). The suite's histogram_atomic with
its 4096 bins at 64 offsets of the first page ran 36-41 us on silicon where the map puts at most 2 of the
bins' 64 units on one slice and 61.5 us at the two offsets where it puts 4
(results/reference/h100_l2_slice_histogram_offsets.csv): the extra time is two more units' updates queued on
the busiest slice's atomic unit. The engine, looking slices up in the same map, must show both times.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.calibration import slice_map_table as smt
from stcsim import _engine
from stcsim.config import ConfigError, load_config
from stcsim.sim.engine import Engine

CLOCK_GHZ = 1.98  # the H100's SM clock under load (configs/h100.yaml)
PAGE = 2 << 20
BINS, N, GRID = 4096, 1 << 20, 528  # as the silicon run (slice_map_probe.py)


def test_engine_table_is_the_committed_measurement() -> None:
    """engine/timing/l2_slice_map_h100.inc is generated from the committed CSV, unchanged."""
    assert smt.TABLE.read_text() == smt.table_source(smt.resolve())


def test_measured_map_facts() -> None:
    """80 slices on every page, each holding 1/80 of a page within 6 %; u and u ^ 2 on one slice, u and
    u ^ 1 never; no slice twice in most 64-unit windows (the property the histogram times show)."""
    slices = smt.resolve()
    u = np.arange(smt.UNITS)
    for page in slices:
        counts = np.bincount(page, minlength=80)
        assert len(counts) == 80 and counts.min() >= 96 and counts.max() <= 108
        assert (page == page[u ^ 2]).mean() > 0.999
        assert (page == page[u ^ 1]).sum() == 0
        busiest = np.array([np.bincount(page[w:w + 64]).max() for w in range(0, smt.UNITS - 64, 4)])
        assert (busiest == 2).mean() > 0.85 and busiest.max() <= 5


def test_histogram_offsets_match_silicon() -> None:
    """The histogram with its bins where the map puts 2 units on a slice and where it puts 4, within 15 % of
    silicon's cycles: the suite's ncu measurement for the first (62 of the 64 offsets run that fast, the
    suite's own allocation among them), plus the CUDA-event difference of the two offsets for the second."""
    hist = pd.read_csv(smt.HIST_CSV, comment="#")
    assert hist.counts_ok.all()
    offsets = hist.offset.to_numpy()
    busiest = np.array([np.bincount(smt.resolve()[0][o // 256:o // 256 + 64]).max() for o in offsets])
    slow, fast = hist.ms[busiest == 4], hist.ms[busiest == 2]
    assert len(slow) >= 2 and len(fast) >= 50 and slow.min() > 1.4 * fast.max() - 0.01
    suite = pd.concat(pd.read_csv(smt.REFERENCE / f"h100_calibration_wide_run{r}.csv", comment="#")
                      for r in (1, 2))
    suite = suite[(suite.kernel == "histogram_atomic") & (suite["shape"] == "n=1M,bins=4096")]
    silicon = {"fast": suite.measured_cycles.mean()}
    silicon["slow"] = silicon["fast"] + (slow.median() - fast.median()) * 1e6 * CLOCK_GHZ

    ptx = (smt.ROOT / "benchmarks" / "calibration" / "kernels" / "atomics.ptx").read_text()
    eng = Engine("h100")
    eng.load_ptx(ptx)
    x = np.random.default_rng(7).integers(0, 1 << 30, N).astype(np.int32)
    xb = eng.malloc(N * 4)
    eng.copy_to(xb, x)
    region = eng.malloc(10 * PAGE)
    base = -(-region // PAGE) * PAGE
    while (base // PAGE) % 4:  # the engine picks the measured page by the page number modulo 4
        base += PAGE
    want = np.bincount(x % BINS, minlength=BINS).astype(np.uint32)
    for label, off in (("fast", int(offsets[busiest == 2][0])), ("slow", int(offsets[busiest == 4][0]))):
        st = eng.launch("histogram_atomic", (GRID, 1, 1), (256, 1, 1), [xb, base + off, BINS, N])
        np.testing.assert_array_equal(eng.copy_from(base + off, BINS, np.uint32), want)
        assert st["gpu_sim_cycle"] == pytest.approx(silicon[label], rel=0.15), (label, silicon)


def test_map_needs_its_slice_count() -> None:
    """The h100 map names 80 slices of 256 bytes: other numbers are refused by the loader (naming the key)
    and, for a flat config that skipped it, by the engine."""
    with pytest.raises(ConfigError, match=r"l2\.slice_map"):
        load_config("h100", {"l2.slices": 160})
    with pytest.raises(ConfigError, match="slice_map"):
        load_config("h100", {"l2.slice_map": "a100"})
    flat = load_config("h100").flat()
    with pytest.raises(ValueError, match=r"l2\.slice_map"):
        _engine.Engine(True).set_config({**flat, "l2.slice_interleave_bytes": 512.0})

"""The SM's store path (l1d.store_sector_cycles): warps of one CTA store back to back
(benchmarks/calibration/store_probe.py); the CTA's stores take sectors x store_sector_cycles each, a sector
written only in part in both 16-byte halves twice that. A config without the key's limit (v100: 0) does not
wait on stores. The stored values are checked against what each lane wrote."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.calibration.store_probe import ITERS, MODES, PITCH, SECTORS, store_ptx
from stcsim.config import load_config
from stcsim.sim import Engine


def cycles_per_store(config: str, mode: str, warps: int) -> tuple[float, np.ndarray]:
    """The CTA's slowest warp's cycles per store, and the first row of warp 0's region (float32)."""
    eng = Engine(config)
    eng.load_ptx(store_ptx())
    buf = eng.malloc(warps * 32 * PITCH)
    clk = eng.malloc(8 * warps)
    eng.launch(f"st_{mode}", 1, 32 * warps, [buf, clk, ITERS, MODES.index(mode)])
    slowest = float(eng.copy_from(clk, warps, np.int64).max())
    return slowest / ITERS, eng.copy_from(buf, PITCH // 4, np.float32)


@pytest.mark.parametrize("warps", [4, 8])
@pytest.mark.parametrize("mode", MODES)
def test_a_store_takes_the_store_path_per_sector(mode: str, warps: int) -> None:
    per_sector = load_config("h100").flat()["l1d.store_sector_cycles"]
    halves = 2 if mode == "mma_c" else 1  # one f32 a lane, 8 B apart: both halves of each sector in part
    got, row = cycles_per_store("h100", mode, warps)
    assert got == pytest.approx(warps * SECTORS[mode] * halves * per_sector, rel=0.05)
    lane = np.arange(32)
    if mode == "coalesced":
        np.testing.assert_array_equal(row[:32], lane)
    elif mode == "scattered":  # the stores 512 B on overwrite lanes 16-31's sectors with lanes 0-15
        np.testing.assert_array_equal(row[lane * 8], lane % 16)
    else:  # row 0 of the mma layout: lanes 0-3, 8 bytes apart, (x, x + 1) with st.v2
        np.testing.assert_array_equal(row[0:8:2], lane[:4])
        if mode == "mma_c_v2":
            np.testing.assert_array_equal(row[1:8:2], lane[:4] + 1)


def test_without_a_store_path_limit_stores_do_not_wait() -> None:
    assert load_config("v100").flat()["l1d.store_sector_cycles"] == 0
    few, _ = cycles_per_store("v100", "coalesced", 4)
    many, _ = cycles_per_store("v100", "scattered", 4)
    assert many == pytest.approx(few, rel=0.05)

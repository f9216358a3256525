"""Warp-level exchange: shfl.sync in every mode and width, vote.sync, activemask (tests/sim/cuda/warp.cu)."""

from __future__ import annotations

import numpy as np
import pytest
from simkit import assert_bits, kernels

WARPS = 4


@pytest.fixture(scope="module")
def k():
    return kernels("warp")


def shfl(vals: np.ndarray, mode: str, b: np.ndarray | int, width: int) -> np.ndarray:
    """shfl.sync over one warp per the PTX ISA (c = ((32 - width) << 8) | clamp, clamp 0 for .up else 31)."""
    seg = (32 - width) & 0x1F  # segmask = c[12:8]
    cval = 0 if mode == "up" else 0x1F
    b = np.broadcast_to(np.asarray(b), (32,))
    out = np.empty_like(vals)
    for lane in range(32):
        bv = int(b[lane]) & 0x1F
        max_lane = (lane & seg) | (cval & ~seg & 0x1F)
        min_lane = lane & seg
        if mode == "up":
            j, ok = lane - bv, lane - bv >= max_lane
        elif mode == "down":
            j, ok = lane + bv, lane + bv <= max_lane
        elif mode == "bfly":
            j, ok = lane ^ bv, (lane ^ bv) <= max_lane
        else:
            j = min_lane | (bv & ~seg & 0x1F)
            ok = j <= max_lane
        out[lane] = vals[j if ok else lane]
    return out


def test_shuffles_in_every_mode_and_width(k, rng):
    n = 32 * WARPS
    a = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    src = rng.integers(0, 64, size=n).astype(np.int32)
    out = np.zeros((n, 14), np.int32)
    *_, got = k.launch("shuffles", 2, 64, a, src, out)
    for w in range(WARPS):
        sl = slice(32 * w, 32 * w + 32)
        v, s = a[sl], src[sl]
        lanes = np.arange(32)
        want = {
            0: shfl(v, "idx", s, 32),
            1: shfl(v, "up", 3, 32),
            2: shfl(v, "down", 5, 32),
            3: shfl(v, "bfly", 6, 32),
            4: shfl(v, "idx", s, 8),
            5: shfl(v, "up", 2, 16),
            6: shfl(v, "down", 3, 8),
            7: shfl(v, "bfly", 5, 4),
            8: shfl(v, "bfly", 1, 32),
            9: v[31 - lanes],
            10: s[31 - lanes],
            11: shfl(v, "down", s & 31, 32),
            12: shfl(v, "up", s & 15, 16),
            13: shfl(v, "idx", s & 3, 2),
        }
        for col, wv in want.items():
            assert_bits(got[sl, col], wv, f"warp {w} column {col}")


def test_votes_ballots_and_active_masks(k, rng):
    n = 32 * WARPS
    a = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    a[32:64] = np.abs(a[32:64]) % 1000  # a warp where __all_sync holds and no lane is negative
    out = np.full((n, 10), 0xDEAD, np.uint32)
    *_, got = k.launch("votes", 2, 64, a, out)
    for w in range(WARPS):
        sl = slice(32 * w, 32 * w + 32)
        v = a[sl].astype(np.int64)

        def ballot(pred: np.ndarray, lanes: np.ndarray | None = None) -> int:
            mask = np.ones(32, bool) if lanes is None else lanes
            return int(sum(1 << i for i in range(32) if pred[i] and mask[i]))

        g = got[sl]
        b = ballot(v > 0)
        assert (g[:, 0] == b).all() and (g[:, 3] == bin(b).count("1")).all(), f"warp {w} ballot"
        assert (g[:, 1] == int((v > -1000000).all())).all(), f"warp {w} all"
        assert (g[:, 2] == int((v > 1000000).any())).all(), f"warp {w} any"
        assert (g[:, 4] == 0xFFFFFFFF).all(), f"warp {w} activemask"
        odd = (v & 1).astype(bool)
        m_odd, m_even = ballot(odd), ballot(~odd)
        for lane in range(32):
            if odd[lane]:
                want = [m_odd, ballot((v & 2) != 0, odd), int(all((v[odd] & 4) != 0))]
            else:
                want = [m_even, ballot((v & 8) != 0, ~odd), int(any((v[~odd] & 16) != 0))]
            assert g[lane, 5:8].tolist() == want, f"warp {w} lane {lane}: divergent votes"
        low = np.arange(32) < 13
        assert (g[low, 8] == int(((v[low] & 32) != 0).any())).all(), f"warp {w} partial-mask any"
        assert (g[~low, 8] == 0xDEAD).all()
        neg = v < 0
        assert_bits(g[:, 9], np.array([neg[:i].sum() for i in range(32)], np.uint32), f"warp {w} ranks")

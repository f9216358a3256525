"""The whole-warp lane paths of cvt (32 -> 64 bits), integer setp and predicate and/or/xor against numpy:
a full warp takes the 32-bit-lane loops, a partial warp (the block's second, 16 threads) the per-lane path;
both must give the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sim import Engine

pytestmark = pytest.mark.sim_only

# Thread i reads x[i], y[i] and writes wide[2 i], wide[2 i + 1] (cvt.s64.s32 and cvt.u64.u32 of x) and
# flags[i]: bit 0 x < y (s32), bit 1 x <u 0xffffffff (an immediate with all bits set), bit 2 x >= y (u32),
# bits 3-5 and / or / xor of the first two predicates.
LANES_PTX = """.version 8.0
.target sm_80
.address_size 64

.visible .entry lanes(.param .u64 px, .param .u64 py, .param .u64 pw, .param .u64 pf)
{
\t.reg .pred %p<7>;
\t.reg .b32 %r<12>;
\t.reg .b64 %rd<16>;
\tld.param.u64 %rd1, [px];
\tld.param.u64 %rd2, [py];
\tld.param.u64 %rd3, [pw];
\tld.param.u64 %rd4, [pf];
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd5, %r1, 4;
\tadd.s64 %rd6, %rd1, %rd5;
\tadd.s64 %rd7, %rd2, %rd5;
\tld.global.u32 %r2, [%rd6];
\tld.global.u32 %r3, [%rd7];
\tcvt.s64.s32 %rd8, %r2;
\tcvt.u64.u32 %rd9, %r2;
\tmul.wide.u32 %rd10, %r1, 16;
\tadd.s64 %rd11, %rd3, %rd10;
\tst.global.u64 [%rd11], %rd8;
\tst.global.u64 [%rd11+8], %rd9;
\tsetp.lt.s32 %p1, %r2, %r3;
\tsetp.lt.u32 %p2, %r2, -1;
\tsetp.ge.u32 %p3, %r2, %r3;
\tand.pred %p4, %p1, %p2;
\tor.pred %p5, %p1, %p2;
\txor.pred %p6, %p1, %p2;
\tselp.u32 %r4, 1, 0, %p1;
\tselp.u32 %r5, 2, 0, %p2;
\tselp.u32 %r6, 4, 0, %p3;
\tselp.u32 %r7, 8, 0, %p4;
\tselp.u32 %r8, 16, 0, %p5;
\tselp.u32 %r9, 32, 0, %p6;
\tor.b32 %r10, %r4, %r5;
\tor.b32 %r10, %r10, %r6;
\tor.b32 %r10, %r10, %r7;
\tor.b32 %r10, %r10, %r8;
\tor.b32 %r11, %r10, %r9;
\tadd.s64 %rd12, %rd4, %rd5;
\tst.global.u32 [%rd12], %r11;
\tret;
}
"""


def test_whole_warp_and_partial_warp_lanes(rng):
    eng = Engine()
    eng.load_ptx(LANES_PTX)
    n = 48  # one full warp and one of 16 threads
    x = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    y = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    x[:4] = [-1, 0, np.iinfo(np.int32).min, np.iinfo(np.int32).max]
    y[4:8] = x[4:8]  # equal pairs
    px, py, pw, pf = eng.malloc(4 * n), eng.malloc(4 * n), eng.malloc(16 * n), eng.malloc(4 * n)
    eng.copy_to(px, x)
    eng.copy_to(py, y)
    eng.launch("lanes", 1, n, [px, py, pw, pf])
    wide = eng.copy_from(pw, 2 * n, np.uint64)
    flags = eng.copy_from(pf, n, np.uint32)
    xs, ys = x.astype(np.int64), y.astype(np.int64)
    xu, yu = x.view(np.uint32).astype(np.uint64), y.view(np.uint32).astype(np.uint64)
    assert np.array_equal(wide[0::2], xs.astype(np.uint64))
    assert np.array_equal(wide[1::2], xu)
    p1, p2, p3 = xs < ys, xu < 0xFFFFFFFF, xu >= yu
    want = (p1 * 1 | p2 * 2 | p3 * 4 | (p1 & p2) * 8 | (p1 | p2) * 16 | (p1 ^ p2) * 32).astype(np.uint32)
    assert np.array_equal(flags, want)

"""Barrier IDs as the hardware checks them (issue 46 item 6): `bar.sync` is `barrier.sync.aligned`, so every
thread of a warp must execute the same barrier instruction. A warp whose threads diverge onto different
barriers (or reach one while diverged) is undefined behaviour that hangs the hardware; the engine stops it
with a SimFault naming the kernel, the instructions and the barrier IDs, in functional and timing launches.
Before, a half-warp split across `bar.sync 0` / `bar.sync 1` completed (each half released its barrier)."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sim import Engine, SimFault

pytestmark = pytest.mark.sim_only

PTX = """.version 8.0
.target sm_80
.address_size 64

// lanes 0-15 wait at barrier 0, lanes 16-31 at barrier 1: a half-warp split
.visible .entry split(.param .u64 out)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, %tid.x;
\tand.b32 %r2, %r1, 31;
\tsetp.lt.u32 %p1, %r2, 16;
\t@%p1 bra $L_low;
\tbar.sync 1;
\tbra.uni $L_end;
$L_low:
\tbar.sync 0;
$L_end:
\tmul.wide.u32 %rd2, %r1, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r1;
\tret;
}

// the barrier ID from a register that differs across the warp: 0 in lanes 0-15, 1 in lanes 16-31
.visible .entry split_reg()
{
\t.reg .b32 %r<4>;
\tmov.u32 %r1, %tid.x;
\tshr.u32 %r2, %r1, 4;
\tand.b32 %r3, %r2, 1;
\tbar.sync %r3;
\tret;
}

// one barrier reached while diverged: the odd lanes skip it (its guard)
.visible .entry guarded()
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<3>;
\tmov.u32 %r1, %tid.x;
\tand.b32 %r2, %r1, 1;
\tsetp.eq.u32 %p1, %r2, 0;
\t@%p1 bar.sync 0;
\tret;
}

// valid: every thread of a warp executes the same barrier (warps 0 and 1 at barrier 1 with a count of
// 64; all at barrier 0), some threads have exited before, and a warp-uniform guard skips one
.visible .entry valid(.param .u64 out)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<5>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, %tid.x;
\tshr.u32 %r2, %r1, 5;
\tsetp.ge.u32 %p2, %r1, 120;
\t@%p2 bra $L_done;
\tsetp.lt.u32 %p1, %r2, 2;
\t@%p1 bar.sync 1, 64;
\tbar.sync 0;
\tmul.wide.u32 %rd2, %r1, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r1;
$L_done:
\tret;
}

// barrier.sync without .aligned, reached by the whole warp: like bar.sync
.visible .entry unaligned()
{
\tbarrier.sync 0;
\tret;
}
"""

CONFIGS = [None, "v100", "h100"]


def engine(config, tmp_path):
    path = tmp_path / "barrier_ids.ptx"
    path.write_text(PTX)
    e = Engine(config)
    e.load_ptx(path)
    return e


@pytest.mark.parametrize("config", CONFIGS)
def test_a_half_warp_split_across_two_barrier_ids_is_a_fault(config, tmp_path):
    e = engine(config, tmp_path)
    out = e.malloc(4 * 128)
    message = (r"^barrier deadlock in kernel 'split': warp 0 of block \(0,0,0\) reaches barrier 0 at "
               r"`bar\.sync 0` \([^ ]*barrier_ids\.ptx:19, pc \d+\) with lanes 0-15 only, "
               r"while lanes 16-31 are at "
               r"`bar\.sync 1` \([^ ]*barrier_ids\.ptx:16, pc \d+\), barrier 1; 'bar\.sync' is aligned: "
               r"every thread "
               r"of a warp must execute the same barrier instruction .*the hardware would hang")
    with pytest.raises(SimFault, match=message):
        e.launch("split", 1, 32, [out], timing=config is not None)
    # the engine stays usable: a valid kernel runs next
    e.launch("valid", 1, 128, [out], timing=config is not None)


@pytest.mark.parametrize("config", CONFIGS)
def test_a_barrier_id_that_differs_across_the_warp_is_a_fault(config, tmp_path):
    e = engine(config, tmp_path)
    message = (r"^barrier deadlock in kernel 'split_reg': warp 0 of block \(0,0,0\) executes `bar\.sync %r3` "
               r"\([^ ]*barrier_ids\.ptx:\d+, pc \d+\) with barrier 0 in lane 0 but barrier 1 in lane 16;")
    with pytest.raises(SimFault, match=message):
        e.launch("split_reg", 1, 32, [], timing=config is not None)


@pytest.mark.parametrize("config", CONFIGS)
def test_an_aligned_barrier_reached_by_part_of_a_warp_is_a_fault(config, tmp_path):
    e = engine(config, tmp_path)
    message = (r"^barrier deadlock in kernel 'guarded': warp 0 of block \(0,0,0\) reaches barrier 0 at "
               r"`@%p1 bar\.sync 0` \([^ ]*barrier_ids\.ptx:46, pc \d+\) with lanes 0, 2, 4, .*, 30 only, "
               r"while "
               r"lanes 1, 3, 5, .*, 31 skip it \(its guard is false for them\); 'bar\.sync' is aligned")
    with pytest.raises(SimFault, match=message):
        e.launch("guarded", 1, 64, [], timing=config is not None)


@pytest.mark.parametrize("config", CONFIGS)
def test_valid_barriers_still_run(config, tmp_path):
    e = engine(config, tmp_path)
    out = e.malloc(4 * 128)
    e.copy_to(out, np.zeros(128, np.uint32))
    e.launch("valid", 2, 128, [out], timing=config is not None)
    got = e.copy_from(out, (128,), np.uint32)
    want = np.where(np.arange(128) < 120, np.arange(128), 0).astype(np.uint32)
    np.testing.assert_array_equal(got, want)
    e.launch("unaligned", 3, 96, [], timing=config is not None)

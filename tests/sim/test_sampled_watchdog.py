"""max_cycles during a sampled launch's fast-forward (issue 46 item 6): the skipped CTAs run functionally
and add no simulated cycles while they run, so the watchdog is given the sampler's projection of the cycle
at which the CTAs skipped so far would have finished. A launch whose estimate passes max_cycles then stops
part-way through the fast-forward, within a fraction of a second of host time, instead of running every
block before its end-of-launch estimate is checked."""

from __future__ import annotations

import re
import time

import pytest

from stcsim.sim import Engine, WatchdogError

pytestmark = pytest.mark.sim_only

PTX = """.version 8.0
.target sm_80
.address_size 64

// `n` iterations of a three-instruction loop per thread: every block does the same work
.visible .entry work(.param .u32 n)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\tld.param.u32 %r1, [n];
\tmov.u32 %r2, 0;
$L_loop:
\tadd.u32 %r2, %r2, 1;
\tsetp.lt.u32 %p1, %r2, %r1;
\t@%p1 bra.uni $L_loop;
\tret;
}
"""

GRID, ITERS = 2**17, 40


def test_a_sampled_launch_past_max_cycles_stops_during_its_fast_forward():
    e = Engine("v100")
    e.load_ptx(PTX)
    start = time.perf_counter()
    stats = e.launch("work", GRID, 32, [ITERS], sample=0.02)
    full = time.perf_counter() - start
    assert stats["sample_mode"] == 1 and stats["sample_skipped_ctas"] > GRID // 2
    estimate = int(stats["kernel_cycles"])
    detailed = estimate - int(stats["sample_skipped_cycles"])
    limit = detailed + (estimate - detailed) // 10  # passed a tenth of the way through the fast-forward
    message = (rf"^watchdog: kernel 'work' exceeded max_cycles = {limit}: sampled simulation estimates "
               rf"(\d+) cycles by block \d+ of {GRID} \(its fast-forward stopped there after \d+ warp "
               r"instructions; the blocks after it did not run\)\nRaise the limit with Engine\(max_cycles=")
    start = time.perf_counter()
    with pytest.raises(WatchdogError, match=message) as info:
        e.launch("work", GRID, 32, [ITERS], sample=0.02, max_cycles=limit)
    stopped = time.perf_counter() - start
    projected = int(re.search(message, str(info.value)).group(1))
    assert limit < projected < estimate
    # before, the whole grid ran (`full`, 1.8 s on the 2-core development host) and the estimate was checked
    # at its end; now the detailed waves before the skip and a tenth of the fast-forward run (0.3 s)
    assert stopped < full / 2, (stopped, full)
    # the limit exactly at the estimate still runs to the end, with the same cycles
    assert e.launch("work", GRID, 32, [ITERS], sample=0.02, max_cycles=estimate)["kernel_cycles"] == estimate


def test_a_phase_sampled_launch_past_max_cycles_stops_in_its_fast_forwards():
    """Two waves of CTAs (sampled in time, not by waves): the loop is fast-forwarded in rounds, and the
    watchdog sees the cycle the estimate has reached (the fast-forwards' cycles counted), so a limit at a
    tenth of the estimate stops the launch about a tenth of the way (it ran 4.2 s of the 8.7 s launch
    before: the detailed clock alone lagged the estimate by the skipped cycles)."""
    e = Engine("v100")
    e.load_ptx(PTX)
    start = time.perf_counter()
    stats = e.launch("work", 160, 32, [200000], sample=0.02)
    full = time.perf_counter() - start
    assert stats["sample_mode"] == 6 and stats["sample_skipped_cycles"] > stats["kernel_cycles"] / 2
    limit = int(stats["kernel_cycles"]) // 10
    start = time.perf_counter()
    with pytest.raises(WatchdogError, match=rf"exceeded max_cycles = {limit} after (\d+) simulated cycles"):
        e.launch("work", 160, 32, [200000], sample=0.02, max_cycles=limit)
    assert time.perf_counter() - start < full / 4

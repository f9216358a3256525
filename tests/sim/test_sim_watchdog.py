"""The launch watchdog and Ctrl-C: a kernel that never ends is stopped, and the engine stays usable.

The spinning kernels run in a child process bounded in time, so a watchdog or an interrupt that fails
shows up as a failed test, not as a hung suite.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from stcsim.sim import DEFAULT_MAX_CYCLES, DEFAULT_MAX_WARP_INSTS, Engine, SimFault, WatchdogError

pytestmark = pytest.mark.sim_only

ROOT = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT_S = 120

# `spin`: warp 0 of each block waits at a barrier the other warps never reach; they spin on
# `$L: bra.uni $L;` (the form of issue 18).
# `axpy`: y = a * x + y, to check that the engine still works after a launch was stopped.
PTX = """.version 8.0
.target sm_80
.address_size 64

.visible .entry spin()
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<2>;
\tmov.u32 %r1, %tid.x;
\tsetp.ge.u32 %p1, %r1, 32;
\t@%p1 bra $L_spin;
\tbar.sync 0;
\tret;
$L_spin: bra.uni $L_spin;
}

.visible .entry axpy(.param .u64 x, .param .u64 y, .param .f32 a, .param .u32 n)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<6>;
\t.reg .f32 %f<5>;
\t.reg .b64 %rd<6>;
\tld.param.u64 %rd1, [x];
\tld.param.u64 %rd2, [y];
\tld.param.f32 %f1, [a];
\tld.param.u32 %r1, [n];
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r3, %ntid.x;
\tmov.u32 %r4, %tid.x;
\tmad.lo.s32 %r5, %r2, %r3, %r4;
\tsetp.ge.u32 %p1, %r5, %r1;
\t@%p1 bra $L_end;
\tmul.wide.u32 %rd3, %r5, 4;
\tadd.s64 %rd4, %rd1, %rd3;
\tadd.s64 %rd5, %rd2, %rd3;
\tld.global.f32 %f2, [%rd4];
\tld.global.f32 %f3, [%rd5];
\tmul.rn.f32 %f4, %f1, %f2;
\tadd.rn.f32 %f4, %f4, %f3;
\tst.global.f32 [%rd5], %f4;
$L_end:
\tret;
}
"""

# The child's helpers: `axpy_ok(engine, seed)` runs axpy on random inputs and compares with numpy.
CHILD_PRELUDE = """
import json, sys, time
import numpy as np
from stcsim.sim import Engine, SimFault, WatchdogError

PTX = open(sys.argv[1]).read()

def axpy_ok(e, seed):
    rng = np.random.default_rng(seed)
    n = 200
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a = np.float32(rng.standard_normal())
    px, py = e.malloc(4 * n), e.malloc(4 * n)
    e.copy_to(px, x)
    e.copy_to(py, y)
    e.launch("axpy", 2, 128, [px, py, a, n])
    return bool(np.array_equal(e.copy_from(py, n, np.float32), a * x + y))
"""

WATCHDOG_CHILD = CHILD_PRELUDE + """
out = {}
for config in (None, "h100"):
    e = Engine(config, max_cycles=40000)
    e.load_ptx(PTX)
    for limit in ({"max_warp_insts": 10000}, {}):  # (h100 spins about 15,000 in 40,000 cycles)
        if config is None and not limit:
            continue  # a functional launch has no cycles: only the instruction limit applies
        try:
            e.launch("spin", 3, 96, [], **limit)
            out[f"{config}-{limit}"] = "returned"
        except WatchdogError as exc:
            out[f"{config}-{limit}"] = [isinstance(exc, SimFault), str(exc)]
    out[f"{config}-axpy"] = axpy_ok(e, 7)
print(json.dumps(out))
"""

# A shell that starts the suite in the background leaves SIGINT ignored, and Python then installs no handler:
# the child restores the default one so that the interrupt is seen however the suite was started.
INTERRUPT_CHILD = CHILD_PRELUDE + """
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
for config in (None, "h100"):
    e = Engine(config, max_cycles=0, max_warp_insts=0)
    e.load_ptx(PTX)
    print("launching", flush=True)
    t0 = time.perf_counter()
    try:
        e.launch("spin", 3, 96, [])
        print("returned", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted {time.perf_counter() - t0:.3f}", flush=True)
    print("axpy", axpy_ok(e, 11), flush=True)
"""


def start_child(tmp_path: Path, script: str) -> subprocess.Popen[str]:
    """Starts `script` in a fresh interpreter with the test PTX as its argument."""
    ptx = tmp_path / "watchdog.ptx"
    ptx.write_text(PTX)
    return subprocess.Popen([sys.executable, "-c", script, str(ptx)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)


def finish(child: subprocess.Popen[str]) -> str:
    """The rest of the child's output; kills it (and fails) past CHILD_TIMEOUT_S."""
    try:
        out, err = child.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail(f"the child did not finish in {CHILD_TIMEOUT_S} s: the launch was not stopped")
    assert child.returncode == 0, err
    return out


def test_the_watchdog_stops_a_spinning_kernel(tmp_path):
    got = json.loads(finish(start_child(tmp_path, WATCHDOG_CHILD)))
    cases = {
        "None-{'max_warp_insts': 10000}": "max_warp_insts = 10000 after 10001 warp instructions",
        "h100-{'max_warp_insts': 10000}": "max_warp_insts = 10000 after",
        "h100-{}": "max_cycles = 40000 after 400",
    }
    for case, limit in cases.items():
        is_fault, msg = got[case]
        assert is_fault, case
        assert msg.startswith(f"watchdog: kernel 'spin' exceeded {limit}"), msg
        assert "(0 of 3 blocks completed)" in msg, msg
        assert "`bra.uni $L_spin`:" in msg and "waiting at barrier 0 to resume here" in msg, msg
        assert "block (0,0,0) warp 0" in msg and "block (0,0,0) warp 1" in msg, msg
    # the check runs at the first simulated cycle past the limit (an instruction-fetch wait may skip a few)
    stopped_at = int(re.search(r"after (\d+) simulated cycles", got["h100-{}"][1]).group(1))
    assert 40000 < stopped_at <= 40100
    # the timing model holds all three blocks: 6 spinning warps and 3 at the barrier
    assert "`bra.uni $L_spin`: 6 warps" in got["h100-{}"][1]
    assert "`ret`: 3 warps waiting at barrier 0" in got["h100-{}"][1]
    assert got["None-axpy"] is True and got["h100-axpy"] is True


def test_ctrl_c_interrupts_a_launch_and_the_engine_stays_usable(tmp_path):
    child = start_child(tmp_path, INTERRUPT_CHILD)
    assert child.stdout is not None
    latencies = []
    for mode in ("functional", "timing"):
        line = child.stdout.readline().strip()
        assert line == "launching", (mode, line, child.stderr.read() if child.poll() is not None else "")
        time.sleep(0.5)  # well inside the launch
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
        line = child.stdout.readline().strip()
        latencies.append(time.perf_counter() - sent)
        assert line.startswith("interrupted"), (mode, line)
        assert float(line.split()[1]) >= 0.4, "the interrupt must come from inside the launch"
        assert child.stdout.readline().strip() == "axpy True", mode
    finish(child)
    assert max(latencies) < 2.0, latencies  # the launch polls for signals every ~10 ms of host time


def test_the_limits_bound_the_counts_exactly(rng):
    e = Engine()
    e.load_ptx(PTX)
    n = 300
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    px, py = e.malloc(4 * n), e.malloc(4 * n)
    e.copy_to(px, x)
    e.copy_to(py, y)
    a = np.float32(rng.standard_normal())
    insts = int(e.launch("axpy", 3, 128, [px, py, a, n])["warp_insts"])
    e.launch("axpy", 3, 128, [px, py, a, n], max_warp_insts=insts)  # exactly the limit: runs to the end
    assert np.array_equal(e.copy_from(py, n, np.float32), a * x + (a * x + y))
    with pytest.raises(WatchdogError, match=f"exceeded max_warp_insts = {insts - 1} after {insts} warp"):
        e.launch("axpy", 3, 128, [px, py, a, n], max_warp_insts=insts - 1)


def test_a_timing_launch_within_its_cycle_limit_runs(rng):
    e = Engine("v100")
    e.load_ptx(PTX)
    n = 128
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    px, py = e.malloc(4 * n), e.malloc(4 * n)
    e.copy_to(px, x)
    e.copy_to(py, y)
    cycles = int(e.launch("axpy", 1, 128, [px, py, np.float32(1), n])["kernel_cycles"])
    e.launch("axpy", 1, 128, [px, py, np.float32(1), n], max_cycles=cycles)
    with pytest.raises(WatchdogError, match="exceeded max_cycles = 10 after 11 simulated cycles"):
        e.launch("axpy", 1, 128, [px, py, np.float32(1), n], max_cycles=10)
    assert issubclass(WatchdogError, SimFault)


def test_defaults_are_documented():
    e = Engine()
    assert (e.max_cycles, e.max_warp_insts) == (DEFAULT_MAX_CYCLES, DEFAULT_MAX_WARP_INSTS)
    assert (DEFAULT_MAX_CYCLES, DEFAULT_MAX_WARP_INSTS) == (10**9, 10**10)
    doc = (ROOT / "docs" / "errors.md").read_text()
    assert "| `max_cycles` | 1,000,000,000 |" in doc and "| `max_warp_insts` | 10,000,000,000 |" in doc

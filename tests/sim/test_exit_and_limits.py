"""Launches under faults (issue 46): interpreter exit during a launch on another thread, the shared memory
limit of launches without the timing model, and the max_ctas watchdog that bounds grids of many nearly empty
blocks (which neither max_cycles nor max_warp_insts bound in host time)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from stcsim.sim import Engine, LaunchError, WatchdogError
from stcsim.sim.engine import DEFAULT_MAX_CTAS

pytestmark = pytest.mark.sim_only

ROOT = Path(__file__).resolve().parents[2]
KiB = 1024


def ptx(target: str = "sm_80", static_shared: int = 0) -> str:
    """`spin` (never ends), `empty` (returns at once) and `smem` (`static_shared` bytes of .shared and the
    dynamic shared memory of the launch)."""
    shared = f"\t.shared .align 16 .b8 s[{static_shared}];\n\tmov.u64 %rd1, s;\n" if static_shared else ""
    return f""".version 8.0
.target {target}
.address_size 64

.extern .shared .align 16 .b8 dyn[];

.visible .entry spin()
{{
$L: bra.uni $L;
}}

.visible .entry empty()
{{
\tret;
}}

.visible .entry smem()
{{
\t.reg .b64 %rd<3>;
\tmov.u64 %rd2, dyn;
{shared}\tret;
}}
"""


# A launch that never ends (no watchdog limit) on a daemon thread; the main thread returns meanwhile.
EXIT_CHILD = """
import sys, threading, time
from stcsim.sim import Engine
config = None if sys.argv[2] == "none" else sys.argv[2]
e = Engine(config, max_cycles=0, max_warp_insts=0)
e.load_ptx(open(sys.argv[1]).read())
started = threading.Event()
def spin():
    started.set()
    try:
        e.launch("spin", 2, 64, [])
    except Exception as exc:  # SystemExit is no Exception: the thread ends quietly
        print("caught", type(exc).__name__, flush=True)
threading.Thread(target=spin, daemon=True).start()
started.wait()
time.sleep(0.3)
print("main exits", flush=True)
"""


@pytest.mark.parametrize("config", ["none", "v100"])
def test_exiting_while_a_launch_runs_on_another_thread_exits_cleanly(tmp_path, config):
    path = tmp_path / "k.ptx"
    path.write_text(ptx())
    start = time.monotonic()
    child = subprocess.run([sys.executable, "-c", EXIT_CHILD, str(path), config], capture_output=True,
                           text=True, cwd=ROOT, timeout=120)
    assert child.returncode == 0, (child.returncode, child.stderr)  # was -6 (SIGABRT)
    assert "terminate called" not in child.stderr and "Traceback" not in child.stderr, child.stderr
    assert child.stdout == "main exits\n"
    assert time.monotonic() - start < 60


def test_launches_without_a_config_have_the_targets_shared_memory_limit():
    cases = {"sm_70": 96 * KiB, "sm_75": 64 * KiB, "sm_80": 163 * KiB, "sm_86": 99 * KiB, "sm_90a": 227 * KiB}
    for target, limit in cases.items():
        e = Engine()
        e.load_ptx(ptx(target))
        e.launch("smem", 1, 32, [], limit)  # exactly the limit runs
        message = (rf"^kernel 'smem' needs {limit + 1} bytes of shared memory per block; {target[:5]} "
                   rf"\(its \.target; the engine has no config\) allows {limit}$")
        with pytest.raises(LaunchError, match=message):
            e.launch("smem", 1, 32, [], limit + 1)
    e = Engine()
    e.load_ptx(ptx("sm_80"))
    with pytest.raises(LaunchError, match="needs 1073741824 bytes of shared memory per block"):
        e.launch("smem", 1, 32, [], 2**30)


def test_static_shared_memory_counts_toward_the_limit():
    e = Engine()
    e.load_ptx(ptx("sm_80", static_shared=4 * KiB))
    e.launch("smem", 1, 32, [], 159 * KiB)
    with pytest.raises(LaunchError, match=f"needs {163 * KiB + 1} bytes"):
        e.launch("smem", 1, 32, [], 159 * KiB + 1)


def test_functional_launches_on_a_config_engine_obey_the_configs_limit():
    e = Engine("v100")
    e.load_ptx(ptx("sm_70"))
    e.launch("smem", 1, 32, [], 96 * KiB, timing=False)
    message = f"needs {96 * KiB + 1} bytes of shared memory per block; Tesla V100 allows {96 * KiB}$"
    with pytest.raises(LaunchError, match=message):
        e.launch("smem", 1, 32, [], 96 * KiB + 1, timing=False)


@pytest.mark.parametrize("config, sample", [(None, 0.0), ("v100", 0.0), ("v100", 0.02)])
def test_a_grid_past_max_ctas_is_stopped_at_once(config, sample):
    e = Engine(config)
    e.load_ptx(ptx())
    start = time.perf_counter()
    message = (r"^watchdog: kernel 'empty' exceeded max_ctas = 16777216: its grid \(2147483647,1,1\) has "
               r"2147483647 blocks; nothing was run\.\nRaise the limit with Engine\(max_ctas=\.\.\.\)")
    with pytest.raises(WatchdogError, match=message):
        e.launch("empty", 2**31 - 1, 32, [], sample=sample)
    assert time.perf_counter() - start < 1.0  # was ~10 minutes (timing) and ~40 s (sampled or functional)


def test_max_ctas_is_set_per_engine_and_per_launch():
    assert DEFAULT_MAX_CTAS == 2**24
    e = Engine("v100", max_ctas=6)
    e.load_ptx(ptx())
    assert e.launch("empty", (3, 2), 32, [])["grid_ctas"] == 6  # exactly the limit runs
    with pytest.raises(WatchdogError, match=r"exceeded max_ctas = 6: its grid \(7,1,1\) has 7 blocks"):
        e.launch("empty", 7, 32, [])
    assert e.launch("empty", 7, 32, [], max_ctas=0)["grid_ctas"] == 7  # 0: no limit
    with pytest.raises(WatchdogError, match=r"exceeded max_ctas = 2: its grid \(1,3,1\)"):
        e.launch("empty", (1, 3), 32, [], max_ctas=2)
    with pytest.raises(LaunchError, match="max_ctas"):
        e.launch("empty", 1, 32, [], max_ctas=-1)


def test_the_limits_and_host_times_are_documented():
    doc = (ROOT / "docs" / "errors.md").read_text()
    assert "| `max_ctas` | 16,777,216 |" in doc
    assert "Interpreter exit" in doc and "SystemExit" in doc
    assert "allows 166912" in doc

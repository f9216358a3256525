"""An `atom` whose result no instruction reads issues as ptxas's RED: the warp does not wait for it.

ptxas compiles `atom.global.add.u32 %r, [a], 1` with %r never read to `REDG.E.ADD` (the SASS of the
calibration suite's histogram_atomic, results/reference/h100_sass_atomics.txt; docs/calibration.md step 15),
which has no destination to wait for. A chain of such atomics to one address, all naming one
destination register as nvcc's loop does, costs the issue of each; executed as PTX (no ptxas-like lowering)
each waits for the one before (write after write on the register), as does a chain whose results are summed.
"""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sim.engine import Engine

N = 32

PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u64 out)
{{
  .reg .b32 %r<{regs}>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd2, [out];
  mov.u32 %r0, 0;
{body}
  st.global.u32 [%rd2], %r0;
  ret;
}}
"""


def kernel(use_results: bool) -> str:
    lines = []
    for i in range(N):
        dst = i + 1 if use_results else 1
        lines.append(f"  atom.global.add.u32 %r{dst}, [%rd1], 1;")
        if use_results:
            lines.append(f"  add.u32 %r0, %r0, %r{dst};")
    return PTX.format(regs=N + 2, body="\n".join(lines))


def run(use_results: bool, lowered: bool = True) -> tuple[int, float]:
    eng = Engine("h100", schedule_loads=lowered)
    eng.load_ptx(kernel(use_results))
    p, out = eng.malloc(4), eng.malloc(4)
    eng.copy_to(p, np.zeros(1, np.uint32))
    stats = eng.launch("k", 1, 1, [p, out])
    return int(eng.copy_from(p, 1, np.uint32)[0]), stats["gpu_sim_cycle"]


def test_unread_atomic_results_do_not_stall_the_warp():
    total_red, cycles_red = run(False)
    total_waw, cycles_waw = run(False, lowered=False)
    total_atom, cycles_atom = run(True)
    assert total_red == total_waw == total_atom == N  # the same updates every way
    # waiting for each result costs at least an L2 round trip per atomic; not waiting, far less
    assert cycles_atom - cycles_red > N * 100
    assert cycles_waw - cycles_red > N * 100


SHARED_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{{
  .shared .align 8 .b64 total;
  .reg .b32 %r<4>;
  .reg .b64 %rd<{regs}>;
  mov.u64 %rd1, total;
  st.shared.u64 [%rd1], 0;
  mov.u32 %r1, 1;
{body}
  ld.shared.u64 %rd0, [%rd1];
  cvt.u64.u32 %rd2, %r1;
  add.u64 %rd0, %rd0, %rd2;
  ld.param.u64 %rd2, [out];
  st.global.u64 [%rd2], %rd0;
  ret;
}}
"""
ALU = 64  # dependent integer adds after the atomics


def shared_cycles(atomics: int, alu: int) -> int:
    body = ["  atom.shared.add.u64 %rd3, [%rd1], 1;"] * atomics
    body += ["  add.u32 %r1, %r1, %r1;"] * alu
    eng = Engine("h100")
    eng.load_ptx(SHARED_PTX.format(regs=4, body="\n".join(body)))
    out = eng.malloc(8)
    stats = eng.launch("k", 1, 32, [out])
    assert int(eng.copy_from(out, 1, np.uint64)[0]) == 32 * atomics + (1 << alu) % (1 << 64) % (1 << 32)
    return int(stats["gpu_sim_cycle"])


def test_a_compare_and_swap_loop_holds_the_warp():
    """A shared u64 add is a load + compare-and-swap loop in SASS (ATOMS.CAST.SPIN) that the warp runs
    itself: its result unread, it is still no RED, and the warp's next instructions wait for the loop."""
    alone = shared_cycles(0, ALU) - shared_cycles(0, 0)
    after_atomics = shared_cycles(N, ALU) - shared_cycles(N, 0)
    assert alone > ALU * 2  # the chain costs its latency per add
    assert after_atomics == pytest.approx(alone, rel=0.1)

"""ptxas-like loop unrolling (engine/func/unroll.cc): every lane runs exactly the iterations it ran before.

Each kernel sums a[lane + 32 * i] over its loop, with a trip count of its own per lane (lanes leave the
unrolled body and the remainder loop at different iterations), and stores the sum, the induction register
and the last loaded value (a register each copy of the body renames: the loop must leave the last
iteration's value in it). The results must equal numpy's and the PTX order's (Engine(schedule_loads=False),
which neither unrolls nor schedules), and the loops the rule takes must be unrolled (their trip checks are
folded instructions).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.calibration.unroll_probe import probe_ptx, sass_loops
from stcsim.sim.engine import Engine

SASS = Path(__file__).resolve().parents[2] / "results" / "reference" / "h100_unroll_sass.csv"

# Loop control per form: setup (r4 = induction register from the lane's trips r1), the step and test, and
# the back-edge guard. Every form runs a lane's `trips` iterations.
FORMS = {
    # counter to zero, as nvcc writes unrolled loops
    "down_ne": ("mov.u32 %r4, %r1;", "add.s32 %r4, %r4, -1;\n  setp.ne.s32 %p2, %r4, 0;", "@%p2"),
    # k < n with a register bound
    "up_lt": ("mov.u32 %r4, 0;", "add.s32 %r4, %r4, 1;\n  setp.lt.s32 %p2, %r4, %r1;", "@%p2"),
    # the test before the step: it reads the old value
    "test_first": ("mov.u32 %r4, 1;", "setp.lt.s32 %p2, %r4, %r1;\n  add.s32 %r4, %r4, 1;", "@%p2"),
    # the back-edge taken on a false predicate
    "negated": ("mov.u32 %r4, 0;", "add.s32 %r4, %r4, 1;\n  setp.ge.s32 %p2, %r4, %r1;", "@!%p2"),
    # sub by 3 with an unsigned greater-than against an immediate
    "sub3_hi": ("mul.lo.u32 %r4, %r1, 3;", "sub.u32 %r4, %r4, 3;\n  setp.hi.u32 %p2, %r4, 0;", "@%p2"),
    # the bound on the left
    "bound_left": ("mov.u32 %r4, 0;", "add.s32 %r4, %r4, 2;\n  setp.gt.s32 %p2, %r5, %r4;", "@%p2"),
    # a 64-bit induction register
    "wide": ("cvt.u64.u32 %rd9, %r1;", "add.s64 %rd9, %rd9, -1;\n  setp.ne.s64 %p2, %rd9, 0;", "@%p2"),
    # a register step (grid-stride): not unrolled, still correct
    "reg_step": ("mov.u32 %r4, 0;", "add.s32 %r4, %r4, %r6;\n  setp.lt.s32 %p2, %r4, %r1;", "@%p2"),
}
UNROLLED = {"down_ne", "up_lt", "test_first", "negated", "sub3_hi", "bound_left", "wide"}


def kernel(form: str, nounroll: bool = False) -> str:
    setup, step, guard = FORMS[form]
    pragma = '.pragma "nounroll";\n  ' if nounroll else ""
    return f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 trips, .param .u64 out)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .f32 %f<6>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [trips];
  ld.param.u64 %rd3, [out];
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd4, %r3, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.global.u32 %r1, [%rd5];
  shl.b32 %r5, %r1, 1;
  mov.u32 %r6, 1;
  mov.u32 %r4, 7;
  add.s64 %rd6, %rd1, %rd4;
  mov.f32 %f1, 0f00000000;
  mov.f32 %f2, 0f00000000;
  {setup}
LOOP:
  {pragma}ld.global.f32 %f2, [%rd6];
  mul.f32 %f3, %f2, 0f3F000000;
  add.f32 %f1, %f1, %f3;
  add.s64 %rd6, %rd6, 128;
  {step}
  {guard} bra LOOP;
  mul.wide.u32 %rd7, %r3, 12;
  add.s64 %rd8, %rd3, %rd7;
  st.global.f32 [%rd8], %f1;
  st.global.u32 [%rd8+4], %r4;
  st.global.f32 [%rd8+8], %f2;
  ret;
}}
"""


def run(form: str, eng: Engine, a: np.ndarray, trips: np.ndarray, nounroll: bool = False):
    eng.load_ptx(kernel(form, nounroll))
    da, dt, do = eng.malloc(a.nbytes), eng.malloc(trips.nbytes), eng.malloc(32 * 12)
    eng.copy_to(da, a)
    eng.copy_to(dt, trips)
    stats = eng.launch("k", 1, 32, [da, dt, do])
    raw = eng.copy_from(do, 32 * 3, np.uint32).reshape(32, 3)
    return raw, stats


@pytest.mark.parametrize("form", sorted(FORMS))
def test_unrolled_loops_run_every_lane_s_iterations(form):
    rng = np.random.default_rng(7)
    trips = rng.integers(1, 23, size=32).astype(np.uint32)  # 1 .. 22: the unrolled body, the rest, both
    trips[:6] = [1, 2, 3, 4, 5, 8]
    a = rng.standard_normal(32 * 24).astype(np.float32)
    raw, stats = run(form, Engine("h100"), a, trips)
    plain, _ = run(form, Engine("h100", schedule_loads=False), a, trips)
    assert np.array_equal(raw, plain)
    for lane in range(32):
        n = int(trips[lane])
        vals = a[lane + 32 * np.arange(n)]
        acc = np.float32(0)
        for v in vals:
            acc = np.float32(acc + np.float32(v * np.float32(0.5)))
        assert raw[lane, 0] == acc.view(np.uint32)
        assert raw[lane, 2] == vals[-1].view(np.uint32)
    # the loops the rule takes are unrolled (their trip checks run as folded instructions); the same loop
    # under `.pragma "nounroll"` is not, with the same results
    kept, kept_stats = run(form, Engine("h100"), a, trips, nounroll=True)
    assert np.array_equal(kept, plain)
    assert (stats["folded_insts"] > kept_stats["folded_insts"]) == (form in UNROLLED)


def test_unrolling_hoists_loads_of_later_iterations():
    """With every lane running 64 iterations, the unrolled loop issues four iterations' loads at once:
    fewer cycles than the loop as written (one load latency per iteration)."""
    trips = np.full(32, 64, dtype=np.uint32)
    a = np.random.default_rng(9).standard_normal(32 * 64).astype(np.float32)
    _, unrolled = run("down_ne", Engine("h100"), a, trips)
    _, kept = run("down_ne", Engine("h100"), a, trips, nounroll=True)
    assert unrolled["gpu_sim_cycle"] < 0.6 * kept["gpu_sim_cycle"]


def test_the_rule_takes_the_loops_ptxas_unrolls():
    """Every probe loop of benchmarks/calibration/unroll_probe.py: the engine unrolls it exactly when ptxas
    did (results/reference/h100_unroll_sass.csv: a SASS loop with four times the body's loads)."""
    sass = pd.read_csv(SASS, comment="#")
    sass = sass[sass.file == "unroll_probe.ptx"]
    eng = Engine("h100")
    eng.load_ptx(probe_ptx())
    a, c = eng.malloc(1 << 16), eng.malloc(128)
    checked = 0
    for kernel, loops in sass.groupby("kernel"):
        body = int(re.match(r"loop_\w+?_b(\d+)", kernel).group(1))
        by_ptxas = loops.ldg.max() == 4 * 2 * body
        stats = eng.launch(kernel, 1, 32, [a, a, c, 9, 1])
        assert (stats["folded_insts"] > 0) == by_ptxas, kernel
        checked += 1
    assert checked == 45


def test_sass_loops_finds_backward_branches():
    """The probe's cuobjdump parser: a loop is a BRA to an earlier address (not the BRA to itself after
    EXIT)."""
    sass = """
        Function : k
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E R2, desc[UR4][R4.64] ;
        /*0020*/                   FFMA R3, R2, R2, R3 ;
        /*0030*/              @P0 BRA 0x10 ;
        /*0040*/                   EXIT ;
        /*0050*/                   BRA 0x50;
"""
    rows = sass_loops(sass, "f.ptx")
    assert len(rows) == 1
    assert rows[0]["kernel"] == "k" and rows[0]["sass_insts"] == 3 and rows[0]["ldg"] == 1
    assert rows[0]["ffma"] == 1 and rows[0]["loop_start"] == 0x10

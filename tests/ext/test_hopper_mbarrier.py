"""mbarrier (engine/ext/hopper): phases complete after the expected arrivals, try_wait.parity waits for the
phase, test_wait does not block, the returned state names the phase; misuse is an error."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from stcsim.sim import Engine, SimFault


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def phases_ptx(init: str = "mbarrier.init.shared::cta.b64 [%r2], %r9;") -> str:
    """Warps arrive one after another (lane 0 each, count `n`) over `rounds` phases; every lane adds its value
    to a shared accumulator before arriving and reads it after try_wait.parity: each phase's total is written
    by every thread, with test_wait's result before its own arrival and the state arrive returned."""
    return f"""
.version 8.7
.target sm_90a
.address_size 64
.visible .entry ph(.param .u64 vals, .param .u64 out, .param .u32 rounds)
{{
  .reg .pred %p<6>;
  .reg .b32 %r<30>;
  .reg .b64 %rd<12>;
  .shared .align 8 .b64 bar;
  .shared .align 4 .b32 acc[64];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, bar;
  mov.u32 %r3, acc;
  shr.u32 %r4, %r1, 5;
  and.b32 %r5, %r1, 31;
  mov.u32 %r8, %ntid.x;
  shr.u32 %r9, %r8, 5;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $SYNC;
  {init}
$SYNC:
  bar.sync 0;
  ld.param.u32 %r10, [rounds];
  ld.param.u64 %rd1, [vals];
  ld.param.u64 %rd2, [out];
  mov.u32 %r11, 0;
$ROUND:
  mul.lo.u32 %r12, %r11, %r8;
  add.u32 %r12, %r12, %r1;
  mul.wide.u32 %rd3, %r12, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r13, [%rd4];
  shl.b32 %r14, %r11, 2;
  add.u32 %r15, %r3, %r14;
  atom.shared.add.u32 %r16, [%r15], %r13;
  and.b32 %r17, %r11, 1;
  mbarrier.test_wait.parity.shared::cta.b64 %p2, [%r2], %r17;
  selp.u32 %r18, 1, 0, %p2;
  bar.warp.sync -1;
  setp.eq.u32 %p3, %r5, 0;
  @!%p3 bra $WAIT;
  mbarrier.arrive.shared::cta.b64 %rd5, [%r2];
  cvt.u32.u64 %r19, %rd5;
$WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r2], %r17;
  @!%p4 bra $WAIT;
  ld.shared.u32 %r20, [%r15];
  mul.lo.u32 %r21, %r12, 3;
  mul.wide.u32 %rd6, %r21, 4;
  add.s64 %rd7, %rd2, %rd6;
  st.global.u32 [%rd7], %r20;
  st.global.u32 [%rd7+4], %r18;
  @%p3 st.global.u32 [%rd7+8], %r19;
  add.u32 %r11, %r11, 1;
  setp.lt.u32 %p5, %r11, %r10;
  @%p5 bra $ROUND;
  ret;
}}
"""


def _run(rng: np.random.Generator, warps: int, rounds: int, config: str | None = None):
    eng = Engine(config)
    eng.load_ptx(phases_ptx())
    threads = 32 * warps
    vals = rng.integers(0, 1000, (rounds, threads), dtype=np.uint32)
    pv, po = eng.malloc(vals.nbytes), eng.malloc(rounds * threads * 12)
    eng.copy_to(pv, vals)
    eng.launch("ph", 1, threads, [pv, po, rounds])
    return vals, eng.copy_from(po, (rounds, threads, 3), np.uint32)


@pytest.mark.parametrize("config", [None, "h100"])
def test_each_phase_sees_every_arrival(rng: np.random.Generator, config: str | None) -> None:
    warps, rounds = int(rng.integers(2, 8)), int(rng.integers(3, 6))
    vals, out = _run(rng, warps, rounds, config)
    for r in range(rounds):
        assert (out[r, :, 0] == vals[r].sum()).all()  # try_wait returned after every warp's arrival
        assert (out[r, ::32, 2] == r % 2).all()        # arrive's state: the parity of the phase it joined
    assert (out[:, :, 1] == 0).all()                    # test_wait before the own arrival: never complete


def test_uninitialised_barrier_is_an_error(rng: np.random.Generator) -> None:
    eng = Engine()
    eng.load_ptx(phases_ptx(init=""))
    p = eng.malloc(4096)
    with pytest.raises(SimFault, match="not initialised"):
        eng.launch("ph", 1, 64, [p, p, 1])


def test_an_arrival_count_beyond_the_pending_arrivals_is_an_error() -> None:
    eng = Engine()
    eng.load_ptx("""
.version 8.7
.target sm_90a
.address_size 64
.visible .entry over()
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  .shared .align 8 .b64 bar;
  mov.u32 %r1, bar;
  mbarrier.init.shared::cta.b64 [%r1], 3;
  mbarrier.arrive.shared::cta.b64 %rd1, [%r1], 4;
  ret;
}
""")
    with pytest.raises(SimFault, match="arrival count 4 exceeds the 3 arrivals pending"):
        eng.launch("over", 1, 1, [])


# ---- the sm_80 forms (issue 46: ptxas accepts them under .target sm_80; the engine took sm_90 only) --------
def sm80_phases_ptx() -> str:
    """phases_ptx under .target sm_80 (PTX 8.0), waiting with bar.sync and then test_wait.parity (try_wait
    is sm_90; a test_wait spin loop needs the warps interleaved, which the functional engine does at
    barriers only): after the barrier every warp has arrived, so test_wait finds the phase complete."""
    text = phases_ptx().replace(".version 8.7\n.target sm_90a", ".version 8.0\n.target sm_80")
    old = "$WAIT:\n  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r2], %r17;\n  @!%p4 bra $WAIT;\n"
    assert old in text
    wait = "$WAIT:\n  bar.sync 0;\n  mbarrier.test_wait.parity.shared::cta.b64 %p4, [%r2], %r17;\n"
    wait += "  @!%p4 trap;\n"
    return text.replace(old, wait)


def test_the_sm80_forms_complete_each_phase(rng: np.random.Generator) -> None:
    warps, rounds = int(rng.integers(2, 6)), int(rng.integers(2, 5))
    eng = Engine()
    eng.load_ptx(sm80_phases_ptx())
    threads = 32 * warps
    vals = rng.integers(0, 1000, (rounds, threads), dtype=np.uint32)
    pv, po = eng.malloc(vals.nbytes), eng.malloc(rounds * threads * 12)
    eng.copy_to(pv, vals)
    eng.launch("ph", 1, threads, [pv, po, rounds], max_warp_insts=10**7)
    out = eng.copy_from(po, (rounds, threads, 3), np.uint32)
    for r in range(rounds):
        assert (out[r, :, 0] == vals[r].sum()).all()
        assert (out[r, ::32, 2] == r % 2).all()
    assert (out[:, :, 1] == 0).all()


DROP_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry drop(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .shared .align 8 .b64 bar;
  mov.u32 %r1, bar;
  ld.param.u64 %rd1, [out];
  mbarrier.init.shared.b64 [%r1], 3;
  mbarrier.arrive.noComplete.shared.b64 %rd2, [%r1], 2;
  mbarrier.test_wait.shared.b64 %p1, [%r1], %rd2;
  mbarrier.arrive_drop.shared.b64 %rd3, [%r1];
  mbarrier.test_wait.shared.b64 %p2, [%r1], %rd3;
  mbarrier.arrive.noComplete.shared.b64 %rd4, [%r1], 1;
  mbarrier.arrive.shared.b64 %rd5, [%r1];
  mbarrier.test_wait.shared.b64 %p3, [%r1], %rd5;
  selp.u32 %r2, 1, 0, %p1;
  selp.u32 %r3, 1, 0, %p2;
  selp.u32 %r4, 1, 0, %p3;
  cvt.u32.u64 %r5, %rd5;
  st.global.v4.u32 [%rd1], {%r2, %r3, %r4, %r5};
  ret;
}
"""


def test_arrive_drop_and_no_complete() -> None:
    """init 3; noComplete 2 (phase 0 open), arrive_drop (completes phase 0 and expects 2 from then on);
    noComplete 1 and arrive complete phase 1 with 2 arrivals: test_wait sees 0, 1, 1; the last state is
    phase 1's parity."""
    eng = Engine()
    eng.load_ptx(DROP_PTX)
    out = eng.malloc(16)
    eng.launch("drop", 1, 1, [out], max_warp_insts=10**6)
    assert eng.copy_from(out, 4, np.uint32).tolist() == [0, 1, 1, 1]


def test_a_no_complete_arrival_that_completes_the_phase_is_an_error() -> None:
    eng = Engine()
    eng.load_ptx(DROP_PTX.replace("[%r1], 2;", "[%r1], 3;"))
    with pytest.raises(SimFault, match="noComplete completes the current phase"):
        eng.launch("drop", 1, 1, [eng.malloc(16)])

"""Register compaction (engine/func/regalloc.h): the engine maps PTX's virtual registers onto as few slots as
are live at once. Values a thread can read never change: a loop-carried accumulator beside short-lived
temporaries, a register defined on both sides of a divergent branch, a guarded write that leaves the other
lanes' value, and a register read but never written (zero) - checked against numpy, functionally and on the
timing model. Registers only ever written under a guard keep zero in the other lanes, even where
temporaries that died just before left other values in the register file."""

import numpy as np
import pytest

from stcsim.sim import Engine

PTX = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry regs(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<4>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, 0;
  mov.u32 %r10, 0;
LOOP:
  add.u32 %r4, %r2, %r10;
  mul.lo.u32 %r5, %r4, 3;
  xor.b32 %r6, %r5, %r10;
  add.u32 %r3, %r3, %r6;
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p1, %r10, %r1;
  @%p1 bra LOOP;
  and.b32 %r12, %r2, 1;
  setp.eq.u32 %p2, %r12, 0;
  @%p2 bra EVEN;
  mul.lo.u32 %r11, %r3, 7;
  bra.uni JOIN;
EVEN:
  add.u32 %r11, %r3, 5;
JOIN:
  add.u32 %r13, %r2, 101;
  add.u32 %r14, %r13, 102;
  add.u32 %r15, %r14, 103;
  add.u32 %r16, %r15, 104;
  add.u32 %r17, %r13, %r14;
  add.u32 %r17, %r17, %r15;
  add.u32 %r17, %r17, %r16;
  setp.lt.u32 %p3, %r2, 8;
  @%p3 mov.u32 %r11, 1000;
  @%p3 mov.u32 %r20, 77;
  @%p3 mov.u32 %r21, 78;
  @%p3 mov.u32 %r22, 79;
  @%p3 mov.u32 %r23, 80;
  mul.wide.u32 %rd2, %r2, 28;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r11;
  st.global.u32 [%rd3+4], %r30;
  st.global.u32 [%rd3+8], %r17;
  st.global.u32 [%rd3+12], %r20;
  st.global.u32 [%rd3+16], %r21;
  st.global.u32 [%rd3+20], %r22;
  st.global.u32 [%rd3+24], %r23;
  ret;
}
"""


def expected(threads: int, n: int) -> np.ndarray:
    """What each thread stores: its branch-dependent result (1000 below thread 8), a zero, the sum of four
    temporaries, and four registers written only below thread 8 (77..80; zero elsewhere)."""
    tid = np.arange(threads, dtype=np.uint64)
    acc = np.zeros(threads, dtype=np.uint64)
    for i in range(n):
        acc = (acc + ((((tid + i) * 3) & 0xFFFFFFFF) ^ i)) & 0xFFFFFFFF
    r11 = np.where(tid % 2 == 0, acc + 5, acc * 7) & 0xFFFFFFFF
    r11 = np.where(tid < 8, 1000, r11)
    steps = [tid + 101, *(np.full(threads, v, dtype=np.uint64) for v in (102, 103, 104))]
    temps = np.cumsum(steps, axis=0)
    guarded = [np.where(tid < 8, v, 0) for v in (77, 78, 79, 80)]
    words = [r11, np.zeros(threads, dtype=np.uint64), temps.sum(axis=0), *guarded]
    return np.stack(words, axis=1).astype(np.uint32)


@pytest.mark.parametrize("config", [None, "v100"], ids=["functional", "v100"])
def test_compacted_registers_keep_every_value(config):
    n = int(np.random.default_rng().integers(3, 40))
    eng = Engine(config)
    eng.load_ptx(PTX)
    threads = 96
    out = eng.malloc(threads * 28)
    eng.copy_to(out, np.full(threads * 7, 0xDEADBEEF, np.uint32))  # poisoned: every word must be written
    eng.launch("regs", 1, threads, [out, np.uint32(n)])
    got = eng.copy_from(out, (threads, 7), np.uint32)
    np.testing.assert_array_equal(got, expected(threads, n))


WIDTHS_PTX = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry widths(.param .u64 in, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b16 %h<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<24>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v2.u64 {%rd5, %rd6}, [%rd4];
  xor.b64 %rd7, %rd5, %rd6;
  add.s64 %rd8, %rd7, %rd5;
  mov.b64 {%r2, %r3}, %rd8;
  add.u32 %r4, %r2, %r3;
  cvt.u32.u64 %r5, %rd6;
  cvt.u16.u32 %h1, %r5;
  cvt.u32.u16 %r6, %h1;
  mov.b64 %rd9, {%r4, %r6};
  shl.b64 %rd10, %rd5, 3;
  and.b32 %r7, %r1, 3;
  setp.eq.u32 %p1, %r7, 1;
  @%p1 add.s64 %rd10, %rd10, %rd6;
  setp.lt.u64 %p2, %rd5, %rd6;
  selp.b64 %rd11, %rd9, %rd10, %p2;
  mul.wide.u32 %rd12, %r1, 32;
  add.s64 %rd13, %rd2, %rd12;
  st.global.v2.u64 [%rd13], {%rd9, %rd10};
  st.global.v2.u64 [%rd13+16], {%rd11, %rd8};
  ret;
}
"""


def widths_expected(x: np.ndarray) -> np.ndarray:
    """What each thread stores from its two 64-bit inputs a, b (numpy's uint64 arithmetic wraps as PTX's)."""
    a, b = x[:, 0], x[:, 1]
    m32 = np.uint64(0xFFFFFFFF)
    s = (a ^ b) + a
    r4 = ((s & m32) + (s >> np.uint64(32))) & m32
    r6 = b & np.uint64(0xFFFF)
    rd9 = r4 | (r6 << np.uint64(32))
    tid = np.arange(len(a))
    rd10 = (a << np.uint64(3)) + np.where(tid % 4 == 1, b, np.uint64(0))
    rd11 = np.where(a < b, rd9, rd10)
    return np.stack([rd9, rd10, rd11, s], axis=1)


@pytest.mark.parametrize("config", [None, "v100"], ids=["functional", "v100"])
def test_registers_of_both_widths_keep_their_values(config, rng):
    """32-bit and 64-bit registers live in files of their own lane width (regalloc.h): 64-bit values with
    their high bits set, packed into and unpacked from 32-bit halves, truncated through 32 and 16 bits, and
    a 64-bit register written under a divergent guard, against numpy."""
    eng = Engine(config)
    eng.load_ptx(WIDTHS_PTX)
    threads = 64
    x = rng.integers(0, np.iinfo(np.uint64).max, size=(threads, 2), dtype=np.uint64, endpoint=True)
    src, out = eng.malloc(x.nbytes), eng.malloc(threads * 32)
    eng.copy_to(src, x)
    eng.copy_to(out, np.full(threads * 4, 0xDEADBEEFDEADBEEF, np.uint64))
    eng.launch("widths", 1, threads, [src, out])
    got = eng.copy_from(out, (threads, 4), np.uint64)
    np.testing.assert_array_equal(got, widths_expected(x))

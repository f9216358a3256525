"""Global atomics at the L2 slice's atomic unit (l2.atomic_update_cycles, measured on the H100 in
results/reference/h100_probe_atomics.csv): N lanes on one address cost N update rounds, lanes on distinct
words of one sector share a round, and every lane's update lands in memory."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.config import load_config
from stcsim.sim import Engine

# One warp runs `iters` atomics in a dependent chain (the next address depends on the old value) on word
# (tid % mod) * scale of `buf`.
CHAIN = """
.version 7.0
.target sm_70
.address_size 64
.visible .entry chain(.param .u64 buf, .param .u32 mod, .param .u32 scale, .param .u32 iters)
{
  .reg .u32 %r<10>;
  .reg .u64 %rd<4>;
  .reg .pred %p;
  ld.param.u64 %rd1, [buf];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u32 %r1, [mod];
  ld.param.u32 %r2, [scale];
  ld.param.u32 %r9, [iters];
  mov.u32 %r3, %tid.x;
  rem.u32 %r4, %r3, %r1;
  mul.lo.u32 %r4, %r4, %r2;
  mov.u32 %r5, 0;
  mov.u32 %r6, 0;
LOOP:
  add.u32 %r7, %r4, %r6;
  mul.wide.u32 %rd2, %r7, 4;
  add.u64 %rd3, %rd1, %rd2;
  atom.global.add.u32 %r8, [%rd3], 1;
  and.b32 %r6, %r8, 0;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p, %r5, %r9;
  @%p bra LOOP;
  ret;
}
"""
ITERS = 24
WORDS = 32 * 8


def run_chain(config: str, mod: int, scale: int, rng: np.random.Generator) -> float:
    """Cycles of the chain on `config`, after checking every update landed (numpy)."""
    eng = Engine(config)
    eng.load_ptx(CHAIN)
    init = rng.integers(0, 1 << 20, WORDS).astype(np.uint32)
    buf = eng.malloc(init.nbytes)
    eng.copy_to(buf, init)
    stats = eng.launch("chain", 1, 32, [buf, mod, scale, ITERS])
    want = init.copy()
    np.add.at(want, (np.arange(32) % mod) * scale, ITERS)
    np.testing.assert_array_equal(eng.copy_from(buf, WORDS, np.uint32), want)
    return float(stats["gpu_sim_cycle"])


@pytest.mark.parametrize("config", ["h100", "v100"])
def test_same_address_lanes_serialise_and_distinct_words_share_rounds(config: str) -> None:
    rng = np.random.default_rng()
    interval = float(load_config(config).flat()["l2.atomic_update_cycles"])
    same_word = run_chain(config, 1, 1, rng)         # 32 lanes on one word: 32 rounds
    two_words = run_chain(config, 2, 1, rng)         # 2 words of one sector, 16 lanes each: 16 rounds
    eight_words = run_chain(config, 8, 1, rng)       # 8 words of one sector, 4 lanes each: 4 rounds
    # one sector each: per atomic of the chain, the rounds x the interval (each completion rounded up)
    assert (same_word - eight_words) / ITERS == pytest.approx(28 * interval, abs=2.0)
    assert (two_words - eight_words) / ITERS == pytest.approx(12 * interval, abs=2.0)


# Every thread adds 1 to `iters` words (gtid + j * threads) * stride: with stride 8 each lane its own sector.
SPREAD = """
.version 7.0
.target sm_70
.address_size 64
.visible .entry spread(.param .u64 buf, .param .u32 iters, .param .u32 stride)
{
  .reg .u32 %r<12>;
  .reg .u64 %rd<4>;
  .reg .pred %p;
  ld.param.u64 %rd1, [buf];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u32 %r1, [iters];
  ld.param.u32 %r2, [stride];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.u32 %r6, %r3, %r4, %r5;
  mov.u32 %r7, %nctaid.x;
  mul.lo.u32 %r7, %r7, %r4;
  mov.u32 %r8, 0;
LOOP:
  mad.lo.u32 %r9, %r8, %r7, %r6;
  mul.lo.u32 %r9, %r9, %r2;
  mul.wide.u32 %rd2, %r9, 4;
  add.u64 %rd3, %rd1, %rd2;
  red.global.add.u32 [%rd3], 1;
  add.u32 %r8, %r8, 1;
  setp.lt.u32 %p, %r8, %r1;
  @%p bra LOOP;
  ret;
}
"""


def spread_cycles(config: str, ctas: int, iters: int, rng: np.random.Generator) -> float:
    """Cycles of SPREAD (each lane its own sector) after checking every update landed (numpy)."""
    eng = Engine(config)
    eng.load_ptx(SPREAD)
    threads = ctas * 256
    init = rng.integers(0, 1 << 20, threads * iters * 8).astype(np.uint32)
    buf = eng.malloc(init.nbytes)
    eng.copy_to(buf, init)
    stats = eng.launch("spread", ctas, 256, [buf, iters, 8])
    want = init.copy()
    want[::8] += 1
    np.testing.assert_array_equal(eng.copy_from(buf, init.size, np.uint32), want)
    return float(stats["gpu_sim_cycle"])


def test_all_slices_together_take_at_most_the_gpu_wide_rounds() -> None:
    # h100: one round per lane, spread over every slice: the GPU-wide l2.atomic_rounds_per_cycle binds
    # (80 slices / 1.454 cycles would take 55 rounds per cycle)
    rng = np.random.default_rng()
    cap = float(load_config("h100").flat()["l2.atomic_rounds_per_cycle"])
    ctas = 264
    rounds = ctas * 256 * 8
    rate = rounds / (spread_cycles("h100", ctas, 12, rng) - spread_cycles("h100", ctas, 4, rng))
    assert cap * 0.85 <= rate <= cap * 1.001


def test_lines_of_one_interleave_unit_share_a_slice() -> None:
    # 32 warps on two words (16 each, 32 rounds per warp atomic): 128 B apart (one 256 B interleave unit
    # on h100: one slice, one atomic unit) the slice takes all 32 warps' rounds in turn; 1 MiB apart, two
    # slices take 16 warps' each side by side
    rng = np.random.default_rng()
    interval = float(load_config("h100").flat()["l2.atomic_update_cycles"])
    one_unit = run_chain_warps("h100", 32, rng)
    apart = run_chain_warps("h100", 1 << 18, rng)
    assert (one_unit - apart) / ITERS == pytest.approx(16 * 32 * interval, rel=0.15)


def run_chain_warps(config: str, scale: int, rng: np.random.Generator) -> float:
    """CHAIN with 32 warps: warp w's 32 lanes all on word (w % 2) * scale."""
    eng = Engine(config)
    eng.load_ptx(CHAIN.replace("mov.u32 %r3, %tid.x;", "mov.u32 %r3, %tid.x;\n  shr.u32 %r3, %r3, 5;"))
    words = scale + 8
    init = rng.integers(0, 1 << 20, words).astype(np.uint32)
    buf = eng.malloc(init.nbytes)
    eng.copy_to(buf, init)
    stats = eng.launch("chain", 1, 1024, [buf, 2, scale, ITERS])
    want = init.copy()
    want[0] += 512 * ITERS
    want[scale] += 512 * ITERS
    np.testing.assert_array_equal(eng.copy_from(buf, words, np.uint32), want)
    return float(stats["gpu_sim_cycle"])

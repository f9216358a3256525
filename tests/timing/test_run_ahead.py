"""The run-ahead loop (full detail: each SM runs on while it touches only its own state) against the lockstep
loop (every SM's cycle t before any SM's cycle t + 1), which `Engine(..., lockstep=True)` selects: every
statistic and every output bit-identical, on grids that fill the GPU with CTAs contending for L2 and DRAM,
with more CTAs than fit at once (dispatch in the lockstep order), irregular CTAs, extensions' instructions
(TMA, ordered; wgmma, mbarrier, SHMMA and wmma.smma.L, SM-local), a chain of atomic exchanges whose result is
the GPU-wide order of its atomics, and the whole stats-golden collection."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stcsim.harness.kernel_choice import num_sms
from stcsim.kernels import GemmProblem, get_kernel, run_gemm
from stcsim.kernels.verify import random_operands
from stcsim.sim import Engine, LaunchError
from tests.timing import stats_golden

# (kernel, pattern, sparsity, config, problem): on each, more CTAs than the GPU holds at once
CASES = (
    ("gemm_wmma_global_f16_f32_tile32x32x16_warp16x16", "dense", 0.0, "v100", GemmProblem(1024, 768, 32)),
    ("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", "dense", 0.0, "h100", GemmProblem(1600, 1408, 16)),
    ("spmm_csr_f32_f32_tile4x64_warp1x64", "unstructured", 0.7, "v100", GemmProblem(2048, 128, 96)),
    ("gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2", "dense", 0.0, "h100", GemmProblem(2048, 1536, 32)),
    ("gemm_wgmma_f16_f32_tile128x128x64_stage4", "dense", 0.0, "h100", GemmProblem(2048, 2304, 64)),
    ("gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32", "vw:L=16,K=4", 0.75, "v100+stc",
     GemmProblem(1536, 1536, 64)),
    ("spmm_extensor_l32_f16_f32_tile32x32_warp16x16", "extensor", 0.75, "titanv+extensor",
     GemmProblem(1024, 768, 64)),
)


# Every thread swaps its global id into one cell after a CTA-dependent delay and keeps what it took out: the
# output is the order in which the GPU's atomics reached the cell.
EXCHANGE_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry chain(.param .u64 cell, .param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [cell];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r1, %r2, %r3;
  rem.u32 %r6, %r1, 7;
DELAY:
  setp.eq.u32 %p1, %r6, 0;
  @%p1 bra SWAP;
  sub.u32 %r6, %r6, 1;
  bra.uni DELAY;
SWAP:
  atom.global.exch.b32 %r5, [%rd1], %r4;
  mul.wide.u32 %rd3, %r4, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r5;
  ret;
}
"""


def _exchange(config: str, lockstep: bool) -> tuple[np.ndarray, dict]:
    ctas, threads = 600, 64
    e = Engine(config, lockstep=lockstep)
    e.load_ptx(EXCHANGE_PTX)
    cell, out = e.malloc(4), e.malloc(4 * ctas * threads)
    e.copy_to(cell, np.array([0xFFFFFFFF], np.uint32))
    stats = e.launch("chain", ctas, threads, [cell, out])
    taken = e.copy_from(out, ctas * threads, np.uint32)
    return np.concatenate([taken, e.copy_from(cell, 1, np.uint32)]), stats


@pytest.mark.parametrize("config", ["v100", "h100"])
def test_atomics_reach_memory_in_the_lockstep_order(config):
    got_ahead, stats_ahead = _exchange(config, False)
    got_lock, stats_lock = _exchange(config, True)
    # a chain: every id and the cell's first value exactly once (what each swap took out, and the last in)
    ids = np.append(np.arange(got_ahead.size - 1), 0xFFFFFFFF).astype(np.uint32)
    assert np.array_equal(np.sort(got_ahead), ids)
    assert np.array_equal(got_ahead, got_lock)
    assert stats_ahead == stats_lock


def _run(case: tuple, lockstep: bool) -> tuple[np.ndarray, dict]:
    kernel, pattern, sparsity, config, p = case
    a, b = random_operands(p, np.random.default_rng(5))
    engine = Engine(config, lockstep=lockstep)
    return run_gemm(get_kernel(kernel), engine, a, b, pattern=pattern, sparsity=sparsity)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0].split('_f')[0]}-{c[3]}" for c in CASES])
def test_run_ahead_matches_lockstep(case):
    out_ahead, stats_ahead = _run(case, False)
    out_lock, stats_lock = _run(case, True)
    assert stats_ahead["grid_ctas"] > stats_ahead["max_ctas_per_sm"] * num_sms(case[3])  # CTAs wait for room
    assert np.array_equal(out_ahead.view(np.uint32), out_lock.view(np.uint32))
    assert stats_ahead == stats_lock


def test_lockstep_matches_the_golden_stats():
    now = stats_golden.collect(lockstep=True)
    diff = stats_golden.differences(json.loads(stats_golden.GOLDEN.read_text()), now)
    assert not diff, "\n".join(diff[:20])


@pytest.mark.parametrize("bad", [1, 0, "yes", None])
def test_lockstep_must_be_a_bool(bad):
    with pytest.raises(LaunchError, match="lockstep"):
        Engine("h100", lockstep=bad)

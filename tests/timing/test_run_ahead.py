"""The run-ahead loop (full detail: each SM runs on while it touches only its own state) against the lockstep
loop (every SM's cycle t before any SM's cycle t + 1), which STCSIM_LOCKSTEP selects: every statistic and
every output bit-identical, on grids that fill the GPU with CTAs contending for L2 and DRAM, with more
CTAs than fit at once (dispatch in the lockstep order), irregular CTAs, extensions' instructions (wgmma,
TMA) and the whole stats-golden collection."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stcsim.harness.kernel_choice import num_sms
from stcsim.kernels import GemmProblem, get_kernel, run_gemm
from stcsim.kernels.verify import random_operands
from stcsim.sim import Engine
from tests.timing import stats_golden

# (kernel, pattern, sparsity, config, problem): on each, more CTAs than the GPU holds at once
CASES = (
    ("gemm_wmma_global_f16_f32_tile32x32x16_warp16x16", "dense", 0.0, "v100", GemmProblem(1024, 768, 32)),
    ("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", "dense", 0.0, "h100", GemmProblem(1600, 1408, 16)),
    ("spmm_csr_f32_f32_tile4x64_warp1x64", "unstructured", 0.7, "v100", GemmProblem(2048, 128, 96)),
    ("gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2", "dense", 0.0, "h100", GemmProblem(2048, 1536, 32)),
    ("gemm_wgmma_f16_f32_tile128x128x64_stage4", "dense", 0.0, "h100", GemmProblem(2048, 2304, 64)),
)


def _run(case: tuple, lockstep: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, dict]:
    kernel, pattern, sparsity, config, p = case
    if lockstep:
        monkeypatch.setenv("STCSIM_LOCKSTEP", "1")
    else:
        monkeypatch.delenv("STCSIM_LOCKSTEP", raising=False)
    a, b = random_operands(p, np.random.default_rng(5))
    return run_gemm(get_kernel(kernel), Engine(config), a, b, pattern=pattern, sparsity=sparsity)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0].split('_f')[0]}-{c[3]}" for c in CASES])
def test_run_ahead_matches_lockstep(case, monkeypatch):
    out_ahead, stats_ahead = _run(case, False, monkeypatch)
    out_lock, stats_lock = _run(case, True, monkeypatch)
    assert stats_ahead["grid_ctas"] > stats_ahead["max_ctas_per_sm"] * num_sms(case[3])  # CTAs wait for room
    assert np.array_equal(out_ahead.view(np.uint32), out_lock.view(np.uint32))
    assert stats_ahead == stats_lock


def test_lockstep_matches_the_golden_stats(monkeypatch):
    monkeypatch.setenv("STCSIM_LOCKSTEP", "1")
    diff = stats_golden.differences(json.loads(stats_golden.GOLDEN.read_text()), stats_golden.collect())
    assert not diff, "\n".join(diff[:20])

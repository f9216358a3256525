"""The sampler's stated error (`sample_error_estimate`) against full detail, issue 48 item 2: every
fast-forward is charged with the largest deviation from its pace the loop showed in detail, a long loop is
measured again between fast-forwards, and a loop whose iteration periods still drift one way is not taken
for steady (the sampler stays in detail until they fluctuate)."""

import numpy as np

from stcsim.kernels import GemmProblem, get_kernel, random_operands
from stcsim.kernels.protocol import as_pattern
from stcsim.kernels.run import launch
from stcsim.sim import Engine
from stcsim.tools.sampling_bench import SAMPLE_TOLERANCE, measure_gemm

MMA = "gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3"


def test_a_pipelines_settling_iterations_are_not_extrapolated():
    """ResNet-50 layer1.0.conv2 (64x3136x576, 25 CTAs of 18 k-tiles) on h100 mma.sync: the loop's first
    windows agreed within the tolerance while their period still fell (1,123 -> 1,105 -> 1,103 cycles) and the
    fast-forward from them came out +1.18 % against an estimate of 0.93 %. A drifting triple is no steady
    phase now, and the error is within the stated estimate."""
    row = measure_gemm(MMA, (64, 3136, 576), "h100")  # also checks the output is bit-identical
    assert row.mode == "loop fast-forwarded"
    assert 0 < row.error_estimate and abs(row.error) <= row.error_estimate


def test_a_long_loop_is_measured_again_between_fast_forwards():
    """300 k-tiles on one CTA: a fast-forward runs at most kMaxRounds (16) iterations before detail resumes
    and measures the pace again, and the estimate charges the skipped cycles at least the tolerance."""
    k = get_kernel(MMA)
    operands = k.prepare(*random_operands(GemmProblem(128, 128, 32 * 300), np.random.default_rng(1)),
                         as_pattern("dense"), 0.0)
    out_s, sampled = launch(k, Engine("h100"), operands, SAMPLE_TOLERANCE)
    out_f, full = launch(k, Engine("h100"), operands, 0.0)
    np.testing.assert_array_equal(out_s, out_f)
    assert sampled["sample_mode"] == 6 and sampled["sample_ffwd_count"] >= 2
    assert sampled["sample_ffwd_iterations"] <= 16 * 4 * sampled["sample_ffwd_count"]  # 4 warps, <= 16 rounds
    skipped = sampled["sample_skipped_cycles"] / sampled["gpu_sim_cycle"]
    assert skipped > 0.5 and sampled["sample_error_estimate"] >= SAMPLE_TOLERANCE * skipped * (1 - 1e-9)
    error = abs(sampled["gpu_sim_cycle"] - full["gpu_sim_cycle"]) / full["gpu_sim_cycle"]
    assert error <= sampled["sample_error_estimate"]


def test_a_loop_that_never_stops_settling_falls_back_to_full_detail():
    """ResNet-50 layer1.1.conv1 (64x3136x256, 8 k-tiles) on h100 mma.sync: its windows' periods still fell one
    way when the loop ended; fast-forwarded from them it came out +0.17 % against a stated 0.15 %. With no
    non-monotone triple the sampler stays in detail: the same cycles as full detail. (Since the L1 data
    stage of issue 43's step 25 its windows settle and it is fast-forwarded, +0.17 % against a stated 1.2 %:
    either way the estimate holds.)"""
    row = measure_gemm(MMA, (64, 3136, 256), "h100")
    if row.mode == "full: no steady loop":
        assert row.sampled_cycles == row.full_cycles and row.error_estimate == 0
    else:
        assert row.mode == "loop fast-forwarded"
        assert abs(row.sampled_cycles - row.full_cycles) / row.full_cycles <= row.error_estimate

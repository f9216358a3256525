"""Sampled simulation (launch(..., sample=tol)): complete outputs, cycles within the tolerance of full
detail on a regular grid, and full detail (said in the stats) where CTAs differ or the grid is too small."""

import numpy as np
import pytest

from stcsim.sim import Engine, LaunchError

# Each thread sums `n + (ctaid % skew)` values of `x` (x[i] * (j + 1)) into out[gid]: skew 1 gives every CTA
# the same work, a larger skew makes the CTAs differ.
PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry loop_sum(.param .u64 x, .param .u64 out, .param .u32 n, .param .u32 skew)
{
  .reg .b32 %r<12>;
  .reg .f32 %f<6>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r2, [skew];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  rem.u32 %r7, %r3, %r2;
  add.s32 %r1, %r1, %r7;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  mov.f32 %f2, 0f00000000;
  mov.u32 %r8, 0;
LOOP:
  add.s32 %r8, %r8, 1;
  cvt.rn.f32.u32 %f3, %r8;
  fma.rn.f32 %f2, %f1, %f3, %f2;
  setp.lt.u32 %p1, %r8, %r1;
  @%p1 bra LOOP;
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f2;
  ret;
}
"""
BLOCK = 128
ONE_CTA_PER_SM = 160 * 1024  # dynamic shared memory that leaves room for one CTA per SM (waves of 80 on v100)


def run(ctas: int, n: int, skew: int, sample: float) -> tuple[np.ndarray, np.ndarray, dict]:
    eng = Engine("v100")
    eng.load_ptx(PTX)
    x = np.random.default_rng().uniform(0.5, 1.5, ctas * BLOCK).astype(np.float32)
    px, pout = eng.malloc(x.nbytes), eng.malloc(x.nbytes)
    eng.copy_to(px, x)
    stats = eng.launch("loop_sum", ctas, BLOCK, [px, pout, n, skew], shared_bytes=ONE_CTA_PER_SM // 2,
                       sample=sample)
    return x, eng.copy_from(pout, (ctas * BLOCK,), np.float32), stats


def expected(x: np.ndarray, n: int, skew: int) -> np.ndarray:
    iters = n + (np.arange(x.size) // BLOCK) % skew
    return (x.astype(np.float64) * iters * (iters + 1) / 2).astype(np.float32)


def test_a_regular_grid_is_sampled_within_its_tolerance_and_every_output_is_computed():
    x, out, stats = run(1600, 24, 1, 0.02)
    _, _, full = run(1600, 24, 1, 0.0)
    np.testing.assert_allclose(out, expected(x, 24, 1), rtol=1e-5)
    assert stats["sample_mode"] == 1 and stats["sample_skipped_ctas"] > 0
    assert stats["warp_insts"] == full["warp_insts"]  # the skipped CTAs still ran
    error = abs(stats["gpu_sim_cycle"] - full["gpu_sim_cycle"]) / full["gpu_sim_cycle"]
    assert error <= 0.02 and 0 < stats["sample_error_estimate"] <= 0.02
    assert "sample_mode" not in full  # the sampling group is reported only when asked for


def test_ctas_that_differ_fall_back_to_full_detail():
    x, out, stats = run(1600, 24, 3, 0.02)
    _, _, full = run(1600, 24, 3, 0.0)
    np.testing.assert_allclose(out, expected(x, 24, 3), rtol=1e-5)
    assert stats["sample_mode"] == 3 and stats["sample_skipped_ctas"] == 0
    assert stats["gpu_sim_cycle"] == full["gpu_sim_cycle"]


def test_a_grid_of_few_waves_skips_no_wave_and_samples_its_loop_instead():
    _, _, stats = run(200, 8, 1, 0.02)
    # the loop inside the wave: tests/sim/test_sim_phase_sampling.py
    assert stats["sample_mode"] in (6, 7) and stats["sample_skipped_ctas"] == 0


@pytest.mark.parametrize("bad", [-0.1, 1.0, float("nan"), "0.1", True])
def test_a_bad_tolerance_is_a_launch_error(bad):
    eng = Engine("v100")
    eng.load_ptx(PTX)
    with pytest.raises(LaunchError, match="sample"):
        eng.launch("loop_sum", 1, 32, [0, 0, 1, 1], sample=bad)

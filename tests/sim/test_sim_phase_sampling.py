"""Intra-launch time sampling (launch(..., sample=tol) on a grid of few waves, engine/timing/phase.h): the
steady iterations of a GEMM's main loop are fast-forwarded functionally, the output stays exact, the cycles
stay within the tolerance of full detail, and a loop whose iterations differ is not skipped at all."""

import numpy as np
import pytest

from stcsim.kernels import GemmProblem, get_kernel, random_operands
from stcsim.kernels.protocol import as_pattern
from stcsim.kernels.run import launch
from stcsim.sim import Engine

TOL = 0.02
FFWD_STATS = ("sample_ffwd_count", "sample_ffwd_warp_insts", "sample_ffwd_iterations", "sample_ffwd_cycles")


def gemm_runs(kernel: str, shape: tuple[int, int, int],
              config: str) -> tuple[np.ndarray, dict, dict, np.ndarray]:
    """The sampled and the full-detail launch of one GEMM (fresh random operands): outputs must match."""
    k = get_kernel(kernel)
    a, b = random_operands(GemmProblem(*shape), np.random.default_rng())
    operands = k.prepare(a, b, as_pattern("dense"), 0.0)
    out_s, sampled = launch(k, Engine(config), operands, TOL)
    out_f, full = launch(k, Engine(config), operands, 0.0)
    np.testing.assert_array_equal(out_s, out_f)  # the fast-forward executed every instruction
    return out_s, sampled, full, a.astype(np.float64) @ b.astype(np.float64)


@pytest.mark.parametrize("kernel, shape, config", [
    # cp.async groups in flight, ldmatrix and bar.sync in the loop: 300 k-tiles, one CTA
    ("gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3", (128, 128, 32 * 300), "h100"),
    # wmma loads from shared memory between two barriers: 200 k-tiles, two CTAs
    ("gemm_wmma_f16_f32_tile64x64x32_warp32x32", (64, 128, 32 * 200), "v100"),
])
def test_a_long_gemm_loop_is_fast_forwarded_within_the_tolerance_with_exact_output(kernel, shape, config):
    out, sampled, full, ref = gemm_runs(kernel, shape, config)
    np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())
    assert sampled["sample_mode"] == 6 and sampled["sample_ffwd_count"] >= 1
    assert sampled["warp_insts"] == full["warp_insts"]  # the skipped iterations still ran
    # most of the loop was skipped (at most 16 rounds per fast-forward, each followed by detailed windows that
    # measure the pace again), and its time estimated within the tolerance and within the stated estimate
    assert sampled["sample_ffwd_count"] >= 2
    assert sampled["sample_ffwd_warp_insts"] > 0.7 * full["warp_insts"]
    assert sampled["sample_ffwd_cycles"] == sampled["sample_skipped_cycles"] > 0.7 * full["kernel_cycles"]
    error = abs(sampled["gpu_sim_cycle"] - full["gpu_sim_cycle"]) / full["gpu_sim_cycle"]
    assert error <= TOL and error <= sampled["sample_error_estimate"]
    skipped = sampled["sample_skipped_cycles"] / sampled["gpu_sim_cycle"]
    assert sampled["sample_error_estimate"] >= TOL * skipped
    assert all(name not in full for name in FFWD_STATS)  # the sampling group only when asked for


def test_a_pipelines_last_iterations_are_not_taken_for_steady_ones():
    """A 3-stage cp.async pipeline loads each k-tile two iterations ahead, so its last two iterations branch
    around the loads: the same loop, less work. With 8 k-tiles the windows agree before those iterations, and
    a fast-forward of one of them, extrapolated from the steady ones, counted a k-tile of traffic twice and
    came out 3.2 % long (estimate 0.16 %); a round whose code mix differs from the windows' now ends the
    phase (ResNet-50 layer4.0.conv3, 2:4 sparse, h100)."""
    k = get_kernel("gemm_mma_sp_f16_f32_tile128x128x64_warp64x64_stage3")
    a, b = random_operands(GemmProblem(2048, 49, 512), np.random.default_rng())
    operands = k.prepare(a, b, as_pattern("nm:N=2,M=4"), 0.5)
    out_s, sampled = launch(k, Engine("h100"), operands, TOL)
    out_f, full = launch(k, Engine("h100"), operands, 0.0)
    np.testing.assert_array_equal(out_s, out_f)
    # a fast-forward may take steady iterations (one of 64 does since the L1 data stage of step 25), never a
    # last one: a k-tile of 8 counted twice would be 12.5 % more traffic and 3.2 % more cycles
    error = abs(sampled["gpu_sim_cycle"] - full["gpu_sim_cycle"]) / full["gpu_sim_cycle"]
    assert error <= sampled.get("sample_error_estimate", 0.0)
    for name in ("cp_async_bytes", "global_load_sectors", "dram_read_bytes"):
        assert sampled[name] == pytest.approx(full[name], rel=0.01), name


def test_two_ctas_per_sm_are_paced_by_their_age():
    """Two CTAs on every SM: the scheduler favours the older one's warps, so the two progress at different
    paces; the fast-forward advances each at the pace measured for its age rank (one pace for both was
    1.2 % short of full detail here)."""
    simt = "gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4"
    out, sampled, full, ref = gemm_runs(simt, (512, 1280, 512), "v100")
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    assert sampled["grid_ctas"] == 160 and sampled["sample_mode"] == 6  # 80 SMs: two CTAs each
    error = abs(sampled["gpu_sim_cycle"] - full["gpu_sim_cycle"]) / full["gpu_sim_cycle"]
    # 0.02 % with one fast-forward to the loop's end; 0.73 % since a fast-forward runs at most 16 rounds (more
    # resumptions, each on caches the skipped iterations did not touch), within the stated 2.1 %
    assert error <= 0.01 and error <= sampled["sample_error_estimate"]


def test_sms_holding_different_numbers_of_ctas_stay_in_full_detail():
    """104 CTAs on v100's 80 SMs: 24 SMs hold two CTAs beside 56 holding one. Paced per class, the
    fast-forward of such a grid was 5.3 % short of full detail (ResNet-50 layer2.0.conv3 on the SIMT GEMM,
    estimate 0.4 %); such a launch now runs in full detail, cycle for cycle. (That layer's windows no longer
    agree at all since the L1 data stage of step 25, sample mode 7: the WMMA GEMM's do.)"""
    wmma = "gemm_wmma_f16_f32_tile64x64x32_warp32x32"
    out, sampled, full, ref = gemm_runs(wmma, (512, 832, 1024), "v100")
    np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())  # f16 inputs
    assert sampled["grid_ctas"] == 104 and sampled["sample_mode"] == 8
    assert sampled["sample_ffwd_count"] == 0 and sampled["sample_skipped_cycles"] == 0
    assert sampled["gpu_sim_cycle"] == full["gpu_sim_cycle"]


# Each thread runs `n` outer iterations; iteration i of warp w runs an inner loop of len[(w + i) % n] steps,
# as a CSR SpMM's warps walk rows of different lengths: the warps differ and so do consecutive windows, so
# nothing may be fast-forwarded (the sum a thread computes is x * sum(len)).
IRREGULAR_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry ragged(.param .u64 x, .param .u64 len, .param .u64 out, .param .u32 n)
{
  .reg .b32 %r<12>;
  .reg .f32 %f<6>;
  .reg .b64 %rd<10>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [len];
  ld.param.u64 %rd3, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  mul.wide.u32 %rd4, %r6, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.f32 %f1, [%rd5];
  mov.f32 %f2, 0f00000000;
  mov.u32 %r7, 0;
  shr.u32 %r10, %r6, 5;
OUTER:
  add.s32 %r11, %r10, %r7;
  rem.u32 %r11, %r11, %r1;
  mul.wide.u32 %rd6, %r11, 4;
  add.s64 %rd7, %rd2, %rd6;
  ld.global.u32 %r8, [%rd7];
  mov.u32 %r9, 0;
INNER:
  add.s32 %r9, %r9, 1;
  fma.rn.f32 %f2, %f1, 0f3F800000, %f2;
  setp.lt.u32 %p1, %r9, %r8;
  @%p1 bra INNER;
  add.s32 %r7, %r7, 1;
  setp.lt.u32 %p2, %r7, %r1;
  @%p2 bra OUTER;
  add.s64 %rd8, %rd3, %rd4;
  st.global.f32 [%rd8], %f2;
  ret;
}
"""


# The same loop with every iteration alike in memory too: the lengths it reads stay in one 32-byte sector
# (index (warp + i) mod 8). Read as (warp + i) mod n, warps cross sectors at different iterations, and the
# L1 misses that come with it shift from warp to warp over the run: a change of phase no window can see.
ALIKE_PTX = IRREGULAR_PTX.replace("rem.u32 %r11, %r11, %r1;", "and.b32 %r11, %r11, 7;")


def run_ragged(lengths: np.ndarray, sample: float,
               ptx: str = IRREGULAR_PTX) -> tuple[np.ndarray, np.ndarray, dict]:
    eng = Engine("v100")
    eng.load_ptx(ptx)
    threads = 8 * 128
    x = np.random.default_rng().uniform(0.5, 1.5, threads).astype(np.float32)
    px, plen, pout = eng.malloc(x.nbytes), eng.malloc(lengths.nbytes), eng.malloc(x.nbytes)
    eng.copy_to(px, x)
    eng.copy_to(plen, lengths)
    stats = eng.launch("ragged", 8, 128, [px, plen, pout, lengths.size], sample=sample)
    return x, eng.copy_from(pout, (threads,), np.float32), stats


def test_a_loop_whose_iterations_differ_is_not_fast_forwarded():
    # Seeded: for a few draws of random lengths (2 seeds of 0..59) three windows happen to agree and the
    # sampler fast-forwards until the first round that differs, which is allowed but not what this tests.
    lengths = np.random.default_rng(7).integers(1, 40, 60).astype(np.uint32)
    x, out, stats = run_ragged(lengths, TOL)
    _, _, full = run_ragged(lengths, 0.0)
    np.testing.assert_allclose(out, x * float(lengths.sum()), rtol=1e-4)
    assert stats["sample_mode"] == 7 and stats["sample_ffwd_count"] == 0
    assert stats["sample_skipped_cycles"] == 0
    assert stats["gpu_sim_cycle"] == full["gpu_sim_cycle"]


def test_the_same_loop_with_equal_inner_loops_is_fast_forwarded():
    lengths = np.full(60, 17, np.uint32)  # every warp and iteration alike: steady windows
    x, out, stats = run_ragged(lengths, TOL, ALIKE_PTX)
    _, _, full = run_ragged(lengths, 0.0, ALIKE_PTX)
    np.testing.assert_allclose(out, x * float(lengths.sum()), rtol=1e-4)
    assert stats["sample_mode"] == 6 and stats["sample_ffwd_iterations"] > 0
    assert abs(stats["gpu_sim_cycle"] - full["gpu_sim_cycle"]) <= TOL * full["gpu_sim_cycle"]

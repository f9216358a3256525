"""Engine(config): the timing model behind the Python API (results, determinism, limits, errors)."""

import numpy as np
import pytest

from stcsim.config import ConfigError
from stcsim.kernels import GemmProblem, get_kernel, random_operands, run_gemm
from stcsim.sim import Engine, LaunchError, SimFault

KERNELS = [
    "gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4",
    "gemm_wmma_f16_f32_tile64x64x32_warp32x32",
    "gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2",
]

BARRIER_DEADLOCK = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k()
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, 32;
  @%p1 bra DONE;
  bar.sync 1, 64;
DONE:
  ret;
}
"""


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("config", ["v100", "h100"])
def test_results_are_identical_with_and_without_timing(name, config):
    if "mma" in name and config == "v100":
        config = "a100"  # mma.sync and cp.async do not exist on the V100 (see test below)
    a, b = random_operands(GemmProblem(72, 40, 48), np.random.default_rng(7))
    c_func, _ = run_gemm(get_kernel(name), Engine(None), a, b)
    c_time, st = run_gemm(get_kernel(name), Engine(config), a, b)
    assert np.array_equal(c_func, c_time)
    assert st["gpu_sim_cycle"] > 0


def test_timing_is_deterministic():
    k = get_kernel(KERNELS[2])
    a, b = random_operands(GemmProblem(128, 128, 64), np.random.default_rng(1))
    s1 = run_gemm(k, Engine("h100"), a, b)[1]
    s2 = run_gemm(k, Engine("h100"), a, b)[1]
    assert s1 == s2


def test_stats_are_consistent():
    a, b = random_operands(GemmProblem(128, 128, 64), np.random.default_rng(2))
    st = run_gemm(get_kernel(KERNELS[1]), Engine("v100"), a, b)[1]
    assert st["gpu_ipc"] == pytest.approx(st["gpu_sim_insn"] / st["gpu_sim_cycle"])
    assert st["issue_cycles"] == st["warp_insts"] - st["folded_insts"]
    assert 0 < st["achieved_occupancy"] <= st["theoretical_occupancy"] <= 1
    # every L1 sector lookup is a hit or a miss; every miss that is not merged goes to L2
    assert st["l1d_hits"] + st["l1d_misses"] >= st["global_load_sectors"] - 1e-9
    assert st["dram_read_bytes"] % 32 == 0 and st["dram_read_bytes"] <= 32 * st["l2_misses"]


def test_register_override_lowers_occupancy():
    k = get_kernel(KERNELS[0])
    a, b = random_operands(GemmProblem(256, 256, 32), np.random.default_rng(3))
    few = run_gemm(k, Engine("v100"), a, b)[1]

    eng = Engine("v100")
    launch = eng.launch
    eng.launch = lambda *args, **kw: launch(*args, **kw, regs_per_thread=255)  # type: ignore[method-assign]
    many = run_gemm(k, eng, a, b)[1]
    assert many["regs_per_thread"] == 255
    assert many["max_ctas_per_sm"] < few["max_ctas_per_sm"]


def test_instruction_the_config_lacks_is_refused():
    a, b = random_operands(GemmProblem(64, 64, 64), np.random.default_rng(4))
    with pytest.raises(LaunchError, match=r"cp\.async|mma\.sync"):
        run_gemm(get_kernel(KERNELS[2]), Engine("v100"), a, b)


def test_unknown_config_names_the_available_ones():
    with pytest.raises(ConfigError, match="v100"):
        Engine("v999")


def test_named_barrier_that_never_fills_is_a_deadlock_error():
    eng = Engine("v100")
    eng.load_ptx(BARRIER_DEADLOCK)
    with pytest.raises(SimFault, match="deadlock"):
        eng.launch("k", 1, 64, [])
    eng_f = Engine(None)
    eng_f.load_ptx(BARRIER_DEADLOCK)
    with pytest.raises(SimFault, match="deadlock"):
        eng_f.launch("k", 1, 64, [])


def test_too_much_shared_memory_for_the_config():
    eng = Engine("v100")
    eng.load_ptx(BARRIER_DEADLOCK.replace("bar.sync 1, 64;", ""))
    with pytest.raises(LaunchError, match="shared memory"):
        eng.launch("k", 1, 32, [], shared_bytes=100 * 1024)


@pytest.mark.parametrize("name", KERNELS + ["gemm_naive_f32_f32_tile16x16x1"])
def test_load_scheduling_keeps_results_and_hides_latency(name):
    """Engine(schedule_loads=True) if-converts and list-schedules blocks: same results, fewer cycles."""
    config = "h100"
    a, b = random_operands(GemmProblem(96, 80, 64), np.random.default_rng(5))
    c_ptx, st_ptx = run_gemm(get_kernel(name), Engine(config, schedule_loads=False), a, b)
    c_sched, st_sched = run_gemm(get_kernel(name), Engine(config), a, b)
    assert np.array_equal(c_ptx, c_sched)
    # loads first hide load latency; a launch bound by its epilogue's stores (the SM's store path,
    # l1d.store_sector_cycles) gains nothing from it, and may lose a little to the new issue order
    assert st_sched["gpu_sim_cycle"] <= 1.01 * st_ptx["gpu_sim_cycle"]
    if name.startswith("gemm_naive"):  # its loop interleaves every load with its fma: hoisting must help
        assert st_sched["gpu_sim_cycle"] < 0.8 * st_ptx["gpu_sim_cycle"]


ACTIVEMASK_UNDER_BRANCH = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry am(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, 0;
  setp.ge.u32 %p1, %r1, 8;
  @%p1 bra SKIP;
  activemask.b32 %r2;
SKIP:
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}
"""


@pytest.mark.parametrize("schedule", [False, True])
def test_scheduling_keeps_divergent_semantics(schedule):
    """activemask under a short forward branch still sees only the lanes that did not branch."""
    eng = Engine(None, schedule_loads=schedule)
    eng.load_ptx(ACTIVEMASK_UNDER_BRANCH)
    out = eng.malloc(128)
    eng.launch("am", 1, 32, [out])
    got = eng.copy_from(out, 32, np.uint32)
    assert list(got[:8]) == [0xFF] * 8 and not got[8:].any()

"""CUDA Core Unified: the channel-pruned SIMT GEMM on the simulator, against numpy through the channel
pattern's decode."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.kernels import (
    CannotImplement,
    GemmProblem,
    get_kernel,
    kernels_for,
    launch,
    random_operands,
    relative_error,
)
from stcsim.kernels import verify_gemm as verify
from stcsim.kernels.descriptors.gemm_channel import ChannelGemmKernel, kept_columns
from stcsim.kernels.problem import ceil_div
from stcsim.kernels.ptx_info import entry_params
from stcsim.sparsity import get as get_pattern
from stcsim.sparsity.base import keep_count
from stcsim.sparsity.channel import Channel

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

KERNEL = get_kernel("gemm_simt_channel_f32_f32_tile64x64x8_warp32x16_thread4x4")
DENSE = get_kernel("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4")
SHAPES = [GemmProblem(64, 64, 64), GemmProblem(200, 136, 72), GemmProblem(33, 17, 40), GemmProblem(1, 1, 1)]


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random operands on every run (the seed is printed for a failing test)."""
    seed = int(np.random.SeedSequence().generate_state(1)[0])
    print(f"operand seed {seed}")
    return np.random.default_rng(seed)


def test_the_registry_row_runs_the_dense_simt_tiles():
    assert KERNEL == ChannelGemmKernel(dense=DENSE) and KERNEL in kernels_for("channel")
    p = GemmProblem(256, 196, 2304)
    assert KERNEL.launch_geometry(p) == DENSE.launch_geometry(p)
    (params,) = entry_params(KERNEL.ptx_path.read_text()).values()
    assert [p.ptx_type for p in params] == ["u64"] * 4 + ["u32"] * 6
    with pytest.raises(ValueError, match="runs the tiles of the fp32 SIMT GEMM, not gemm_naive"):
        ChannelGemmKernel(dense=get_kernel("gemm_naive_f32_f32_tile16x16x1"))


@pytest.mark.parametrize("sparsity", [0.0, 0.5, 0.9])
@pytest.mark.parametrize("p", SHAPES, ids=str)
def test_matches_numpy(p, sparsity):
    check = verify(KERNEL, Engine(), p, pattern="channel", sparsity=sparsity)
    assert check.ok, str(check)


def test_matches_numpy_on_the_resnet50_layer():
    check = verify(KERNEL, Engine(), GemmProblem(256, 196, 2304), pattern="channel", sparsity=0.5)
    assert check.ok, str(check)


def test_runs_timed_on_the_v100():
    check = verify(KERNEL, Engine("v100"), GemmProblem(64, 72, 96), pattern="channel", sparsity=0.5)
    assert check.ok, str(check)
    assert check.stats["gpu_sim_cycle"] > 0


def test_prepare_keeps_whole_columns_and_closes_the_ids_with_k(rng):
    w, x = rng.uniform(-1, 1, (9, 30)), rng.uniform(-1, 1, (30, 5))
    ops = KERNEL.prepare(w, x, Channel(), 0.6)
    assert ops.names == ["A", "ids", "B", "C"]
    assert ops.dtypes == {"A": np.float32, "ids": np.int32, "B": np.float32, "C": np.float32}
    kept = np.flatnonzero(Channel().prune(w.astype(np.float32), 0.6)[0])
    assert kept_columns(ops) == kept.size == keep_count(30, 0.6)
    assert ops["ids"].tolist() == [*kept, 30]
    np.testing.assert_array_equal(ops["A"], w.astype(np.float32)[:, kept])
    assert KERNEL.args(ops, dict.fromkeys(ops.names, 0))[4:] == [9, 5, kept.size, kept.size, 5, 5]


def test_weights_that_keep_no_column_give_zeros():
    ops = KERNEL.prepare(np.full((3, 1), 0.5), np.full((1, 70), 2.0), Channel(), 0.9)
    assert kept_columns(ops) == 0 and ops["A"].shape == (3, 1)
    c, _ = launch(KERNEL, Engine(), ops)
    np.testing.assert_array_equal(c, np.zeros((3, 70)))


def test_pruned_channels_are_never_read_or_multiplied(rng):
    """Rows of X of pruned channels may hold NaN without reaching C; warp FMAs are those of the dense SIMT
    GEMM on the kept K (16 per thread and k of a k step of 8)."""
    p = GemmProblem(70, 65, 100)
    w, x = random_operands(p, rng)
    kept = Channel().prune(w, 0.5)[0]
    x[~kept] = np.nan
    ops = KERNEL.prepare(w, x, Channel(), 0.5)
    c, stats = launch(KERNEL, Engine(), ops)
    expected = w[:, kept].astype(np.float64) @ x[kept].astype(np.float64)
    assert relative_error(c, expected) < KERNEL.tolerance
    grid, block, _ = KERNEL.launch_geometry(p)
    warps = grid[0] * grid[1] * block[0] // 32
    assert stats["warp_insts_FP32"] == warps * ceil_div(int(kept.sum()), 8) * 8 * 16


def test_instruction_counts_fall_with_density():
    p = GemmProblem(64, 64, 256)
    runs = [verify(KERNEL, Engine(), p, pattern="channel", sparsity=s) for s in (0.0, 0.5, 0.75, 0.9)]
    stats = [run.stats for run in runs]
    for key in ("warp_insts", "gpu_sim_insn", "warp_insts_FP32"):
        counts = [s[key] for s in stats]
        assert counts == sorted(counts, reverse=True) and len(set(counts)) == 4, (key, counts)
    dense = verify(DENSE, Engine(), p).stats
    assert stats[0]["warp_insts_FP32"] == dense["warp_insts_FP32"]
    assert 1.8 * stats[1]["warp_insts"] < dense["warp_insts"]


def test_refuses_other_patterns_and_empty_problems(rng):
    w, x = rng.uniform(-1, 1, (8, 16)), rng.uniform(-1, 1, (16, 8))
    with pytest.raises(CannotImplement, match="implements the channel pattern, not unstructured"):
        KERNEL.prepare(w, x, get_pattern("unstructured"), 0.5)
    with pytest.raises(CannotImplement, match="M, N, K must be >= 1"):
        KERNEL.prepare(np.ones((8, 0)), np.ones((0, 8)), Channel())
    ok, reason = KERNEL.can_implement(GemmProblem(8, 2**16, 2**16), Channel())
    assert not ok and "X has 4294967296 elements" in reason

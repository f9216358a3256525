"""CUDA Core Vector-wise: paper 001's VectorSparse SGEMM on the simulator, against numpy through the vw
pattern's decode, for L = 16 and K = 2, 4, 8 non-zeros per vector."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.kernels import CannotImplement, GemmProblem, get_kernel, kernels_for, launch, relative_error
from stcsim.kernels import verify_gemm as verify
from stcsim.kernels.descriptors.gemm_vectorwise_simt import VectorWiseSimtKernel
from stcsim.kernels.descriptors.sparse_support import pack_offsets, unpack_offsets
from stcsim.kernels.problem import ceil_div
from stcsim.kernels.ptx_info import entry_params
from stcsim.sparsity import get as get_pattern
from stcsim.sparsity.vectorwise import VectorWise

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

DENSE = get_kernel("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4")
NAME = "gemm_simt_vw_l16k{}_f32_f32_tile64x64x8_warp32x16_thread4x4"
KERNELS = {kv: get_kernel(NAME.format(kv)) for kv in (2, 4, 8)}
SHAPES = [GemmProblem(64, 64, 64), GemmProblem(200, 136, 72), GemmProblem(33, 17, 40), GemmProblem(1, 1, 1)]


def spec(kv: int) -> str:
    """The pattern spec of the kernel with kv non-zeros per 16-vector."""
    return f"vw:L=16,K={kv}"


def sparsity(kv: int) -> float:
    """The sparsity where every vector keeps exactly kv of 16."""
    return 1 - kv / 16


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random operands on every run (the seed is printed for a failing test)."""
    seed = int(np.random.SeedSequence().generate_state(1)[0])
    print(f"operand seed {seed}")
    return np.random.default_rng(seed)


@pytest.mark.parametrize("kv", [2, 4, 8])
def test_one_registry_row_per_k_on_the_dense_simt_tiles(kv):
    kernel = KERNELS[kv]
    assert kernel == VectorWiseSimtKernel(dense=DENSE, kv=kv) and kernel in kernels_for(spec(kv))
    p = GemmProblem(256, 196, 2304)
    assert kernel.launch_geometry(p) == DENSE.launch_geometry(p)
    params = entry_params(kernel.ptx_path.read_text())[kernel.entry]
    assert [p.ptx_type for p in params] == ["u64"] * 4 + ["u32"] * 7


def test_supports_only_its_l_k_and_row_vectors():
    kernel = KERNELS[4]
    assert kernel.supports(VectorWise(L=16, K=4)) == (True, "")
    for other in ("vw:L=16,K=8", "vw:L=8,K=2", "vw:L=16,K=4,axis=col", "vw:L=16", "unstructured"):
        ok, reason = kernel.supports(get_pattern(other))
        assert not ok and reason.endswith(f"implements vw:L=16,K=4,axis=row, not {get_pattern(other).spec()}")
    with pytest.raises(ValueError, match="non-zeros per vector must be one of \\[2, 4, 8\\], got 3"):
        VectorWiseSimtKernel(dense=DENSE, kv=3)
    with pytest.raises(ValueError, match="runs the tiles of the fp32 SIMT GEMM, not gemm_wmma"):
        VectorWiseSimtKernel(dense=get_kernel("gemm_wmma_f16_f32_tile64x64x32_warp32x32"), kv=4)


@pytest.mark.parametrize("kv", [2, 4, 8])
def test_offsets_pack_least_significant_nibble_first(kv, rng):
    offsets = rng.integers(0, 16, (3, 5, kv)).astype(np.uint8)
    words = pack_offsets(offsets)
    assert words.dtype == {2: np.uint8, 4: np.uint16, 8: np.uint32}[kv] and words.shape == (3, 5)
    assert int(words[1, 2]) == sum(int(o) << (4 * j) for j, o in enumerate(offsets[1, 2]))
    np.testing.assert_array_equal(unpack_offsets(words, kv), offsets)


@pytest.mark.parametrize("p", SHAPES, ids=str)
@pytest.mark.parametrize("kv", [2, 4, 8])
def test_matches_numpy(kv, p):
    check = verify(KERNELS[kv], Engine(), p, pattern=spec(kv), sparsity=sparsity(kv))
    assert check.ok, str(check)


def test_matches_numpy_on_the_resnet50_layer():
    check = verify(KERNELS[4], Engine(), GemmProblem(256, 196, 2304), pattern=spec(4), sparsity=0.75)
    assert check.ok, str(check)


def test_runs_timed_on_the_v100():
    check = verify(KERNELS[4], Engine("v100"), GemmProblem(64, 72, 96), pattern=spec(4), sparsity=0.8)
    assert check.ok, str(check)
    assert check.stats["gpu_sim_cycle"] > 0


def test_prepare_lays_out_values_and_packed_offsets(rng):
    w, x = rng.uniform(-1, 1, (9, 40)), rng.uniform(-1, 1, (40, 5))
    ops = KERNELS[4].prepare(w, x, VectorWise(L=16, K=4), 0.75)
    assert ops.names == ["vals", "offs", "B", "C"]
    assert ops.dtypes == {"vals": np.float32, "offs": np.uint16, "B": np.float32, "C": np.float32}
    fmt = VectorWise(L=16, K=4).encode(w.astype(np.float32), VectorWise(L=16, K=4).prune(w, 0.75))
    np.testing.assert_array_equal(ops["vals"], fmt.values.reshape(9, 12))
    np.testing.assert_array_equal(unpack_offsets(ops["offs"], 4), fmt.offsets)
    assert KERNELS[4].args(ops, dict.fromkeys(ops.names, 0))[4:] == [9, 5, 40, 12, 3, 5, 5]


@pytest.mark.parametrize("kv", [2, 4, 8])
def test_only_the_stored_values_are_multiplied(kv, rng):
    """Rows of X that no kept weight selects may hold NaN without reaching C; the warp FMAs are 16 per
    thread and stored value (nvec * kv per row). K is a multiple of 16 here, so every vector keeps exactly kv
    weights: a vector that keeps fewer stores zero values at offset 0 (Fig. 5), and those are multiplied."""
    p = GemmProblem(2, 70, 96)
    w = rng.uniform(-1, 1, (p.m, p.k)).astype(np.float32)
    x = rng.uniform(-1, 1, (p.k, p.n)).astype(np.float32)
    pattern = VectorWise(L=16, K=kv)
    kept = pattern.prune(w, sparsity(kv))
    x[~kept.any(axis=0)] = np.nan
    ops = KERNELS[kv].prepare(w, x, pattern, sparsity(kv))
    c, stats = launch(KERNELS[kv], Engine(), ops)
    used = kept.any(axis=0)
    expected = np.where(kept, w, 0)[:, used].astype(np.float64) @ x[used].astype(np.float64)
    assert relative_error(c, expected) < KERNELS[kv].tolerance
    grid, block, _ = KERNELS[kv].launch_geometry(p)
    warps = grid[0] * grid[1] * block[0] // 32
    assert stats["warp_insts_FP32"] == warps * ceil_div(p.k, 16) * kv * 16


def test_instruction_counts_fall_with_density():
    """Fewer non-zeros per vector, fewer instructions; K = 4 (75%) runs under half the dense SGEMM's FMAs."""
    p = GemmProblem(64, 64, 512)
    runs = [verify(KERNELS[kv], Engine(), p, pattern=spec(kv), sparsity=sparsity(kv)) for kv in (8, 4, 2)]
    stats = [run.stats for run in runs]
    dense = verify(DENSE, Engine(), p).stats
    for key in ("warp_insts", "gpu_sim_insn", "warp_insts_FP32"):
        counts = [dense[key]] + [s[key] for s in stats]
        assert counts == sorted(counts, reverse=True) and len(set(counts)) == 4, (key, counts)
    assert 4 * stats[1]["warp_insts_FP32"] == dense["warp_insts_FP32"]


def test_refuses_other_patterns_and_unreachable_sparsity(rng):
    w, x = rng.uniform(-1, 1, (8, 16)), rng.uniform(-1, 1, (16, 8))
    with pytest.raises(CannotImplement, match="implements vw:L=16,K=4,axis=row, not vw:L=16,K=2"):
        KERNELS[4].prepare(w, x, VectorWise(L=16, K=2), 0.875)
    with pytest.raises(ValueError, match="sparsity must be in \\[0.75, 1\\)"):
        KERNELS[4].prepare(w, x, VectorWise(L=16, K=4), 0.5)
    ok, reason = KERNELS[4].can_implement(GemmProblem(8, 2**16, 2**16), VectorWise(L=16, K=4))
    assert not ok and "X has 4294967296 elements" in reason

"""The Hopper GEMMs of the kernel set (stcsim.kernels.descriptors.gemm_wgmma): numpy on the engine at ragged
shapes, their timing on h100 (the sparse kernel issues half the wgmma work), the configs that refuse them, the
metadata layout (tests/gpu/test_gpu_hopper_gemm.py runs them on an sm_90 GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.kernels import GemmProblem, get_kernel, launch, relative_error
from stcsim.kernels.descriptors.gemm_wgmma import (
    WGMMA_KERNELS,
    WgmmaGemmKernel,
    k_major,
    lane_metadata_blocks,
    tile_words,
)
from stcsim.sim import Engine, LaunchError
from stcsim.sparsity import get

DENSE8, DENSE128, DENSE256, SPARSE8, SPARSE128, SPARSE256 = WGMMA_KERNELS
SHAPES = [(128, 128, 64), (200, 72, 100), (72, 300, 24), (136, 1, 72), (40, 5, 130)]


def prepared(kernel: WgmmaGemmKernel, m: int, n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    w, x = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    pattern = get("nm:N=2,M=4" if kernel.sparse else "dense")
    return kernel.prepare(w, x, pattern, 0.5 if kernel.sparse else 0.0)


@pytest.mark.parametrize("kernel", WGMMA_KERNELS, ids=lambda k: k.procedural_name)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_matches_numpy_on_the_engine(kernel: WgmmaGemmKernel, m: int, n: int, k: int) -> None:
    ops = prepared(kernel, m, n, k, seed=m + n + k)
    got, _ = launch(kernel, Engine(), ops)
    assert relative_error(got, kernel.reference(ops)) < 1e-5
    assert not np.isnan(got).any()


def test_sparse_reference_is_the_pruned_dense_product() -> None:
    """The sparse kernels' reference decodes the device arrays: equal to the 2:4-pruned W times X."""
    rng = np.random.default_rng(3)
    w, x = rng.uniform(-1, 1, (136, 80)).astype(np.float16), rng.uniform(-1, 1, (80, 24))
    pattern = get("nm:N=2,M=4")
    ops = SPARSE128.prepare(w, x, pattern, 0.5)
    pruned = np.where(pattern.prune(w, 0.5), w, 0).astype(np.float64)
    np.testing.assert_allclose(SPARSE128.reference(ops), pruned @ x.astype(np.float16).astype(np.float64))


def test_metadata_blocks_round_trip() -> None:
    words = np.random.default_rng(5).integers(0, 2**32, (8, 6, 16), dtype=np.uint32)
    blocks = lane_metadata_blocks(words)
    assert blocks.shape == (2, 6, 128)
    assert np.array_equal(tile_words(blocks), words)
    # lane 4g + j of warp w holds word 2g + j of row tile 4b + w; lanes 4g + 2, 4g + 3 hold 0
    assert blocks[1, 2, 32 * 3 + 4 * 5 + 1] == words[4 + 3, 2, 2 * 5 + 1]
    assert blocks[1, 2, 32 * 3 + 4 * 5 + 2] == 0


def test_names_and_refusals() -> None:
    assert get_kernel("gemm_wgmma_sp_f16_f32_tile128x128x64_stage5") is SPARSE128
    assert SPARSE128.supports(get("nm:N=2,M=4"))[0] and not SPARSE128.supports(get("nm:N=1,M=4"))[0]
    assert DENSE128.supports(get("dense"))[0] and not DENSE128.supports(get("nm:N=2,M=4"))[0]
    assert DENSE128.can_implement(GemmProblem(1, 1, 1), get("dense"))[0]
    assert get_kernel("gemm_wgmma_f16_f32_tile128x8x64_stage6") is DENSE8
    assert SPARSE8.instruction == "wgmma.mma_async.sp.m64n8k32"


@pytest.mark.parametrize("config", ["v100", "a100"])
def test_configs_without_hopper_refuse_the_launch(config: str) -> None:
    with pytest.raises(LaunchError):
        launch(DENSE128, Engine(config), prepared(DENSE128, 64, 64, 64, seed=1))


def test_sparse_halves_the_tensor_core_work_on_h100() -> None:
    """128 x 128 x 1024 on h100: the sparse kernel issues half the wgmma instructions (m64n128k32 against
    m64n128k16), each occupying the pipes 80 cycles against the dense one's 64 (the H100 microbenchmarks,
    docs/calibration.md), and finishes sooner."""
    stats = {}
    for kernel in (DENSE128, SPARSE128):
        ops = prepared(kernel, 128, 128, 1024, seed=7)
        got, stats[kernel.sparse] = launch(kernel, Engine("h100"), ops)
        assert relative_error(got, kernel.reference(ops)) < 1e-5
    dense, sparse = stats[False], stats[True]
    # k tiles x consumer warpgroups x k16 steps x warps
    assert dense["hopper_wgmma_insts"] == (1024 // 64) * 2 * 4 * 4
    assert sparse["hopper_wgmma_insts"] == dense["hopper_wgmma_insts"] // 2
    assert dense["hopper_wgmma_mean_busy"] == 64 and sparse["hopper_wgmma_mean_busy"] == 80
    assert sparse["gpu_sim_cycle"] < dense["gpu_sim_cycle"]


def test_wide_tile_uses_n256() -> None:
    """The 128 x 256 tile issues m64n256k16: half the instructions of the 128 x 128 tile on a 128 x 256 C,
    each twice the work."""
    insts = {}
    for kernel in (DENSE128, DENSE256):
        _, stats = launch(kernel, Engine("h100"), prepared(kernel, 128, 256, 256, seed=9))
        insts[kernel.block_n] = stats["hopper_wgmma_insts"]
    assert insts[256] * 2 == insts[128]



@pytest.mark.parametrize("sparse", [False, True])
def test_with_activations_equals_preparing_again(sparse: bool) -> None:
    """ReusesWeights: the prepared weights with other activations (another N) are, array for array, what
    `prepare` gives for the same weights and those activations; a K that does not match is refused."""
    from stcsim.kernels.protocol import ReusesWeights

    kernel = next(k for k in WGMMA_KERNELS if k.sparse == sparse)
    pattern = get("nm:N=2,M=4" if sparse else "dense")
    rng = np.random.default_rng()
    w = rng.standard_normal((200, 96)).astype(np.float32)
    x, x2 = rng.standard_normal((96, 40)).astype(np.float32), rng.standard_normal((96, 7)).astype(np.float32)
    assert isinstance(kernel, ReusesWeights)
    reused = kernel.with_activations(kernel.prepare(w, x, pattern, 0.5), x2)
    fresh = kernel.prepare(w, x2, pattern, 0.5)
    assert reused.problem == fresh.problem and reused.names == fresh.names
    for name in fresh.names:
        a, b = reused[name], fresh[name]
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=True), name
    with pytest.raises(ValueError, match="96"):
        kernel.with_activations(fresh, x2[:64])


@pytest.mark.parametrize("shape,rows,kp", [((5, 7), 8, 64), ((64, 64), 64, 64), ((3, 5, 64), 5, 64),
                                           ((3, 5, 60), 8, 64)])
def test_k_major_pads_with_zeros_and_casts_in_one_layout(shape, rows, kp):
    x = np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)
    want = np.zeros((*shape[:-2], rows, kp), np.float16)
    want[..., : shape[-2], : shape[-1]] = x.astype(np.float16)
    got = k_major(x, rows, kp)
    assert got.dtype == np.float16 and got.flags.c_contiguous and np.array_equal(got, want)
    view = np.swapaxes(x, -1, -2)  # a transposed view (the activations' X^T): the same values as a copy
    assert np.array_equal(k_major(view, shape[-1], 64), k_major(np.ascontiguousarray(view), shape[-1], 64))

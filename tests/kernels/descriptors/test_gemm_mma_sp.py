"""The 2:4 mma.sp GEMM: metadata lane order, descriptor rules, and the kernel against numpy on the engine."""

import numpy as np
import pytest

from stcsim.kernels import GemmProblem, kernels_for, verify_gemm
from stcsim.kernels.descriptors.gemm_mma_sp import (
    MMA_SP_KERNELS,
    TWO_FOUR,
    decode_nm,
    lane_order_metadata,
    metadata_indices,
    shared_bytes,
)
from stcsim.kernels.descriptors.gemm_wgmma import WGMMA_KERNELS
from stcsim.kernels.ptx_info import opcodes
from stcsim.sim import Engine, LaunchError
from stcsim.sparsity import get
from stcsim.sparsity.mma_sp import lane_metadata, pack_m16n8k32

SHAPES = [
    GemmProblem(64, 64, 64), GemmProblem(33, 17, 40), GemmProblem(200, 136, 72), GemmProblem(16, 8, 200),
]


def test_lane_order_round_trips_random_positions():
    rng = np.random.default_rng()
    idx = np.sort(rng.choice(4, size=(37, 21, 2), replace=True), axis=-1).astype(np.uint8)
    back = metadata_indices(lane_order_metadata(idx))
    assert back.shape == (48, 32, 2)
    np.testing.assert_array_equal(back[:37, :21], idx)
    np.testing.assert_array_equal(back[37:, :], np.broadcast_to([0, 1], (11, 32, 2)))


def test_lane_order_is_the_register_layout_with_selectors_0_and_1():
    """Lane L of k step ks holds selector 0's register of k tile 2ks in lanes 4g+{0,1} and selector 1's of
    k tile 2ks+1 in lanes 4g+{2,3} (stcsim.sparsity.mma_sp, checked on silicon by its GPU test)."""
    rng = np.random.default_rng()
    w = rng.uniform(-1, 1, (32, 128)).astype(np.float16)
    mask = TWO_FOUR.prune(w, 0.5)
    ref = pack_m16n8k32(w, mask).metadata  # (2, 4, 16)
    meta = lane_order_metadata(TWO_FOUR.encode(w, mask).indices)
    for tm in range(2):
        for ks in range(2):
            expect = lane_metadata(ref[tm, 2 * ks], 0) | lane_metadata(ref[tm, 2 * ks + 1], 1)
            np.testing.assert_array_equal(meta[tm, ks], expect)


@pytest.mark.parametrize("kernel", MMA_SP_KERNELS, ids=lambda k: k.procedural_name)
def test_prepare_keeps_half_of_a_and_decodes_to_the_pruned_weights(kernel):
    rng = np.random.default_rng()
    w = rng.uniform(-1, 1, (40, 70)).astype(np.float32)
    x = rng.uniform(-1, 1, (70, 24)).astype(np.float32)
    ops = kernel.prepare(w, x, TWO_FOUR, 0.5)
    assert ops["values"].shape == (40, 64) and ops["values"].dtype == np.float16  # K = 70 -> 128 -> 64 kept
    assert ops["meta"].shape == (3, 2, 32)
    pruned = np.where(TWO_FOUR.prune(w, 0.5), w, 0).astype(np.float16).astype(np.float64)
    np.testing.assert_array_equal(decode_nm((40, 70), ops["values"], ops["meta"]), pruned)


def test_only_two_four_is_supported_and_registered():
    assert set(kernels_for("nm:N=2,M=4")) == set(MMA_SP_KERNELS) | {k for k in WGMMA_KERNELS if k.sparse}
    kernel = MMA_SP_KERNELS[0]
    ok, why = kernel.can_implement(GemmProblem(64, 64, 64), get("nm:N=1,M=4"))
    assert not ok and "nm:N=2,M=4" in why
    ok, why = kernel.can_implement(GemmProblem(0, 64, 64), TWO_FOUR)
    assert not ok and "M, N, K must be >= 1" in why
    ok, why = kernel.can_implement(GemmProblem(70000 * 128, 8, 64), TWO_FOUR)
    assert not ok and "grid" in why


def test_ptx_issues_mma_sp_and_shared_bytes_match_the_source():
    ops = opcodes(MMA_SP_KERNELS[0].ptx_path.read_text())
    assert "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32" in ops
    assert {"cp.async.cg.shared.global", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"} <= ops
    assert shared_bytes(MMA_SP_KERNELS[0].block_tile, 3) == 76800  # SpTile<128,128,..,3>::kSharedBytes


@pytest.mark.parametrize("p", SHAPES, ids=str)
@pytest.mark.parametrize("kernel", MMA_SP_KERNELS, ids=lambda k: k.procedural_name)
def test_kernel_matches_numpy_on_the_engine(kernel, p):
    check = verify_gemm(kernel, Engine("h100"), p, pattern=TWO_FOUR, sparsity=0.5)
    assert check.ok, str(check)


def test_kernel_matches_numpy_above_half_sparsity():
    check = verify_gemm(MMA_SP_KERNELS[1], Engine(), GemmProblem(48, 40, 96), pattern=TWO_FOUR, sparsity=0.8)
    assert check.ok, str(check)


MMA_SP_ONLY = """
.version 7.1
.target sm_80
.address_size 64
.visible .entry one_mma_sp()
{
    .reg .b32 %r<10>;
    .reg .f32 %f<5>;
    mov.b32 %r1, 0;
    mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r1, %r1, %r1},
        {%r1, %r1, %r1, %r1}, {%f1, %f2, %f3, %f4}, %r1, 0;
    ret;
}
"""


def test_configs_below_sm80_refuse_mma_sp():
    engine = Engine("v100")
    engine.load_ptx(MMA_SP_ONLY)
    with pytest.raises(LaunchError, match=r"mma\.sp\.sync.*no timing.*tensor\.mma_sp_m16n8k32_f32"):
        engine.launch("one_mma_sp", (1, 1, 1), (32, 1, 1), [])

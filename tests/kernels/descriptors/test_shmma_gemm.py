"""Tensor Core Vector-wise (SHMMA, paper 001): the descriptor, its tile-major operand layout, and the kernel
on the engine against numpy through the vw pattern's own decode, on fresh random pruned weights."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.kernels import CannotImplement, GemmProblem, get_kernel, kernels_for, random_operands, verify_gemm
from stcsim.kernels.descriptors.shmma import SHMMA_KERNELS, ShmmaKernel
from stcsim.kernels.descriptors.sparse_support import pack_offsets, unpack_offsets
from stcsim.sparsity import get
from stcsim.sparsity.vectorwise import VectorWise

try:
    from stcsim.sim import Engine, LaunchError
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

IDS = [k.procedural_name for k in SHMMA_KERNELS]
SHAPES = [GemmProblem(64, 64, 64), GemmProblem(200, 136, 72), GemmProblem(33, 17, 40), GemmProblem(1, 1, 1)]


def vw(kernel: ShmmaKernel) -> VectorWise:
    return VectorWise(L=16, K=kernel.nnz)


def sparsity(kernel: ShmmaKernel) -> float:
    return 1.0 - kernel.nnz / 16


@pytest.fixture
def rng() -> np.random.Generator:
    seed = int(np.random.SeedSequence().generate_state(1)[0])
    print(f"operand seed {seed}")
    return np.random.default_rng(seed)


def test_one_kernel_per_k_found_by_its_pattern():
    assert [k.procedural_name for k in SHMMA_KERNELS] == [
        f"gemm_shmma_k{k}_f16_f32_tile64x64x32_warp32x32" for k in (2, 4, 8)
    ]
    for kernel in SHMMA_KERNELS:
        assert get_kernel(kernel.procedural_name) is kernel
        assert kernel in kernels_for(f"vw:L=16,K={kernel.nnz}")  # beside the CUDA-core VectorSparse SGEMM
        assert f".entry {kernel.entry}(" in kernel.ptx_path.read_text()
    with pytest.raises(ValueError, match="K = 2, 4 or 8"):
        ShmmaKernel(3)


@pytest.mark.parametrize("spec", ["vw:L=16,K=2", "vw:L=8,K=4", "vw:L=16,K=4,axis=col", "vw:L=16", "dense"])
def test_only_its_own_vector_shape_is_supported(spec):
    kernel = get_kernel("gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32")
    ok, reason = kernel.supports(get(spec))
    assert not ok and "implements vw:L=16,K=4,axis=row, not" in reason


@pytest.mark.parametrize("kernel", SHMMA_KERNELS, ids=IDS)
def test_can_implement_ragged_shapes_and_refuses_with_a_reason(kernel):
    for p in SHAPES:
        assert kernel.can_implement(p, vw(kernel)) == (True, "")
    ok, reason = kernel.can_implement(GemmProblem(0, 16, 16), vw(kernel))
    assert not ok and "M, N, K" in reason
    ok, reason = kernel.can_implement(GemmProblem(64 * 65536, 16, 16), vw(kernel))
    assert not ok and "grid" in reason
    ok, reason = kernel.can_implement(GemmProblem(16, 70000, 65536), vw(kernel))
    assert not ok and "32-bit" in reason


def test_offsets_pack_lowest_nibble_first(rng):
    for k, dtype in ((2, np.uint8), (4, np.uint16), (8, np.uint32)):
        offsets = rng.integers(0, 16, (5, 3, k)).astype(np.uint8)
        packed = pack_offsets(offsets)
        assert packed.dtype == dtype
        assert int(packed[1, 2]) == sum(int(o) << (4 * j) for j, o in enumerate(offsets[1, 2]))
        np.testing.assert_array_equal(unpack_offsets(packed, k), offsets)


@pytest.mark.parametrize("kernel", SHMMA_KERNELS, ids=IDS)
def test_prepare_lays_out_whole_tiles_and_the_reference_decodes_them(kernel, rng):
    p = GemmProblem(70, 9, 50)  # 2 row blocks, 4 vectors = 2 k tiles
    w, x = random_operands(p, rng)
    ops = kernel.prepare(w, x, vw(kernel), sparsity(kernel))
    assert ops.names == ["values", "offsets", "B", "C"]
    assert ops["values"].dtype == np.float16 and ops["values"].size == 2 * 2 * 64 * 2 * kernel.nnz
    assert ops["offsets"].nbytes == 2 * 2 * 64 * 2 * kernel.nnz // 2
    mask = vw(kernel).prune(w, sparsity(kernel))
    assert (mask.reshape(-1).sum()) == round(kernel.nnz / 16 * w.size)
    first_block = ops["values"][: 64 * 2 * kernel.nnz].reshape(64, 2, kernel.nnz)  # rows 0..63, vectors 0, 1
    kept_row0 = w[0, :32][mask[0, :32]].astype(np.float16)
    np.testing.assert_array_equal(np.sort(first_block[0][first_block[0] != 0]), np.sort(kept_row0))
    w16, x16 = w.astype(np.float16).astype(np.float64), x.astype(np.float16).astype(np.float64)
    expected = np.where(mask, w16, 0) @ x16
    np.testing.assert_allclose(kernel.reference(ops), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel", SHMMA_KERNELS, ids=IDS)
@pytest.mark.parametrize("p", SHAPES, ids=str)
def test_matches_numpy_on_the_engine(kernel, p):
    check = verify_gemm(kernel, Engine(), p, pattern=vw(kernel), sparsity=sparsity(kernel))
    assert check.ok, str(check)


def test_matches_numpy_on_the_resnet50_layer():
    kernel = get_kernel("gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32")
    check = verify_gemm(kernel, Engine(), GemmProblem(256, 196, 2304), pattern="vw:L=16,K=4", sparsity=0.75)
    assert check.ok, str(check)


@pytest.mark.parametrize("config", ["v100+stc", "v100+stc-pingpong"])
def test_timed_on_the_sparse_tensor_core_configs(config):
    kernel = get_kernel("gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32")
    check = verify_gemm(kernel, Engine(config), GemmProblem(50, 20, 48), pattern="vw:L=16,K=4", sparsity=0.75)
    assert check.ok, str(check)
    # 4 x 2 fragments cover C (64 x 32), 3 k16 steps each; the warps whose fragments lie wholly outside C
    # (columns 32..63 of the block tile) skip the Tensor Core work
    assert check.stats["stc_smma_insts"] == 4 * 2 * 3
    assert check.stats["stc_smma_mean_latency"] == (26 if config == "v100+stc" else 20)


def test_refused_on_a_config_without_the_extension(rng):
    kernel = get_kernel("gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32")
    with pytest.raises(LaunchError, match="stc.enabled"):
        verify_gemm(kernel, Engine("v100"), GemmProblem(16, 16, 16), pattern="vw:L=16,K=4", sparsity=0.75)
    w, x = random_operands(GemmProblem(16, 16, 16), rng)
    with pytest.raises(CannotImplement, match="implements vw:L=16,K=4,axis=row, not dense"):
        kernel.prepare(w, x, get("dense"))


def test_sparser_vectors_cost_fewer_bytes_and_tensor_core_cycles():
    """L = 16 fixes one SHMMA per 16x16x16 tile whatever K, so the instruction count of the Tensor Core is
    the same; the kept work, what falls with density, is the compressed A the kernel reads and the time
    the Tensor Core spends on the K non-zeros of each row."""
    p = GemmProblem(64, 64, 512)
    stats = {}
    for kernel in SHMMA_KERNELS:
        check = verify_gemm(kernel, Engine("v100+stc"), p, pattern=vw(kernel), sparsity=sparsity(kernel))
        assert check.ok, str(check)
        stats[kernel.nnz] = check.stats
    assert {s["stc_smma_insts"] for s in stats.values()} == {4 * 4 * 32}
    for sparse, dense in ((2, 4), (4, 8)):
        assert stats[sparse]["stc_smma_busy_cycles"] < stats[dense]["stc_smma_busy_cycles"]
        assert stats[sparse]["global_load_sectors"] < stats[dense]["global_load_sectors"]

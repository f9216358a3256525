"""Kernel choice through the registry: math units from the PTX, the GPU probe, the tile rule, fallbacks."""

import pytest

from stcsim.harness.kernel_choice import (
    CUDA_CORE,
    TENSOR_CORE,
    check_selector,
    choose_kernel,
    family,
    math_units,
    units_of,
)
from stcsim.kernels import GemmProblem
from stcsim.sparsity import get

WMMA = "gemm_wmma_f16_f32_tile64x64x32_warp32x32"
SIMT = "gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4"
MMA128 = "gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3"
MMA64 = "gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2"
DENSE = get("dense")


def test_math_units_come_from_the_entry_s_instructions():
    assert math_units(WMMA) == math_units(MMA128) == TENSOR_CORE
    assert math_units(SIMT) == math_units("gemm_naive_f32_f32_tile16x16x1") == CUDA_CORE
    assert family(MMA128) == family(MMA64) == "gemm_mma_f16_f32"


def test_v100_runs_the_wmma_gemm_and_cuda_cores_run_the_simt_gemm():
    p = GemmProblem(256, 196, 2304)
    assert choose_kernel(p, DENSE, 0.0, "v100").kernel == WMMA  # mma.sync has no V100 timing
    assert choose_kernel(p, DENSE, 0.0, "v100", CUDA_CORE).kernel == SIMT
    assert choose_kernel(p, DENSE, 0.0, "v100", TENSOR_CORE).fallback == ""


def test_tile_is_the_largest_that_still_covers_every_sm():
    assert choose_kernel(GemmProblem(2048, 2048, 64), DENSE, 0.0, "a100").kernel == MMA128  # 256 CTAs >= 108
    assert choose_kernel(GemmProblem(256, 3136, 64), DENSE, 0.0, "a100").kernel == MMA64  # 50 < 108 <= 196


def test_sm90_configs_run_the_hopper_gemms():
    """The wgmma GEMMs are registered last: h100 takes them (dense and 2:4); a100 refuses their probe."""
    p = GemmProblem(256, 196, 2304)
    assert family(choose_kernel(p, DENSE, 0.0, "h100").kernel) == "gemm_wgmma_f16_f32"
    assert family(choose_kernel(p, get("nm:N=2,M=4"), 0.5, "h100").kernel) == "gemm_wgmma_sp_f16_f32"
    assert family(choose_kernel(p, DENSE, 0.0, "a100").kernel) == "gemm_mma_f16_f32"


def test_two_four_and_tvw_run_their_mma_sp_kernels_on_sm80_configs():
    p = GemmProblem(256, 196, 2304)
    assert family(choose_kernel(p, get("nm:N=2,M=4"), 0.5, "a100").kernel) == "gemm_mma_sp_f16_f32"
    named = choose_kernel(p, get("nm:N=2,M=4"), 0.5, "h100", "gemm_mma_sp_*")
    assert family(named.kernel) == "gemm_mma_sp_f16_f32"
    for config in ("h100", "a100"):
        assert choose_kernel(p, get("tvw:G=128"), 0.75, config).kernel.startswith("spmm_tvw_g128_")


def test_two_four_falls_back_to_dense_on_v100():
    choice = choose_kernel(GemmProblem(256, 196, 2304), get("nm:N=2,M=4"), 0.5, "v100")
    assert choice.kernel == WMMA and choice.pattern == "dense"
    assert "gemm_mma_sp" in choice.fallback and "cannot run on v100" in choice.fallback


def test_a_named_kernel_the_gpu_cannot_run_is_an_error_saying_why():
    with pytest.raises(ValueError, match="cannot run on v100: .*has no timing"):
        choose_kernel(GemmProblem(64, 64, 64), DENSE, 0.0, "v100", MMA128)


def test_selector_names_are_checked_and_globs_pick_a_family():
    check_selector(WMMA)
    check_selector("spmm_extensor_l32_*")  # a family that may not be registered yet
    with pytest.raises(ValueError, match="auto, tensor-core, cuda-core, a kernel name or a glob"):
        check_selector("tensorcore")
    choice = choose_kernel(GemmProblem(2048, 2048, 64), DENSE, 0.0, "h100", "gemm_mma_*")
    assert choice.kernel == MMA128
    assert units_of("gemm_mma_*") == TENSOR_CORE and units_of("no_such_*") == "auto"


def test_a_glob_that_matches_no_kernel_of_the_pattern_falls_back_with_its_name(csr_kernel):
    choice = choose_kernel(GemmProblem(64, 64, 64), get("unstructured"), 0.9, "v100", "spmm_nothing_*")
    assert choice.pattern == "dense" and choice.kernel == WMMA
    assert "no kernel 'spmm_nothing_*' implements the sparsity pattern 'unstructured'" in choice.fallback


def test_a_pattern_without_kernels_falls_back_to_dense_of_the_same_units(dense_only):
    p = GemmProblem(64, 64, 64)
    choice = choose_kernel(p, get("vw:L=16,K=4"), 0.75, "v100", CUDA_CORE)
    assert (choice.kernel, choice.pattern) == (SIMT, "dense")
    assert "no kernel implements the sparsity pattern 'vw:L=16,K=4,axis=row'" in choice.fallback


def test_a_registered_sparse_kernel_is_chosen_without_harness_changes(csr_kernel):
    p = GemmProblem(96, 40, 128)
    choice = choose_kernel(p, get("unstructured"), 0.9, "v100")
    assert (choice.kernel, choice.pattern, choice.fallback) == (csr_kernel, "unstructured", "")
    on_tensor_cores = choose_kernel(p, get("unstructured"), 0.9, "v100", TENSOR_CORE)
    assert on_tensor_cores.kernel == WMMA
    assert f"{csr_kernel} runs on cuda-core" in on_tensor_cores.fallback

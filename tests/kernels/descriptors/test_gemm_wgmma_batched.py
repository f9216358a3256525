"""The strided-batched GEMMs: Hopper's (stcsim.kernels.descriptors.gemm_wgmma.WgmmaBatchedGemmKernel,
ptx_kernels/ gemm_wgmma_batched.cu) and the WMMA tiles' (stcsim.kernels.descriptors.gemm_wmma_batched,
ptx_kernels/ gemm_wmma_batched.cu): numpy on the engine with fresh random operands for batches of 1, 3 and 8
at ragged shapes, one launch of the batch against the same GEMMs one launch each, what they refuse, and the
kernel choice that gives them only batched problems."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.harness.kernel_choice import choose_kernel
from stcsim.kernels import GemmProblem, get_kernel, launch, relative_error, verify_gemm
from stcsim.kernels.descriptors.gemm_wgmma import WGMMA_BATCHED_KERNELS, WGMMA_KERNELS
from stcsim.kernels.descriptors.gemm_wmma_batched import WMMA_BATCHED_KERNELS
from stcsim.kernels.limits import check_launch
from stcsim.kernels.protocol import Kernel
from stcsim.sim import Engine
from stcsim.sparsity import get

BATCHED128, BATCHED256 = WGMMA_BATCHED_KERNELS
DENSE = get("dense")


@pytest.mark.parametrize("kernel", (*WGMMA_BATCHED_KERNELS, *WMMA_BATCHED_KERNELS),
                         ids=lambda k: k.procedural_name)
@pytest.mark.parametrize("batch,m,n,k", [(1, 200, 72, 100), (3, 130, 200, 72), (8, 72, 64, 136)])
def test_matches_numpy_on_the_engine(kernel: Kernel, batch: int, m: int, n: int, k: int) -> None:
    """Fresh random operands each run (verify_gemm without a seed): every C[z] equals A[z] @ B[z]."""
    check = verify_gemm(kernel, Engine(), GemmProblem(m, n, k, batch))
    assert check.ok, str(check)


def test_each_batch_element_is_its_own_product() -> None:
    """C[z] = A[z] @ B[z] for each z (not a product of other elements): against numpy's matmul per z, and no
    element left unwritten (C is poisoned with NaN)."""
    rng = np.random.default_rng()
    a, b = rng.uniform(-1, 1, (3, 40, 70)), rng.uniform(-1, 1, (3, 70, 50))
    ops = BATCHED128.prepare(a, b, DENSE)
    got, _ = launch(BATCHED128, Engine(), ops)
    assert got.shape == (3, 40, 50) and not np.isnan(got).any()
    want = np.stack([a[z].astype(np.float16).astype(np.float64) @ b[z].astype(np.float16).astype(np.float64)
                     for z in range(3)])
    assert relative_error(got, want) < 1e-5


def test_two_dimensional_operands_are_a_batch_of_one() -> None:
    rng = np.random.default_rng(4)
    ops = BATCHED256.prepare(rng.uniform(-1, 1, (64, 32)), rng.uniform(-1, 1, (32, 48)), DENSE)
    assert ops.problem == GemmProblem(64, 48, 32) and ops["A"].shape == (1, 64, 64)
    got, _ = launch(BATCHED256, Engine(), ops)
    assert got.shape == (64, 48) and relative_error(got, BATCHED256.reference(ops)) < 1e-5


def test_one_batched_launch_against_serial_launches_on_h100() -> None:
    """4 GEMMs of 128 x 128 x 256 on h100: one batched launch (4 CTAs side by side) takes about the cycles of
    one of the plain kernel's launches, far below 4 of them, with 4x its wgmma instructions."""
    p = GemmProblem(128, 128, 256, 4)
    batched = verify_gemm(BATCHED128, Engine("h100"), p, seed=1)
    single = verify_gemm(get_kernel("gemm_wgmma_f16_f32_tile128x128x64_stage4"), Engine("h100"),
                         GemmProblem(128, 128, 256), seed=1)
    assert batched.ok and single.ok
    assert batched.stats["hopper_wgmma_insts"] == 4 * single.stats["hopper_wgmma_insts"]
    assert batched.stats["gpu_sim_cycle"] < 1.5 * single.stats["gpu_sim_cycle"]


def test_one_batched_wmma_launch_against_serial_launches_on_v100() -> None:
    """12 GEMMs of 64 x 64 x 64 (BERT-like heads) on v100: one batched launch of the 64 x 64 tile against one
    launch of the unbatched 64 x 64 WMMA kernel: 12x its Tensor Core instructions in about its cycles."""
    tile64 = get_kernel("gemm_wmma_batched_f16_f32_tile64x64x32_warp32x32")
    batched = verify_gemm(tile64, Engine("v100"), GemmProblem(64, 64, 64, 12), seed=2)
    single = verify_gemm(get_kernel("gemm_wmma_f16_f32_tile64x64x32_warp32x32"), Engine("v100"),
                         GemmProblem(64, 64, 64), seed=2)
    assert batched.ok and single.ok
    assert batched.stats["gpu_sim_cycle"] < 1.5 * single.stats["gpu_sim_cycle"]


def test_names_and_refusals() -> None:
    assert get_kernel("gemm_wgmma_batched_f16_f32_tile128x256x64_stage4") is BATCHED256
    assert BATCHED128.batched and BATCHED128.supports(DENSE)[0]
    assert not BATCHED128.supports(get("nm:N=2,M=4"))[0]
    assert BATCHED128.launch_geometry(GemmProblem(300, 200, 64, 5))[0] == (2, 3, 5)
    ok, why = BATCHED128.can_implement(GemmProblem(64, 64, 64, 70000), DENSE)
    assert not ok and "grid" in why
    with pytest.raises(ValueError, match="batch"):
        BATCHED128.prepare(np.ones((2, 8, 8)), np.ones((3, 8, 8)), DENSE)
    # a kernel without a batch dimension refuses a batched problem
    ok, why = check_launch(WGMMA_KERNELS[0], GemmProblem(64, 64, 64, 2), DENSE, lambda _: {})
    assert not ok and "no batch dimension" in why


def test_kernel_choice_gives_batched_kernels_only_batched_problems() -> None:
    """A batch of GEMMs takes a batched family (wgmma on h100, the WMMA tiles on v100), a single GEMM never
    does; CUDA cores have no batched kernel: a ValueError the harness turns into the serial form."""
    batched = choose_kernel(GemmProblem(128, 128, 64, 12), DENSE, 0.0, "h100")
    assert batched.kernel.startswith("gemm_wgmma_batched_")
    single = choose_kernel(GemmProblem(128, 128, 64), DENSE, 0.0, "h100")
    assert "batched" not in single.kernel
    on_v100 = choose_kernel(GemmProblem(128, 128, 64, 12), DENSE, 0.0, "v100")
    assert on_v100.kernel.startswith("gemm_wmma_batched_")
    with pytest.raises(ValueError, match="no batch dimension"):
        choose_kernel(GemmProblem(128, 128, 64, 12), DENSE, 0.0, "v100", "cuda-core")


def test_a_large_batch_is_estimated_from_two_smaller_ones(tmp_path, monkeypatch) -> None:
    """The kernel choice's estimate of 16 GEMMs of 1024 x 1024 x 64 (1,024 thread blocks, 8 waves on h100):
    batches of 5 and 10 (2 and 4 waves) extrapolated to 16, within 4% of the whole launch simulated (3.3%
    since TMA copies go through L2 and DRAM, calibration step 31: waves no longer cost alike; 2% before)."""
    from stcsim.harness import kernel_choice

    monkeypatch.setenv(kernel_choice.CACHE_ENV, str(tmp_path))
    p = GemmProblem(1024, 1024, 64, 16)
    estimate = kernel_choice.estimate_cycles(BATCHED128, p, DENSE, 0.0, "h100")
    assert len(list(tmp_path.glob("kernel_choice/*.json"))) == 2  # the two smaller batches only
    full = kernel_choice.simulate_cycles(BATCHED128, p, DENSE, 0.0, "h100")
    assert abs(estimate / full - 1) < 0.04

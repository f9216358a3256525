"""Kernel descriptors: names, can_implement, launch geometry, arguments, layouts and references."""

import numpy as np
import pytest

from stcsim.kernels import (
    GEMM_KERNELS,
    KERNEL_SET,
    KERNELS,
    GemmProblem,
    OperandLayout,
    get_kernel,
    random_operands,
)
from stcsim.sparsity.dense import Dense

DENSE = Dense()

IDS = [k.procedural_name for k in GEMM_KERNELS]
SHAPES = [GemmProblem(64, 64, 64), GemmProblem(200, 136, 72), GemmProblem(33, 17, 40), GemmProblem(1, 1, 1)]


def test_names_are_procedural_and_unique():
    assert len(KERNELS) == len(KERNEL_SET)
    assert get_kernel("gemm_wmma_f16_f32_tile64x64x32_warp32x32").algorithm == "wmma"
    assert set(IDS) == {
        "gemm_naive_f32_f32_tile16x16x1",
        "gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4",
        "gemm_wmma_global_f16_f32_tile32x32x16_warp16x16",
        "gemm_wmma_f16_f32_tile64x64x32_warp32x32",
        "gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3",
        "gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2",
    }


def test_unknown_name_lists_the_registered_ones():
    with pytest.raises(KeyError, match="gemm_naive_f32_f32_tile16x16x1"):
        get_kernel("gemm_magic")


@pytest.mark.parametrize("kernel", GEMM_KERNELS, ids=IDS)
def test_entry_and_ptx(kernel):
    assert kernel.entry == kernel.procedural_name
    assert kernel.ptx_path.is_file()
    assert f".entry {kernel.entry}(" in kernel.ptx_path.read_text()


@pytest.mark.parametrize("kernel", GEMM_KERNELS, ids=IDS)
@pytest.mark.parametrize("p", SHAPES, ids=str)
def test_can_implement_ragged_shapes(kernel, p):
    assert kernel.can_implement(p, DENSE) == (True, "")


@pytest.mark.parametrize("kernel", GEMM_KERNELS, ids=IDS)
def test_can_implement_rejects_with_a_reason(kernel):
    ok, reason = kernel.can_implement(GemmProblem(0, 16, 16), DENSE)
    assert not ok and "M, N, K" in reason
    ok, reason = kernel.can_implement(GemmProblem(kernel.block_tile.m * 65536, 16, 16), DENSE)
    assert not ok and "grid" in reason
    ok, reason = kernel.can_implement(GemmProblem(65536, 16, 65536), DENSE)
    assert not ok and "32-bit" in reason


@pytest.mark.parametrize("kernel", GEMM_KERNELS, ids=IDS)
@pytest.mark.parametrize("p", SHAPES, ids=str)
def test_launch_geometry_covers_c(kernel, p):
    grid, block, shared = kernel.launch_geometry(p)
    tile = kernel.block_tile
    assert grid[0] * tile.n >= p.n > (grid[0] - 1) * tile.n
    assert grid[1] * tile.m >= p.m > (grid[1] - 1) * tile.m
    assert grid[2] == 1
    assert 32 <= np.prod(block) <= 1024 and np.prod(block) % 32 == 0
    assert 0 <= shared <= 48 * 1024


def test_multistage_shared_memory_holds_every_stage():
    for kernel in GEMM_KERNELS:
        if kernel.algorithm == "mma":
            t = kernel.block_tile
            assert kernel.dynamic_shared_bytes == kernel.stages * (t.m * t.k + t.k * t.n) * 2


@pytest.mark.parametrize("kernel", GEMM_KERNELS, ids=IDS)
def test_args_follow_the_layout(kernel):
    p = GemmProblem(33, 17, 40)
    operands = kernel.prepare(*random_operands(p, np.random.default_rng(5)), DENSE)
    args = kernel.args(operands, {"A": 0x1000, "B": 0x2000, "C": 0x3000})
    align = kernel.layout.align_ab
    assert args[:6] == [0x1000, 0x2000, 0x3000, 33, 17, 40]
    assert args[6] == -(-40 // align) * align and args[7] == -(-17 // align) * align and args[8] == 17


def test_layout_pads_rows_with_zeros():
    layout = OperandLayout("float16", "float16", align_ab=8)
    p = GemmProblem(3, 5, 6)
    a = np.arange(18, dtype=np.float64).reshape(3, 6) + 1
    packed = layout.pack_a(a)
    assert packed.shape == (3, layout.lda(p)) == (3, 8) and packed.dtype == np.float16
    assert packed.flags.c_contiguous
    np.testing.assert_array_equal(packed[:, :6], a)
    assert not packed[:, 6:].any()
    assert layout.pack_b(np.ones((6, 5))).shape == (6, 8)
    assert layout.c_shape(p) == (3, 5)
    assert layout.type_tag == "f16_f32"


def test_layout_rejects_unknown_dtype():
    with pytest.raises(ValueError, match="allowed"):
        OperandLayout("int4", "float16")


@pytest.mark.parametrize("kernel", GEMM_KERNELS, ids=IDS)
def test_reference_rounds_inputs_to_the_kernel_types(kernel):
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (9, 11))
    b = rng.uniform(-1, 1, (11, 5))
    dtype = kernel.layout.a_dtype
    expected = a.astype(dtype).astype(np.float64) @ b.astype(dtype).astype(np.float64)
    ref = kernel.reference(kernel.prepare(a, b, DENSE))
    assert ref.dtype == np.float64
    np.testing.assert_allclose(ref, expected, rtol=1e-12)
    assert kernel.tolerance == (1e-2 if dtype == "float16" else 1e-5)

"""The kernel protocol end to end: a sparse kernel (CSR SpMM, PTX written here) plugs in with one descriptor
class and one registry row, runs on the simulator and matches numpy through its pattern's decode."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from stcsim.kernels import (
    GEMM_KERNELS,
    KERNEL_SET,
    CannotImplement,
    GemmProblem,
    KernelRegistry,
    OperandArray,
    Operands,
    get_kernel,
    poisoned,
    random_operands,
    relative_error,
    run_gemm,
    verify_gemm,
)
from stcsim.kernels.descriptors.gemm_tiles import TILE_GEMM_KERNELS
from stcsim.kernels.descriptors.gemm_wgmma import WGMMA_BATCHED_KERNELS, WGMMA_KERNELS
from stcsim.kernels.descriptors.gemm_wmma_batched import WMMA_BATCHED_KERNELS
from stcsim.kernels.problem import ceil_div
from stcsim.kernels.protocol import Dim3, missing_members, require, supports_family
from stcsim.sparsity import Pattern
from stcsim.sparsity.csr import CSRFormat
from stcsim.sparsity.unstructured import Unstructured

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

CSR_SPMM_PTX = """\
//
// Test-only kernel: Y (m x n, f32) = W @ X with W in CSR (row_ptr, col_idx: int32; values: f32), X dense
// row-major (k x n, f32). One thread per element of Y: grid (ceil(n/16), ceil(m/16)), block (16, 16).
//
.version 8.0
.target sm_80
.address_size 64

.visible .entry spmm_csr_f32_f32_thread1x1(
	.param .u64 spmm_row_ptr,
	.param .u64 spmm_col_idx,
	.param .u64 spmm_values,
	.param .u64 spmm_x,
	.param .u64 spmm_y,
	.param .u32 spmm_m,
	.param .u32 spmm_n
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<16>;
	.reg .f32 	%f<4>;

	ld.param.u64 	%rd1, [spmm_row_ptr];
	ld.param.u64 	%rd2, [spmm_col_idx];
	ld.param.u64 	%rd3, [spmm_values];
	ld.param.u64 	%rd4, [spmm_x];
	ld.param.u64 	%rd5, [spmm_y];
	ld.param.u32 	%r1, [spmm_m];
	ld.param.u32 	%r2, [spmm_n];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r6, %r3, %r4, %r5;
	mov.u32 	%r3, %ctaid.y;
	mov.u32 	%r4, %ntid.y;
	mov.u32 	%r5, %tid.y;
	mad.lo.s32 	%r7, %r3, %r4, %r5;
	setp.ge.u32 	%p1, %r6, %r2;
	setp.ge.u32 	%p2, %r7, %r1;
	or.pred 	%p3, %p1, %p2;
	@%p3 bra 	$L__BB0_4;
	mul.wide.u32 	%rd6, %r7, 4;
	add.s64 	%rd7, %rd1, %rd6;
	ld.global.u32 	%r8, [%rd7];
	ld.global.u32 	%r9, [%rd7+4];
	mov.f32 	%f1, 0f00000000;
	setp.ge.s32 	%p1, %r8, %r9;
	@%p1 bra 	$L__BB0_3;
$L__BB0_2:
	mul.wide.s32 	%rd8, %r8, 4;
	add.s64 	%rd9, %rd2, %rd8;
	ld.global.u32 	%r10, [%rd9];
	add.s64 	%rd10, %rd3, %rd8;
	ld.global.f32 	%f2, [%rd10];
	mad.lo.s32 	%r11, %r10, %r2, %r6;
	mul.wide.s32 	%rd11, %r11, 4;
	add.s64 	%rd12, %rd4, %rd11;
	ld.global.f32 	%f3, [%rd12];
	fma.rn.f32 	%f1, %f2, %f3, %f1;
	add.s32 	%r8, %r8, 1;
	setp.lt.s32 	%p1, %r8, %r9;
	@%p1 bra 	$L__BB0_2;
$L__BB0_3:
	mad.lo.s32 	%r12, %r7, %r2, %r6;
	mul.wide.u32 	%rd13, %r12, 4;
	add.s64 	%rd14, %rd5, %rd13;
	st.global.f32 	[%rd14], %f1;
$L__BB0_4:
	ret;
}
"""


@dataclass(frozen=True)
class CsrSpmmKernel:
    """Test-only sparse kernel: Y = W @ X, W in unstructured pattern's CSR, one thread per element of Y."""

    ptx_path: Path
    threads: Dim3 = (16, 16, 1)

    procedural_name: ClassVar[str] = "spmm_csr_f32_f32_thread1x1"
    entry: ClassVar[str] = "spmm_csr_f32_f32_thread1x1"
    pattern_name: ClassVar[str] = "unstructured"
    tolerance: ClassVar[float] = 1e-5

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        return supports_family(self, pattern)

    def can_implement(self, problem: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        ok, reason = self.supports(pattern)
        if ok and min(problem.m, problem.n, problem.k) < 1:
            return False, f"M, N, K must be >= 1, got {problem}"
        return ok, reason

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        problem = GemmProblem.of(np.shape(weights), np.shape(activations))
        require(self, problem, pattern)
        w = np.asarray(weights, dtype=np.float32)
        csr = pattern.encode(w, pattern.prune(w, sparsity))
        arrays = (
            OperandArray("row_ptr", csr.indptr),
            OperandArray("col_idx", csr.indices),
            OperandArray("values", csr.values),
            OperandArray("x", np.asarray(activations, dtype=np.float32)),
            poisoned("y", (problem.m, problem.n), np.float32),
        )
        return Operands(problem, pattern, arrays)

    def launch_geometry(self, problem: GemmProblem) -> tuple[Dim3, Dim3, int]:
        grid = (ceil_div(problem.n, self.threads[0]), ceil_div(problem.m, self.threads[1]), 1)
        return grid, self.threads, 0

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        p = operands.problem
        return [pointers[name] for name in ("row_ptr", "col_idx", "values", "x", "y")] + [p.m, p.n]

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        return outputs["y"]

    def reference(self, operands: Operands) -> np.ndarray:
        p = operands.problem
        csr = CSRFormat((p.m, p.k), operands["row_ptr"], operands["col_idx"], operands["values"])
        return operands.pattern.decode(csr).astype(np.float64) @ operands["x"].astype(np.float64)


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random operands on every run (the seed is printed for a failing test)."""
    seed = int(np.random.SeedSequence().generate_state(1)[0])
    print(f"operand seed {seed}")
    return np.random.default_rng(seed)


@pytest.fixture
def csr_kernel(tmp_path: Path) -> CsrSpmmKernel:
    path = tmp_path / "spmm_csr.ptx"
    path.write_text(CSR_SPMM_PTX)
    return CsrSpmmKernel(path)


def test_the_test_kernel_is_a_complete_descriptor(csr_kernel):
    assert missing_members(csr_kernel) == []


def test_one_class_and_one_row_make_the_pattern_runnable(csr_kernel, rng):
    registry = KernelRegistry((*KERNEL_SET, csr_kernel))
    found = registry.for_pattern("unstructured")[-1]
    assert found is csr_kernel
    dense = (*GEMM_KERNELS, *TILE_GEMM_KERNELS, *WMMA_BATCHED_KERNELS,
             *(k for k in WGMMA_KERNELS if not k.sparse), *WGMMA_BATCHED_KERNELS)
    assert registry.for_pattern("dense") == dense
    p = GemmProblem(37, 21, 53)
    a, b = random_operands(p, rng)
    y, stats = run_gemm(found, Engine(), a, b, pattern="unstructured", sparsity=0.8)
    mask = Unstructured().prune(a, 0.8)
    assert mask.sum() == round(0.2 * a.size)
    expected = (np.where(mask, a, 0).astype(np.float64)) @ b.astype(np.float64)
    assert relative_error(y, expected) < 1e-6
    assert stats["warp_insts"] > 0


def test_prepare_lays_out_values_metadata_and_dense_operands(csr_kernel, rng):
    p = GemmProblem(9, 4, 30)
    a, b = random_operands(p, rng)
    ops = csr_kernel.prepare(a, b, Unstructured(), sparsity=0.5)
    assert ops.names == ["row_ptr", "col_idx", "values", "x", "y"]
    assert ops.dtypes == {"row_ptr": np.int32, "col_idx": np.int32, "values": np.float32, "x": np.float32,
                          "y": np.float32}
    assert ops["row_ptr"].shape == (10,) and ops["row_ptr"][-1] == ops["values"].size == 135
    assert [o.name for o in ops.outputs] == ["y"] and np.isnan(ops["y"]).all()
    kept = np.zeros(a.shape, dtype=bool)
    kept[np.repeat(np.arange(9), np.diff(ops["row_ptr"])), ops["col_idx"]] = True
    np.testing.assert_array_equal(ops["values"], a[kept])
    expected = np.where(kept, a, 0).astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(csr_kernel.reference(ops), expected, rtol=1e-12)


@pytest.mark.parametrize("config", [None, "v100"])
def test_the_sparse_kernel_verifies_on_the_engine(csr_kernel, config):
    check = verify_gemm(csr_kernel, Engine(config), GemmProblem(40, 24, 64), pattern="unstructured",
                        sparsity=0.7)
    assert check.ok, str(check)
    assert check.pattern == "unstructured"
    assert ("gpu_sim_cycle" in check.stats) == (config is not None)


def test_work_follows_the_nonzeros(csr_kernel):
    p = GemmProblem(32, 16, 64)
    checks = {s: verify_gemm(csr_kernel, Engine(), p, pattern="unstructured", sparsity=s) for s in (0.5, 0.9)}
    insts = {s: c.stats["warp_insts"] for s, c in checks.items()}
    assert insts[0.5] > 3 * insts[0.9]


def test_kernels_refuse_patterns_they_do_not_consume(csr_kernel, rng):
    a, b = random_operands(GemmProblem(8, 8, 8), rng)
    dense = get_kernel("gemm_naive_f32_f32_tile16x16x1")
    with pytest.raises(CannotImplement, match="implements the dense pattern, not unstructured"):
        dense.prepare(a, b, Unstructured(), 0.5)
    with pytest.raises(CannotImplement, match="implements the unstructured pattern, not vw:L=16"):
        run_gemm(csr_kernel, Engine(), a, b, pattern="vw:L=16,K=4", sparsity=0.75)
    with pytest.raises(ValueError, match="cannot run 0x8x8"):
        csr_kernel.prepare(np.ones((0, 8)), b, Unstructured())

"""CUDA Core Generic: the CSR SpMM on the simulator, against numpy through the unstructured decode."""

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
from stcsim.kernels.descriptors.spmm_csr import CsrSpmmKernel
from stcsim.kernels.problem import ceil_div
from stcsim.kernels.ptx_info import entry_params
from stcsim.sparsity import get as get_pattern
from stcsim.sparsity.csr import CSRFormat
from stcsim.sparsity.unstructured import Unstructured

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

KERNEL = get_kernel("spmm_csr_f32_f32_tile4x64_warp1x64")
SHAPES = [GemmProblem(64, 64, 64), GemmProblem(200, 136, 72), GemmProblem(33, 17, 40), GemmProblem(1, 1, 1)]


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random operands on every run (the seed is printed for a failing test)."""
    seed = int(np.random.SeedSequence().generate_state(1)[0])
    print(f"operand seed {seed}")
    return np.random.default_rng(seed)


def test_the_registry_row_is_the_default_descriptor():
    assert KERNEL == CsrSpmmKernel() and KERNEL in kernels_for("unstructured")
    assert KERNEL.launch_geometry(GemmProblem(256, 196, 2304)) == ((4, 64, 1), (32, 4, 1), 0)
    (params,) = entry_params(KERNEL.ptx_path.read_text()).values()
    assert [p.ptx_type for p in params] == ["u64"] * 5 + ["u32"] * 4


@pytest.mark.parametrize("sparsity", [0.0, 0.5, 0.96])
@pytest.mark.parametrize("p", SHAPES, ids=str)
def test_matches_numpy(p, sparsity):
    check = verify(KERNEL, Engine(), p, pattern="unstructured", sparsity=sparsity)
    assert check.ok, str(check)


def test_matches_numpy_on_the_resnet50_layer():
    check = verify(KERNEL, Engine(), GemmProblem(256, 196, 2304), pattern="unstructured", sparsity=0.96)
    assert check.ok, str(check)


def test_runs_timed_on_the_v100():
    check = verify(KERNEL, Engine("v100"), GemmProblem(64, 72, 96), pattern="unstructured", sparsity=0.9)
    assert check.ok, str(check)
    assert check.stats["gpu_sim_cycle"] > 0


def test_prepare_lays_out_the_csr_of_the_pruned_weights(rng):
    w, x = rng.uniform(-1, 1, (9, 30)), rng.uniform(-1, 1, (30, 5))
    ops = KERNEL.prepare(w, x, Unstructured(), 0.5)
    assert ops.names == ["row_ptr", "col_idx", "values", "x", "y"]
    assert ops.dtypes == {"row_ptr": np.int32, "col_idx": np.int32, "values": np.float32, "x": np.float32,
                          "y": np.float32}
    mask = Unstructured().prune(w.astype(np.float32), 0.5)
    csr = CSRFormat.from_masked(w.astype(np.float32), mask)
    for name, expected in (("row_ptr", csr.indptr), ("col_idx", csr.indices), ("values", csr.values)):
        np.testing.assert_array_equal(ops[name], expected)
    assert np.isnan(ops["y"]).all()


def test_weights_that_keep_nothing_give_zeros():
    w = np.full((3, 1), 0.5)
    x = np.full((1, 70), 2.0)
    ops = KERNEL.prepare(w, x, Unstructured(), 0.9)
    assert ops["row_ptr"].tolist() == [0, 0, 0, 0] and ops["values"].size == 1
    y, _ = launch(KERNEL, Engine(), ops)
    np.testing.assert_array_equal(y, np.zeros((3, 70)))


def test_only_the_stored_nonzeros_are_multiplied(rng):
    """One fma per stored non-zero and column of Y: warp FMAs = 2 (columns per lane) x nnz x column strips,
    and rows of X that no non-zero references may hold NaN without reaching Y."""
    p = GemmProblem(5, 70, 48)
    w, x = random_operands(p, rng)
    ops = KERNEL.prepare(w, x, Unstructured(), 0.9)
    unused = np.setdiff1d(np.arange(p.k), ops["col_idx"])
    assert unused.size > 0
    x[unused] = np.nan
    ops = KERNEL.prepare(w, x, Unstructured(), 0.9)
    y, stats = launch(KERNEL, Engine(), ops)
    kept = np.where(Unstructured().prune(w, 0.9), w, 0)
    used = np.setdiff1d(np.arange(p.k), unused)
    expected = kept[:, used].astype(np.float64) @ x[used].astype(np.float64)
    assert relative_error(y, expected) < KERNEL.tolerance
    assert stats["warp_insts_FP32"] == 2 * ops["row_ptr"][-1] * ceil_div(p.n, 64)


def test_instruction_counts_fall_with_density():
    p = GemmProblem(64, 64, 256)
    runs = [verify(KERNEL, Engine(), p, pattern="unstructured", sparsity=s) for s in (0.0, 0.5, 0.9, 0.96)]
    stats = [run.stats for run in runs]
    for key in ("warp_insts", "gpu_sim_insn", "warp_insts_FP32"):
        counts = [s[key] for s in stats]
        assert counts == sorted(counts, reverse=True) and len(set(counts)) == 4, (key, counts)
    assert stats[0]["warp_insts"] > 10 * stats[3]["warp_insts"]


def test_refuses_other_patterns_and_empty_problems(rng):
    w, x = rng.uniform(-1, 1, (8, 16)), rng.uniform(-1, 1, (16, 8))
    with pytest.raises(CannotImplement, match="implements the unstructured pattern, not vw:L=16"):
        KERNEL.prepare(w, x, get_pattern("vw:L=16,K=4"), 0.75)
    with pytest.raises(CannotImplement, match="M, N, K must be >= 1"):
        KERNEL.prepare(np.ones((0, 16)), x, Unstructured())
    ok, reason = KERNEL.can_implement(GemmProblem(300_000, 8, 8), Unstructured())
    assert not ok and "grid" in reason
    ok, reason = KERNEL.can_implement(GemmProblem(8, 2**16, 2**16), Unstructured())
    assert not ok and "X has 4294967296 elements" in reason

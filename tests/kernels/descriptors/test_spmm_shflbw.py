"""The Shfl-BW SpMM (paper 000) on the simulator, against numpy through the shflbw decode: the sm_80 mma.sync
kernel and its WMMA variant for the V100 and the T4."""

from __future__ import annotations

import numpy as np
import pytest

import stcsim.harness.kernel_choice as kc
from stcsim.kernels import CannotImplement, GemmProblem, get_kernel, kernels_for, verify_gemm
from stcsim.kernels.descriptors.spmm_shflbw import SHFLBW_KERNELS, SHFLBW_WMMA_KERNELS
from stcsim.kernels.ptx_info import entry_params, opcodes
from stcsim.kernels.run import launch
from stcsim.sparsity import get as get_pattern

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

SMALL, LARGE = SHFLBW_KERNELS
RUNS = [
    pytest.param(SMALL, 32, GemmProblem(64, 128, 64), 0.5, id="v32-64x128x64"),
    pytest.param(SMALL, 32, GemmProblem(100, 72, 200), 0.75, id="v32-ragged"),
    pytest.param(SMALL, 64, GemmProblem(33, 17, 40), 0.0, id="v64-on-32-rows-ragged"),
    pytest.param(LARGE, 64, GemmProblem(70, 136, 600), 0.5, id="v64-three-meta-chunks"),
    pytest.param(LARGE, 64, GemmProblem(1, 1, 1), 0.0, id="v64-1x1x1"),
]
W32X64, W64X64, W32X32 = SHFLBW_WMMA_KERNELS
WMMA_RUNS = [  # (kernel, V, problem, sparsity, config): ragged M, N, K and kept counts, V = 32 and 64
    pytest.param(W32X64, 32, GemmProblem(64, 128, 64), 0.5, "v100", id="w32x64-v32-64x128x64-v100"),
    pytest.param(W32X64, 32, GemmProblem(70, 72, 200), 0.75, "t4", id="w32x64-v32-ragged-past-rows-t4"),
    pytest.param(W32X64, 64, GemmProblem(33, 17, 40), 0.0, "v100", id="w32x64-v64-ragged-v100"),
    pytest.param(W32X32, 32, GemmProblem(100, 37, 130), 0.6, "v100", id="w32x32-v32-ragged-v100"),
    pytest.param(W32X32, 64, GemmProblem(65, 50, 90), 0.3, "t4", id="w32x32-v64-ragged-t4"),
    pytest.param(W64X64, 64, GemmProblem(70, 136, 600), 0.5, "t4", id="w64x64-v64-ten-k-tiles-t4"),
    pytest.param(W64X64, 64, GemmProblem(130, 9, 77), 0.9, "v100", id="w64x64-v64-ragged-v100"),
    pytest.param(W64X64, 64, GemmProblem(1, 1, 1), 0.0, "t4", id="w64x64-v64-1x1x1-t4"),
]
TENSOR_OPCODES = ("wmma", "mma", "wgmma", "ldmatrix", "cp")


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random operands on every run (the seed is printed for a failing test)."""
    seed = int(np.random.SeedSequence().generate_state(1)[0])
    print(f"operand seed {seed}")
    return np.random.default_rng(seed)


def test_registry_rows_and_entries():
    assert kernels_for("shflbw:V=32") == (W32X64, W32X32, SMALL)
    assert kernels_for("shflbw:V=64") == (*SHFLBW_WMMA_KERNELS, *SHFLBW_KERNELS)
    assert get_kernel("spmm_shflbw_f16_f32_tile64x128x32_warp32x64_stage3") is LARGE
    params = entry_params(SMALL.ptx_path.read_text())
    assert set(params) == {k.entry for k in SHFLBW_KERNELS}
    assert [p.ptx_type for p in params[SMALL.entry]] == ["u64"] * 6 + ["u32"] * 7


def test_refuses_other_patterns_and_group_heights():
    for spec in ("shflbw:V=16", "shflbw:V=128", "dense", "tw:G=64"):
        assert not SMALL.supports(get_pattern(spec))[0]
    assert "multiple of 64" in LARGE.supports(get_pattern("shflbw:V=32"))[1]
    with pytest.raises(CannotImplement, match="V=32"):
        LARGE.prepare(np.ones((64, 64)), np.ones((64, 8)), get_pattern("shflbw:V=32"))
    assert not SMALL.can_implement(GemmProblem(0, 8, 8), get_pattern("shflbw:V=32"))[0]


def test_launch_geometry_covers_the_stored_rows():
    assert SMALL.launch_geometry(GemmProblem(100, 300, 64)) == ((3, 4, 1), (128, 1, 1), 31744)
    assert LARGE.launch_geometry(GemmProblem(100, 300, 64)) == ((3, 2, 1), (128, 1, 1), 37888)


@pytest.mark.parametrize(("kernel", "v", "p", "sparsity"), RUNS)
def test_matches_numpy(kernel, v, p, sparsity):
    check = verify_gemm(kernel, Engine(), p, pattern=f"shflbw:V={v}", sparsity=sparsity)
    assert check.ok, str(check)


def test_runs_timed_on_the_h100():
    p = GemmProblem(128, 128, 256)
    check = verify_gemm(LARGE, Engine("h100"), p, pattern="shflbw:V=64", sparsity=0.75)
    assert check.ok, str(check)
    assert check.stats["gpu_sim_cycle"] > 0


def test_prepare_stitches_each_group_into_rows_of_a(rng):
    w, x = rng.uniform(-1, 1, (70, 50)), rng.uniform(-1, 1, (50, 9))
    pattern = get_pattern("shflbw:V=32")
    ops = SMALL.prepare(w, x, pattern, 0.5)
    fmt = pattern.encode(w, pattern.prune(w, 0.5))
    assert ops.names == ["A", "B", "C", "row_indices", "col_ptr", "col_indices"]
    assert ops["A"].shape == (96, 32) and ops["A"].dtype == np.float16 and ops["B"].shape == (50, 16)
    np.testing.assert_array_equal(ops["row_indices"], fmt.row_indices)
    for g in range(3):
        cols = fmt.col_indices[fmt.col_ptr[g] : fmt.col_ptr[g + 1]]
        rows = fmt.row_indices[32 * g : 32 * (g + 1)]
        real = rows < 70
        expected = w[rows[real]][:, cols].astype(np.float16)
        np.testing.assert_array_equal(ops["A"][32 * g : 32 * (g + 1)][real, : len(cols)], expected)
        assert not ops["A"][32 * g : 32 * (g + 1), len(cols) :].any()
    assert np.isnan(ops["C"]).all()
    w16, x16 = (m.astype(np.float16).astype(np.float64) for m in (pattern.decode(fmt), x))
    np.testing.assert_allclose(SMALL.reference(ops), w16 @ x16, rtol=1e-12, atol=1e-12)


def test_wmma_registry_rows_names_and_entries():
    assert [k.procedural_name for k in SHFLBW_WMMA_KERNELS] == [
        "spmm_shflbw_wmma_f16_f32_tile32x64x32_warp16x32",
        "spmm_shflbw_wmma_f16_f32_tile64x64x32_warp32x32",
        "spmm_shflbw_wmma_f16_f32_tile32x32x32_warp16x16",
    ]
    assert get_kernel("spmm_shflbw_wmma_f16_f32_tile64x64x32_warp32x32") is W64X64
    assert kc.family(W32X64.procedural_name) != kc.family(SMALL.procedural_name)
    assert W64X64.instruction == "wmma.mma.m16n16k16" and W64X64.ptx_file == "spmm_shflbw_wmma.ptx"
    params = entry_params(W32X64.ptx_path.read_text())
    assert set(params) == {k.entry for k in SHFLBW_WMMA_KERNELS}
    assert {tuple(p.ptx_type for p in ps) for ps in params.values()} == {("u64",) * 6 + ("u32",) * 7}
    assert "multiple of 64" in W64X64.supports(get_pattern("shflbw:V=32"))[1]
    assert not W32X32.supports(get_pattern("shflbw:V=16"))[0]


def test_wmma_ptx_uses_only_wmma_on_the_tensor_cores():
    """No cp.async, ldmatrix or mma.sync (sm_80+): the V100 and T4 configs run every entry."""
    tensor = {op for op in opcodes(W32X64.ptx_path.read_text()) if op.split(".")[0] in TENSOR_OPCODES}
    assert tensor and all(op.startswith("wmma.") for op in tensor), sorted(tensor)


def test_wmma_launch_geometry_covers_the_stored_rows():
    """Grid (ceil(N / BN), round_up(M, 64) / BM), 128 threads, static shared memory only."""
    p = GemmProblem(100, 300, 64)
    assert W32X64.launch_geometry(p) == ((5, 4, 1), (128, 1, 1), 0)
    assert W64X64.launch_geometry(p) == ((5, 2, 1), (128, 1, 1), 0)
    assert W32X32.launch_geometry(p) == ((10, 4, 1), (128, 1, 1), 0)


@pytest.mark.parametrize(("kernel", "v", "p", "sparsity", "config"), WMMA_RUNS)
def test_wmma_matches_numpy_on_the_v100_and_t4(kernel, v, p, sparsity, config):
    check = verify_gemm(kernel, Engine(config), p, pattern=f"shflbw:V={v}", sparsity=sparsity)
    assert check.ok, str(check)
    assert check.stats["gpu_sim_cycle"] > 0


@pytest.mark.parametrize("config", ["v100", "t4"])
def test_wmma_matches_the_pruned_product_computed_by_numpy(rng, config):
    """Against fp16(prune(W)) @ fp16(X) straight from the pattern's mask (not through the kernel's
    reference); the 64x64 tile, V = 64, several k tiles, ragged N and padding rows."""
    w, x = rng.uniform(-1, 1, (150, 300)), rng.uniform(-1, 1, (300, 70))
    pattern = get_pattern("shflbw:V=64")
    out, stats = launch(W64X64, Engine(config), W64X64.prepare(w, x, pattern, 0.75))
    pruned = np.where(pattern.prune(w, 0.75), w, 0.0).astype(np.float16).astype(np.float64)
    expected = pruned @ x.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-2 * np.abs(expected).max())
    assert stats["shared_bytes_per_cta"] == 13824


def test_wmma_groups_that_keep_nothing_write_zeros():
    """A kept count of 0 runs no k tile: every D row is still written (zeros, not the NaN poison)."""
    w, x = np.ones((40, 8)), np.ones((8, 20))
    pattern = get_pattern("shflbw:V=32")
    ops = W32X64.prepare(w, x, pattern, 0.95)
    assert ops["col_ptr"][-1] == 0
    out, _ = launch(W32X64, Engine("t4"), ops)
    np.testing.assert_array_equal(out, np.zeros((40, 20)))


def test_mma_sync_kernels_are_refused_by_the_v100_and_t4_configs():
    with pytest.raises(ValueError, match="cp.async"):
        verify_gemm(SMALL, Engine("t4"), GemmProblem(64, 64, 64), pattern="shflbw:V=32", sparsity=0.5)


@pytest.fixture
def choice_cache(tmp_path, monkeypatch):
    """Candidate cycles of the kernel choice cached in the test's own folder (and not from another test)."""
    monkeypatch.setenv(kc.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(kc, "_simulated", {})


@pytest.mark.usefixtures("choice_cache")
@pytest.mark.parametrize(("config", "family"), [("v100", "spmm_shflbw_wmma_f16_f32"),
                                                ("t4", "spmm_shflbw_wmma_f16_f32"),
                                                ("a100", "spmm_shflbw_f16_f32")])
def test_kernel_choice_runs_wmma_on_the_v100_and_t4_and_mma_sync_on_the_a100(config, family):
    """The WMMA family is registered just before the mma.sync one: where both run (a100) the later one wins;
    where mma.sync is refused (v100, t4) the WMMA one runs, with no dense fallback."""
    p = GemmProblem(128, 96, 256)
    for v in (32, 64):
        choice = kc.choose_kernel(p, get_pattern(f"shflbw:V={v}"), 0.75, config)
        assert (kc.family(choice.kernel), choice.fallback) == (family, ""), choice
        fixed = kc.choose_kernel(p, get_pattern(f"shflbw:V={v}"), 0.75, config, "fixed:auto")
        assert kc.family(fixed.kernel) == family

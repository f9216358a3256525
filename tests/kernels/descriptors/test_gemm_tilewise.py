"""The tile-wise (TW) and tile-element-wise (TEW) GEMMs (paper 002) on the simulator, against numpy through
the tw / tew decode."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.kernels import CannotImplement, GemmProblem, get_kernel, kernels_for, launch, relative_error
from stcsim.kernels import verify_gemm as verify
from stcsim.kernels.descriptors.gemm_tilewise import TEW_KERNELS, TILEWISE_KERNELS
from stcsim.kernels.ptx_info import entry_params
from stcsim.sparsity import get as get_pattern

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

TW32, TW64 = TILEWISE_KERNELS
TEW32, TEW64 = TEW_KERNELS
RUNS = [
    pytest.param(TW32, "tw:G=32", GemmProblem(64, 128, 64), 0.5, id="tw-g32"),
    pytest.param(TW64, "tw:G=128", GemmProblem(200, 72, 300), 0.75, id="tw-g128-ragged"),
    pytest.param(TW32, "tw:G=64", GemmProblem(33, 17, 40), 0.0, id="tw-dense-ragged"),
    pytest.param(TEW32, "tew:G=32", GemmProblem(70, 20, 30), 0.9, id="tew-g32-ragged"),
    pytest.param(TEW64, "tew:G=64,delta=0.05", GemmProblem(130, 136, 200), 0.6, id="tew-g64-ragged"),
]


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random operands on every run (the seed is printed for a failing test)."""
    seed = int(np.random.SeedSequence().generate_state(1)[0])
    print(f"operand seed {seed}")
    return np.random.default_rng(seed)


def test_registry_rows_and_entries():
    assert kernels_for("tw:G=32") == (TW32,)
    assert kernels_for("tw:G=128") == TILEWISE_KERNELS
    assert kernels_for("tew:G=64") == TEW_KERNELS
    assert get_kernel("gemm_tew_f16_f32_tile64x128x32_warp32x64_stage3") is TEW64
    params = entry_params(TW32.ptx_path.read_text())
    assert set(params) == {k.entry for k in TILEWISE_KERNELS + TEW_KERNELS}
    assert [p.ptx_type for p in params[TW32.entry]] == ["u64"] * 6 + ["u32"] * 8
    assert [p.ptx_type for p in params[TEW32.entry]] == ["u64"] * 6 + ["u32"] * 8 + ["u64"] * 5


def test_refuses_other_patterns_and_granularities():
    assert "multiple of 32" in TW32.supports(get_pattern("tw:G=48"))[1]
    assert "multiple of 64" in TEW64.supports(get_pattern("tew:G=32"))[1]
    for spec in ("tew:G=64", "dense", "shflbw:V=64"):
        assert not TW64.supports(get_pattern(spec))[0]
    assert not TEW64.supports(get_pattern("tw:G=64"))[0]
    with pytest.raises(CannotImplement, match="G=32"):
        TW64.prepare(np.ones((64, 64)), np.ones((64, 8)), get_pattern("tw:G=32"))


@pytest.mark.parametrize(("kernel", "spec", "p", "sparsity"), RUNS)
def test_matches_numpy(kernel, spec, p, sparsity):
    check = verify(kernel, Engine(), p, pattern=spec, sparsity=sparsity)
    assert check.ok, str(check)


def test_pruned_rows_and_the_remainder_are_exercised(rng):
    """The TEW run writes rows TW pruned and adds a remainder that changes the result."""
    w, x = rng.uniform(-1, 1, (130, 200)), rng.uniform(-1, 1, (200, 40))
    pattern = get_pattern("tew:G=64,delta=0.05")
    ops = TEW64.prepare(w, x, pattern, 0.6)
    n_kept = len(ops["cto_rows"]) - 1
    assert 0 < n_kept < 130 and ops["ew_row_ptr"][-1] > 0
    result, _ = launch(TEW64, Engine(), ops)
    ref = TEW64.reference(ops)
    assert relative_error(result, ref) < TEW64.tolerance
    kept = ops["cto_rows"][:n_kept] + np.arange(n_kept)
    pruned = np.setdiff1d(np.arange(130), kept)
    remainder_rows = np.flatnonzero(np.diff(ops["ew_row_ptr"]))
    assert np.intersect1d(pruned, remainder_rows).size > 0  # rows only the CUDA-core part computes
    ops["ew_values"][:] = 0
    assert relative_error(result, TEW64.reference(ops)) > 10 * TEW64.tolerance


def test_weights_that_keep_no_row_give_zeros(rng):
    w, x = rng.uniform(-1, 1, (10, 24)), rng.uniform(-1, 1, (24, 7))
    ops = TW32.prepare(w, x, get_pattern("tw:G=32"), 0.999)
    assert len(ops["cto_rows"]) == 1
    result, _ = launch(TW32, Engine(), ops)
    np.testing.assert_array_equal(result, np.zeros((10, 7)))


def test_prepare_lays_out_the_cto(rng):
    w, x = rng.uniform(-1, 1, (90, 40)), rng.uniform(-1, 1, (40, 5))
    pattern = get_pattern("tw:G=32")
    ops = TW32.prepare(w, x, pattern, 0.5)
    cto = pattern.encode(w, pattern.prune(w, 0.5)).cto
    n_kept = len(cto.row_offsets)
    assert ops.names == ["A", "B", "C", "cto_rows", "cto_k_lengths", "cto_k_offsets"]
    np.testing.assert_array_equal(ops["cto_rows"], np.append(cto.row_offsets, 90 - n_kept))
    np.testing.assert_array_equal(ops["cto_k_lengths"], cto.k_lengths)
    np.testing.assert_array_equal(ops["cto_k_offsets"], cto.k_offsets)
    assert ops["A"].shape == (n_kept, -(-cto.k_lengths.max() // 8) * 8) and ops["A"].dtype == np.float16
    first = cto.tile_rows(0)
    np.testing.assert_array_equal(ops["A"][:32, : cto.k_lengths[0]], w[np.ix_(first, cto.tile_columns(0))]
                                  .astype(np.float16))
    assert np.isnan(ops["C"]).all()


def test_runs_timed_on_the_h100():
    check = verify(TEW64, Engine("h100"), GemmProblem(128, 128, 256), pattern="tew:G=64", sparsity=0.75)
    assert check.ok, str(check)
    assert check.stats["gpu_sim_cycle"] > 0

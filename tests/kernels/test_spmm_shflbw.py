"""The Shfl-BW SpMM (paper 000) on the simulator, against numpy through the shflbw decode."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.kernels import CannotImplement, GemmProblem, get_kernel, kernels_for, verify_gemm
from stcsim.kernels.ptx_info import entry_params
from stcsim.kernels.spmm_shflbw import SHFLBW_KERNELS
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


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random operands on every run (the seed is printed for a failing test)."""
    seed = int(np.random.SeedSequence().generate_state(1)[0])
    print(f"operand seed {seed}")
    return np.random.default_rng(seed)


def test_registry_rows_and_entries():
    assert kernels_for("shflbw:V=32") == (SMALL,)
    assert kernels_for("shflbw:V=64") == SHFLBW_KERNELS
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

"""The dense GEMMs' per-shape tiles and split-K variants (issue 44): descriptors, and every entry against
numpy on the simulator with fresh random operands, unsplit and split into K slices."""

import numpy as np
import pytest

from stcsim.kernels import GemmProblem, get_kernel, verify_gemm
from stcsim.kernels.descriptors.gemm_tiles import (
    SIMT_TILE_KERNELS,
    SPLITS,
    TILE_GEMM_KERNELS,
    WMMA_TILE_KERNELS,
)
from stcsim.sparsity import get

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

DENSE = get("dense")
ENTRIES = sorted({k.entry for k in TILE_GEMM_KERNELS})
RAGGED = GemmProblem(70, 37, 300)  # ragged M and N, K not a multiple of any slice


def _kernel(entry: str, splits: int):
    return next(k for k in TILE_GEMM_KERNELS if k.entry == entry and k.splits == splits)


def test_every_tile_has_every_split_in_its_family():
    assert len(ENTRIES) == 10
    for entry in ENTRIES:
        splits = {k.splits for k in TILE_GEMM_KERNELS if k.entry == entry}
        unsplit_elsewhere = entry.removesuffix("_splitk") in {
            "gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", "gemm_wmma_f16_f32_tile64x64x32_warp32x32"}
        assert splits == set(SPLITS) - ({1} if unsplit_elsewhere else set())
    assert {k.procedural_name.split("_tile")[0] for k in SIMT_TILE_KERNELS} == {"gemm_simt_f32_f32"}
    assert {k.procedural_name.split("_tile")[0] for k in WMMA_TILE_KERNELS} == {"gemm_wmma_f16_f32"}


def test_split_k_names_grid_and_refusals():
    k = get_kernel("gemm_wmma_f16_f32_tile32x32x32_warp16x16_splitk4")
    assert k.entry == "gemm_wmma_f16_f32_tile32x32x32_warp16x16_splitk" and k.per_shape
    assert k.launch_geometry(GemmProblem(512, 49, 4608))[0] == (2, 16, 4)
    ok, why = k.can_implement(GemmProblem(64, 64, 255), DENSE)
    assert not ok and "K = 255 < 256" in why
    assert k.can_implement(GemmProblem(64, 64, 256), DENSE)[0]
    rng = np.random.default_rng(0)
    ops = k.prepare(rng.random((8, 256), dtype=np.float32), rng.random((256, 8), dtype=np.float32), DENSE)
    assert np.all(ops["C"] == 0)  # the slices add into C
    unsplit = get_kernel("gemm_wmma_f16_f32_tile32x32x32_warp16x16")
    ops = unsplit.prepare(rng.random((8, 32), dtype=np.float32), rng.random((32, 8), dtype=np.float32), DENSE)
    assert np.all(np.isnan(ops["C"]))  # poisoned as every other kernel's
    with pytest.raises(ValueError, match="sliced"):
        type(unsplit)(**{**unsplit.__dict__, "sliced": False, "splits": 2})


CHECKED = [min((k for k in TILE_GEMM_KERNELS if k.entry == e), key=lambda k: k.splits) for e in ENTRIES] + [
    _kernel(e, 4) for e in ENTRIES]


@pytest.mark.parametrize("kernel", CHECKED, ids=lambda k: k.procedural_name)
def test_tile_entries_match_numpy_on_the_simulator(kernel):
    """Each entry unsplit (split in 2 for the 64x64 tiles, whose unsplit kernels are gemm_simt.cu's and
    gemm_wmma.cu's) and in 4 K slices, on a ragged problem."""
    check = verify_gemm(kernel, Engine(), RAGGED)
    assert check.ok, str(check)


def test_split_k_slices_past_k_add_nothing_and_the_timed_launch_runs_on_v100():
    """16 slices of K = 1100 in 32-deep steps are 96 deep: slices 12 to 15 start past K and return (and
    16 slices of K = 300 in 8-deep steps are 24 deep: slices 13 to 15)."""
    kernel = get_kernel("gemm_wmma_f16_f32_tile64x16x32_warp16x16_splitk16")
    check = verify_gemm(kernel, Engine("v100"), GemmProblem(65, 17, 1100))
    assert check.ok, str(check)
    assert check.stats["gpu_sim_cycle"] > 0
    simt = get_kernel("gemm_simt_f32_f32_tile32x32x8_warp32x16_thread4x4_splitk16")
    check = verify_gemm(simt, Engine("v100"), GemmProblem(33, 40, 300))
    assert check.ok, str(check)

"""Tensor Core Vector-wise (SHMMA, paper 001) per shape: the SHMMA GEMM's tiles and split-K variants,
descriptors, their block-tile-high tile-major layout, and every entry against numpy on the simulator with
fresh random pruned weights, unsplit and split into K slices, and timed on v100+stc-pingpong."""

import pytest

from stcsim.kernels import GemmProblem, get_kernel, kernels_for, verify_gemm
from stcsim.kernels.descriptors.gemm_tiles import SPLITS
from stcsim.kernels.descriptors.shmma_tiles import SHMMA_TILE_KERNELS, ShmmaTileKernel
from stcsim.kernels.problem import TileShape
from stcsim.kernels.ptx_info import entry_params
from stcsim.sparsity import get

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

RAGGED = GemmProblem(70, 37, 300)  # ragged M and N; 19 vectors: the last k tile holds one
ENTRIES = sorted({k.entry for k in SHMMA_TILE_KERNELS})


def spec(kernel) -> tuple[str, float]:
    return f"vw:L=16,K={kernel.nnz}", 1 - kernel.nnz / 16


def test_every_tile_has_every_split_in_its_family():
    assert len(ENTRIES) == 12
    for entry in ENTRIES:
        splits = {k.splits for k in SHMMA_TILE_KERNELS if k.entry == entry}
        assert splits == set(SPLITS) - ({1} if "tile64x64x32" in entry else set())
    for nnz in (2, 4, 8):
        family = {k.procedural_name.split("_tile")[0] for k in SHMMA_TILE_KERNELS if k.nnz == nnz}
        assert family == {f"gemm_shmma_k{nnz}_f16_f32"}
    assert all(k.per_shape and get_kernel(k.procedural_name) is k for k in SHMMA_TILE_KERNELS)
    assert not getattr(get_kernel("gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32"), "per_shape", False)
    with pytest.raises(ValueError, match="4 warps"):
        ShmmaTileKernel(4, block_tile=TileShape(64, 64, 32), warp_tile=(16, 16))


def test_names_grid_layout_and_refusals():
    k = get_kernel("gemm_shmma_k4_f16_f32_tile32x32x32_warp16x16_splitk4")
    assert k.entry == "gemm_shmma_k4_f16_f32_tile32x32x32_warp16x16_splitk"
    assert k in kernels_for("vw:L=16,K=4")
    assert k.launch_geometry(GemmProblem(512, 49, 4608)) == ((2, 16, 4), (128, 1, 1), 0)
    ok, why = k.can_implement(GemmProblem(64, 64, 255), get("vw:L=16,K=4"))
    assert not ok and "K = 255 < 256" in why
    params = [p.ptx_type for p in entry_params(k.ptx_path.read_text())[k.entry]]
    base = get_kernel("gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32")
    assert params == [p.ptx_type for p in entry_params(base.ptx_path.read_text())[base.entry]]
    import numpy as np

    rng = np.random.default_rng(0)
    w, x = rng.uniform(-1, 1, (40, 256)), rng.uniform(-1, 1, (256, 8))
    ops = k.prepare(w, x, get("vw:L=16,K=4"), 0.75)
    assert np.all(ops["C"] == 0)  # the slices add into C
    assert ops["values"].size == 64 * 8 * 2 * 4  # two 32-row blocks of 8 k tiles of 32 x 2 vectors x 4
    unsplit = get_kernel("gemm_shmma_k4_f16_f32_tile32x32x32_warp16x16")
    assert np.all(np.isnan(unsplit.prepare(w, x, get("vw:L=16,K=4"), 0.75)["C"]))


CHECKED = [min((k for k in SHMMA_TILE_KERNELS if k.entry == e), key=lambda k: k.splits) for e in ENTRIES]
CHECKED += [next(k for k in SHMMA_TILE_KERNELS if k.entry == e and k.splits == 4) for e in ENTRIES]


@pytest.mark.parametrize("kernel", CHECKED, ids=lambda k: k.procedural_name)
def test_tile_entries_match_numpy_on_the_simulator(kernel):
    """Each entry unsplit (in 2 slices for the 64x64 tile, whose unsplit kernel is gemm_shmma.cu's) and in 4
    slices, on a ragged problem, with fresh random operands."""
    pattern, sparsity = spec(kernel)
    check = verify_gemm(kernel, Engine(), RAGGED, pattern=pattern, sparsity=sparsity)
    assert check.ok, str(check)


@pytest.mark.parametrize("name", ["gemm_shmma_k4_f16_f32_tile64x16x32_warp16x16_splitk16",
                                  "gemm_shmma_k8_f16_f32_tile32x32x32_warp16x16_splitk16"])
def test_slices_past_the_last_k_tile_and_the_timed_launch(name):
    """16 slices of K = 1100 (35 k tiles, 3 per slice): slices 12 to 15 start past the last k tile; the
    timed launch runs on v100+stc-pingpong; a ragged, unaligned N takes the staged, bounds-checked adds."""
    kernel = get_kernel(name)
    pattern, sparsity = spec(kernel)
    check = verify_gemm(kernel, Engine("v100+stc-pingpong"), GemmProblem(65, 17, 1100), pattern=pattern,
                        sparsity=sparsity)
    assert check.ok, str(check)
    assert check.stats["gpu_sim_cycle"] > 0

"""Paper 001's sparse CUDA-core kernels' per-shape tiles and split-K variants (CSR SpMM, channel-pruned and
vector-wise SIMT GEMMs): descriptors, and every entry against numpy on the simulator with fresh random
operands, unsplit and split into K slices."""

import numpy as np
import pytest

from stcsim.kernels import GemmProblem, get_kernel, kernels_for, verify_gemm
from stcsim.kernels.descriptors.gemm_tiles import SPLITS
from stcsim.kernels.descriptors.sparse_tiles import (
    SIMT_SPARSE_TILE_KERNELS,
)
from stcsim.kernels.ptx_info import entry_params
from stcsim.sparsity import get

try:  # pytest.importorskip("stcsim.sim"), also skipping while the engine extension is not built
    from stcsim.sim import Engine
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

RAGGED = GemmProblem(70, 37, 700)  # ragged M and N, K not a multiple of any slice
UNSPLIT = {  # the existing one-tile kernels, whose tile is registered here from 2 slices
    "spmm_csr_f32_f32_tile4x64_warp1x64",
    "gemm_simt_channel_f32_f32_tile64x64x8_warp32x16_thread4x4",
    *(f"gemm_simt_vw_l16k{kv}_f32_f32_tile64x64x8_warp32x16_thread4x4" for kv in (2, 4, 8)),
}


def pattern_of(kernel) -> tuple[str, float]:
    """The pattern spec and sparsity a kernel runs with here."""
    if kernel.pattern_name == "unstructured":
        return "unstructured", 0.9
    if kernel.pattern_name == "channel":
        return "channel", 0.5
    return f"vw:L=16,K={kernel.kv}", 1 - kernel.kv / 16


ENTRIES = sorted({k.entry for k in SIMT_SPARSE_TILE_KERNELS})


def test_every_tile_has_every_split_and_keeps_its_family():
    assert len(ENTRIES) == 3 + 5 + 12
    for entry in ENTRIES:
        splits = {k.splits for k in SIMT_SPARSE_TILE_KERNELS if k.entry == entry}
        assert splits == set(SPLITS) - ({1} if entry.removesuffix("_splitk") in UNSPLIT else set())
    families = {k.procedural_name.split("_tile")[0] for k in SIMT_SPARSE_TILE_KERNELS}
    assert families == {"spmm_csr_f32_f32", "gemm_simt_channel_f32_f32",
                        *(f"gemm_simt_vw_l16k{kv}_f32_f32" for kv in (2, 4, 8))}
    for name in UNSPLIT:  # the fixed rule's kernels are still there, not per_shape
        assert not getattr(get_kernel(name), "per_shape", False)
    assert all(k.per_shape and get_kernel(k.procedural_name) is k for k in SIMT_SPARSE_TILE_KERNELS)


def test_names_grids_parameters_and_refusals():
    csr = get_kernel("spmm_csr_f32_f32_tile4x32_warp1x32_splitk4")
    assert csr.entry == "spmm_csr_f32_f32_tile4x32_warp1x32_splitk"
    assert csr.launch_geometry(GemmProblem(512, 49, 4608)) == ((2, 128, 4), (32, 4, 1), 0)
    assert csr in kernels_for("unstructured")
    chan = get_kernel("gemm_simt_channel_f32_f32_tile32x32x8_warp32x16_thread4x4_splitk8")
    assert chan.launch_geometry(GemmProblem(512, 49, 4608))[0] == (2, 16, 8)
    vw = get_kernel("gemm_simt_vw_l16k4_f32_f32_tile64x16x8_warp32x16_thread4x4_splitk16")
    assert vw.estimate_depth == 32 and vw in kernels_for("vw:L=16,K=4")
    ok, why = vw.can_implement(GemmProblem(64, 64, 1023), get("vw:L=16,K=4"))
    assert not ok and "K = 1023 < 1024" in why
    for k in (csr, chan, vw):
        params = [p.ptx_type for p in entry_params(k.ptx_path.read_text())[k.entry]]
        family = k.procedural_name.split("_tile")[0]
        base = get_kernel(next(n for n in UNSPLIT if n.split("_tile")[0] == family))
        assert params == [p.ptx_type for p in entry_params(base.ptx_path.read_text())[base.entry]]
    rng = np.random.default_rng(0)
    w, x = rng.random((8, 1024), dtype=np.float32), rng.random((1024, 8), dtype=np.float32)
    assert np.all(csr.prepare(w, x, get("unstructured"), 0.9)["y"] == 0)  # the slices add into Y
    unsplit = get_kernel("spmm_csr_f32_f32_tile4x32_warp1x32")
    assert np.all(np.isnan(unsplit.prepare(w, x, get("unstructured"), 0.9)["y"]))


CHECKED = [min((k for k in SIMT_SPARSE_TILE_KERNELS if k.entry == e), key=lambda k: k.splits)
           for e in ENTRIES]
CHECKED += [next(k for k in SIMT_SPARSE_TILE_KERNELS if k.entry == e and k.splits == 4) for e in ENTRIES]


@pytest.mark.parametrize("kernel", CHECKED, ids=lambda k: k.procedural_name)
def test_tile_entries_match_numpy_on_the_simulator(kernel):
    """Each entry unsplit (in 2 slices for the tiles whose unsplit kernel is the old one) and in 4 K slices,
    on a ragged problem, with fresh random operands."""
    spec, sparsity = pattern_of(kernel)
    check = verify_gemm(kernel, Engine(), RAGGED, pattern=spec, sparsity=sparsity)
    assert check.ok, str(check)


@pytest.mark.parametrize("name", [
    "spmm_csr_f32_f32_tile8x32_warp1x32_splitk16",
    "gemm_simt_channel_f32_f32_tile64x16x8_warp32x16_thread4x4_splitk16",
    "gemm_simt_vw_l16k8_f32_f32_tile32x32x8_warp32x16_thread4x4_splitk16",
])
def test_slices_with_nothing_to_add_and_the_timed_launch_on_v100(name):
    """16 slices: rows of the CSR with fewer than 16 non-zeros have empty slices; 16 slices of 525 kept
    columns in 8-deep steps are 40 deep (slices 14 and 15 start past them); 16 slices of 66 vectors of K = 8
    in
    1-vector steps are 5 deep (slices 14 and 15 start past them)."""
    kernel = get_kernel(name)
    spec, sparsity = pattern_of(kernel)
    check = verify_gemm(kernel, Engine("v100"), GemmProblem(65, 17, 1050), pattern=spec, sparsity=sparsity)
    assert check.ok, str(check)
    assert check.stats["gpu_sim_cycle"] > 0

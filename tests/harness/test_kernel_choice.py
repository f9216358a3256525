"""Kernel choice through the registry: math units from the PTX, the GPU probe, the fixed tile rule, the
per-shape choice among tiles and split-K (simulated, cached), fallbacks."""

import json

import pytest

import stcsim.harness.kernel_choice as kc
from stcsim.config import load_config
from stcsim.harness.executor import InlineExecutor
from stcsim.harness.kernel_choice import (
    CUDA_CORE,
    TENSOR_CORE,
    TUNED,
    check_selector,
    choose_kernel,
    dense_selector,
    estimate_cycles,
    family,
    math_units,
    named_kernel,
    parse_selector,
    shortlist,
    simulate_cycles,
    units_of,
)
from stcsim.kernels import GemmProblem, get_kernel, kernels_for
from stcsim.sparsity import get

WMMA = "gemm_wmma_f16_f32_tile64x64x32_warp32x32"
SIMT = "gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4"
MMA128 = "gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3"
MMA64 = "gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2"
DENSE = get("dense")
FIXED_AUTO = "fixed:auto"


@pytest.fixture(autouse=True)
def candidate_cache(tmp_path, monkeypatch):
    """Candidate cycles cached in the test's own folder (and not in memory from another test)."""
    monkeypatch.setenv(kc.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(kc, "_simulated", {})
    return tmp_path / "cache" / "kernel_choice"


def test_math_units_come_from_the_entry_s_instructions():
    assert math_units(WMMA) == math_units(MMA128) == TENSOR_CORE
    assert math_units(SIMT) == math_units("gemm_naive_f32_f32_tile16x16x1") == CUDA_CORE
    assert family(MMA128) == family(MMA64) == "gemm_mma_f16_f32"


def test_v100_runs_the_wmma_gemm_and_cuda_cores_run_the_simt_gemm():
    p = GemmProblem(256, 196, 2304)
    assert choose_kernel(p, DENSE, 0.0, "v100", FIXED_AUTO).kernel == WMMA  # mma.sync has no V100 timing
    assert choose_kernel(p, DENSE, 0.0, "v100", "fixed:cuda-core").kernel == SIMT
    assert choose_kernel(p, DENSE, 0.0, "v100", "fixed:tensor-core").fallback == ""


def test_fixed_tile_is_the_largest_that_still_covers_every_sm():
    """The fixed rule, among the kernels registered for it (not the per-shape tiles)."""
    assert choose_kernel(GemmProblem(2048, 2048, 64), DENSE, 0.0, "a100", FIXED_AUTO).kernel == MMA128
    assert choose_kernel(GemmProblem(256, 3136, 64), DENSE, 0.0, "a100", FIXED_AUTO).kernel == MMA64
    # the per-shape choice keeps the family; on 256 CTAs >= 108 SMs only the 128x128 tile is left
    choice = choose_kernel(GemmProblem(2048, 2048, 64), DENSE, 0.0, "a100")
    assert (choice.kernel, choice.how, choice.candidates) == (MMA128, "only", ())


def test_a_resolved_config_s_overrides_reach_the_choice(candidate_cache):
    """A sweep point's resolved config (overrides included) is what the choice sizes its grid rules by and
    simulates its candidates on, not the config its spec names: with 40 SMs the 128 x 128 tile's 50 CTAs
    cover the GPU."""
    small = load_config("a100", {"gpu.n_clusters": 20})
    p = GemmProblem(256, 3136, 64)
    assert choose_kernel(p, DENSE, 0.0, "a100", FIXED_AUTO).kernel == MMA64
    assert choose_kernel(p, DENSE, 0.0, small, FIXED_AUTO).kernel == MMA128
    q, kernel = GemmProblem(40, 24, 64), get_kernel("gemm_wmma_f16_f32_tile32x32x32_warp16x16")
    simulate_cycles(kernel, q, DENSE, 0.0, "a100")
    simulate_cycles(kernel, q, DENSE, 0.0, small)
    simulate_cycles(kernel, q, DENSE, 0.0, load_config("a100"))  # the spec's own config: the same entry
    assert len(list(candidate_cache.glob("*.json"))) == 2


def test_fixed_selectors_parse_and_name_their_kernel():
    assert parse_selector("fixed:cuda-core") == (True, CUDA_CORE) and parse_selector(SIMT) == (False, SIMT)
    check_selector("fixed:auto")
    check_selector(f"fixed:{SIMT}")
    with pytest.raises(ValueError, match="a kernel name or a glob"):
        check_selector("fixed:tensorcore")
    assert named_kernel(f"fixed:{SIMT}") == SIMT
    assert named_kernel("fixed:gemm_*") == "" == named_kernel(FIXED_AUTO)
    assert dense_selector("fixed:spmm_csr_*") == "fixed:cuda-core"
    assert dense_selector("spmm_csr_*") == CUDA_CORE
    assert dense_selector(f"fixed:{SIMT}") == f"fixed:{SIMT}"
    assert choose_kernel(GemmProblem(512, 49, 4608), DENSE, 0.0, "v100", f"fixed:{SIMT}").kernel == SIMT


def test_the_shortlist_drops_padded_tiles_and_takes_the_split_that_fills_the_sms():
    """ResNet-50's layer4.0.conv2 (512 x 49 x 4608) on the 80-SM V100: the 128-wide tile uses 38 % of its
    padded N (the 64- and 32-wide ones 77 %); no tile fills 80 SMs, so each takes its smallest filling
    split."""
    simt = [k for k in kernels_for(DENSE) if family(k.procedural_name) == "gemm_simt_f32_f32"]
    names = {k.procedural_name for k in shortlist(simt, GemmProblem(512, 49, 4608), "v100")}
    assert names == {"gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4_splitk16",
                     "gemm_simt_f32_f32_tile64x32x8_warp32x16_thread4x4_splitk8",
                     "gemm_simt_f32_f32_tile32x32x8_warp32x16_thread4x4_splitk4",
                     "gemm_simt_f32_f32_tile64x16x8_warp32x16_thread4x4_splitk4"}
    # a large layer: the 128x128 tile has 50 CTAs (>= 40: kept unsplit, and split in 2), 64x64 fills 80
    wmma = [k for k in kernels_for(DENSE) if family(k.procedural_name) == "gemm_wmma_f16_f32"]
    names = {k.procedural_name for k in shortlist(wmma, GemmProblem(256, 3136, 576), "v100")}
    assert names == {"gemm_wmma_f16_f32_tile128x128x32_warp64x32",
                     "gemm_wmma_f16_f32_tile128x128x32_warp64x32_splitk2", WMMA}


def test_the_narrow_hopper_tile_is_a_candidate_for_narrow_n_only():
    """The 8-wide wgmma tile joins the 128- and 256-wide ones up to N = 4 x 8 (decode steps, lm_head); on a
    wide N the two wide tiles stay, as before it existed."""
    sparse = [k for k in kernels_for(get("nm:N=2,M=4"))
              if family(k.procedural_name) == "gemm_wgmma_sp_f16_f32"]
    tiles = {n: {k.procedural_name.split("_tile")[1]
                 for k in shortlist(sparse, GemmProblem(4096, n, 4096), "h100")} for n in (1, 32, 33, 2048)}
    wide = {"128x128x64_stage5", "128x256x64_stage4"}
    assert tiles[1] == tiles[32] == wide | {"128x8x64_stage6"}
    assert tiles[33] == tiles[2048] == wide


def test_the_per_shape_choice_is_the_fastest_simulated_candidate(candidate_cache):
    p = GemmProblem(64, 40, 512)
    choice = choose_kernel(p, DENSE, 0.0, "v100")
    assert choice.how == TUNED and family(choice.kernel) == "gemm_wmma_f16_f32" and len(choice.candidates) > 1
    cycles = dict(choice.candidates)
    assert cycles[choice.kernel] == min(cycles.values())
    fixed = choose_kernel(p, DENSE, 0.0, "v100", FIXED_AUTO)
    assert fixed.kernel == WMMA and fixed.how == "fixed"
    assert cycles[choice.kernel] < simulate_cycles(get_kernel(WMMA), p, DENSE, 0.0, "v100")
    columns = choice.columns()
    assert columns["kernel_choice"] == TUNED and columns["kernel_estimate"] == cycles[choice.kernel]
    assert columns["kernel_candidates"].startswith(f"{choice.kernel}=")
    assert len(list(candidate_cache.glob("*.json"))) >= len(cycles)  # on disk for the next run


def test_candidate_cycles_come_from_the_disk_cache(candidate_cache, monkeypatch):
    p, kernel = GemmProblem(40, 24, 64), get_kernel("gemm_wmma_f16_f32_tile32x32x32_warp16x16")
    cycles = simulate_cycles(kernel, p, DENSE, 0.0, "v100")
    (entry,) = candidate_cache.glob("*.json")
    assert json.loads(entry.read_text())["cycles"] == cycles > 0
    monkeypatch.setattr(kc, "_simulated", {})
    monkeypatch.setattr(kc, "Engine", None)  # a simulation now would fail
    assert simulate_cycles(kernel, p, DENSE, 0.0, "v100") == cycles


def test_collected_candidates_simulated_elsewhere_give_the_same_choice(candidate_cache, monkeypatch):
    """``collecting`` lists the launches a choice needs without simulating any; ``simulate_all`` runs them
    (here in this process: an executor's ``map_unordered``); the choice made again simulates nothing and is
    the one made without the detour."""
    p = GemmProblem(64, 40, 512)
    with kc.collecting() as wanted:
        placeholder = choose_kernel(p, DENSE, 0.0, "v100")
    assert placeholder.how == TUNED and len(wanted) >= len(placeholder.candidates) > 1
    assert not list(candidate_cache.glob("*.json")) and not kc._simulated  # nothing simulated
    kc.simulate_all(wanted, InlineExecutor())
    assert len(list(candidate_cache.glob("*.json"))) == len(wanted)
    engine = kc.Engine
    monkeypatch.setattr(kc, "Engine", None)  # a candidate simulation now would fail (the probes are cached)
    choice = choose_kernel(p, DENSE, 0.0, "v100")
    monkeypatch.setattr(kc, "Engine", engine)
    monkeypatch.setattr(kc, "_simulated", {})
    for entry in candidate_cache.glob("*.json"):
        entry.unlink()
    assert choose_kernel(p, DENSE, 0.0, "v100") == choice


def test_a_large_layer_s_estimate_is_within_five_percent_of_its_simulation(monkeypatch):
    """Two short-K launches of the same grid, extrapolated to K, against the whole launch."""
    p = GemmProblem(128, 96, 1536)
    for name in ("gemm_wmma_f16_f32_tile32x32x32_warp16x16",
                 "gemm_wmma_f16_f32_tile32x32x32_warp16x16_splitk2"):
        kernel = get_kernel(name)
        whole = simulate_cycles(kernel, p, DENSE, 0.0, "v100")
        monkeypatch.setattr(kc, "FULL_SIMULATION_MACS", 0)
        estimate = estimate_cycles(kernel, p, DENSE, 0.0, "v100")
        monkeypatch.undo()
        assert abs(estimate / whole - 1) < 0.05, (name, estimate, whole)


def test_a_kernel_without_a_block_tile_is_padded_by_its_estimate_tile(monkeypatch):
    """The wgmma GEMMs have no ``block_tile`` (they are not in the tile shortlist) but pad N = 1 to a whole
    128-column tile: Llama's 32000 x 1 x 4096 lm_head is estimated from two short-K launches, not whole."""
    seen = []
    monkeypatch.setattr(kc, "simulate_cycles", lambda k, p, *_: seen.append(p) or float(p.k))
    kernel = get_kernel("gemm_wgmma_sp_f16_f32_tile128x128x64_stage5")
    assert estimate_cycles(kernel, GemmProblem(32000, 1, 4096), get("nm:N=2,M=4"), 0.5, "h100") == 4096
    assert seen == [GemmProblem(32000, 1, 512), GemmProblem(32000, 1, 1024)]


def test_sm90_configs_run_the_hopper_gemms():
    """The wgmma GEMMs are registered last: h100 takes them (dense and 2:4); a100 refuses their probe."""
    p = GemmProblem(256, 196, 2304)
    assert family(choose_kernel(p, DENSE, 0.0, "h100", FIXED_AUTO).kernel) == "gemm_wgmma_f16_f32"
    two_four = choose_kernel(p, get("nm:N=2,M=4"), 0.5, "h100", FIXED_AUTO).kernel
    assert family(two_four) == "gemm_wgmma_sp_f16_f32"
    assert family(choose_kernel(p, DENSE, 0.0, "a100", FIXED_AUTO).kernel) == "gemm_mma_f16_f32"


def test_two_four_and_tvw_run_their_mma_sp_kernels_on_sm80_configs():
    p = GemmProblem(256, 196, 2304)
    two_four = choose_kernel(p, get("nm:N=2,M=4"), 0.5, "a100", FIXED_AUTO).kernel
    assert family(two_four) == "gemm_mma_sp_f16_f32"
    named = choose_kernel(p, get("nm:N=2,M=4"), 0.5, "h100", "fixed:gemm_mma_sp_*")
    assert family(named.kernel) == "gemm_mma_sp_f16_f32"
    for config in ("h100", "a100"):
        choice = choose_kernel(p, get("tvw:G=128"), 0.75, config, FIXED_AUTO)
        assert choice.kernel.startswith("spmm_tvw_g128_")


def test_two_four_falls_back_to_dense_on_v100():
    choice = choose_kernel(GemmProblem(256, 196, 2304), get("nm:N=2,M=4"), 0.5, "v100", FIXED_AUTO)
    assert choice.kernel == WMMA and choice.pattern == "dense"
    assert "gemm_mma_sp" in choice.fallback and "cannot run on v100" in choice.fallback


def test_a_named_kernel_the_gpu_cannot_run_is_an_error_saying_why():
    with pytest.raises(ValueError, match="cannot run on v100: .*has no timing"):
        choose_kernel(GemmProblem(64, 64, 64), DENSE, 0.0, "v100", MMA128)


def test_selector_names_are_checked_and_globs_pick_a_family():
    check_selector(WMMA)
    check_selector("spmm_extensor_l32_*")  # a family that may not be registered yet
    with pytest.raises(ValueError, match="auto, tensor-core, cuda-core, a kernel name or a glob"):
        check_selector("tensorcore")
    choice = choose_kernel(GemmProblem(2048, 2048, 64), DENSE, 0.0, "h100", "gemm_mma_*")
    assert choice.kernel == MMA128
    assert units_of("gemm_mma_*") == TENSOR_CORE and units_of("no_such_*") == "auto"


def test_a_glob_that_matches_no_kernel_of_the_pattern_falls_back_with_its_name(csr_kernel):
    choice = choose_kernel(GemmProblem(64, 64, 64), get("unstructured"), 0.9, "v100", "spmm_nothing_*")
    assert choice.pattern == "dense" and choice.kernel == WMMA  # the registry of csr_kernel: one WMMA tile
    assert "no kernel 'spmm_nothing_*' implements the sparsity pattern 'unstructured'" in choice.fallback


def test_a_pattern_without_kernels_falls_back_to_dense_of_the_same_units(dense_only):
    p = GemmProblem(64, 64, 64)
    choice = choose_kernel(p, get("vw:L=16,K=4"), 0.75, "v100", CUDA_CORE)
    assert (choice.kernel, choice.pattern) == (SIMT, "dense")
    assert "no kernel implements the sparsity pattern 'vw:L=16,K=4,axis=row'" in choice.fallback


def test_a_registered_sparse_kernel_is_chosen_without_harness_changes(csr_kernel):
    p = GemmProblem(96, 40, 128)
    choice = choose_kernel(p, get("unstructured"), 0.9, "v100")
    assert (choice.kernel, choice.pattern, choice.fallback) == (csr_kernel, "unstructured", "")
    on_tensor_cores = choose_kernel(p, get("unstructured"), 0.9, "v100", TENSOR_CORE)
    assert on_tensor_cores.kernel == WMMA
    assert f"{csr_kernel} runs on cuda-core" in on_tensor_cores.fallback


def test_the_sparse_families_are_chosen_per_shape_and_never_worse_than_the_fixed_rule():
    """Paper 001's sparse kernels have tiles and K splits too (stcsim.kernels.descriptors.sparse_tiles,
    shmma_tiles); the fixed rule's kernel is always among the simulated candidates. ResNeXt-50's 16 x 196 x
    144 grouped conv: the 64 x 64 tiles make 4 thread blocks for 80 SMs."""
    p = GemmProblem(16, 196, 144)
    vw = choose_kernel(p, get("vw:L=16,K=4"), 0.75, "v100", CUDA_CORE)
    fixed = choose_kernel(p, get("vw:L=16,K=4"), 0.75, "v100", f"fixed:{CUDA_CORE}")
    assert fixed.kernel == "gemm_simt_vw_l16k4_f32_f32_tile64x64x8_warp32x16_thread4x4"
    cycles = dict(vw.candidates)
    assert vw.how == TUNED and fixed.kernel in cycles and cycles[vw.kernel] == min(cycles.values())
    csr = choose_kernel(p, get("unstructured"), 0.96, "v100", CUDA_CORE)
    assert family(csr.kernel) == "spmm_csr_f32_f32" and csr.how == TUNED
    assert any("_splitk" in name for name in dict(csr.candidates))
    shmma = choose_kernel(p, get("vw:L=16,K=4"), 0.75, "v100+stc-pingpong")
    assert family(shmma.kernel) == "gemm_shmma_k4_f16_f32" and shmma.how == TUNED
    assert dict(shmma.candidates)[shmma.kernel] <= dict(shmma.candidates)[
        "gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32"]

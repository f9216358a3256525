"""SparseRT's generated SpMM (paper 003): load balancing, the PTX (ptxas accepts it), the engine runs it
against numpy on fresh random weights, the constant bank's 64 KiB, the cache, the autotuner, the registry."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from stcsim.harness.kernel_choice import choose_kernel, math_units
from stcsim.kernels import GemmProblem, get_kernel, kernels_for, verify_gemm
from stcsim.kernels import sparsert_codegen as codegen
from stcsim.kernels.protocol import GeneratedKernel, ptx_for
from stcsim.kernels.run import launch
from stcsim.kernels.sparsert_plan import SplitParams, k_partition, make_plan, row_partition
from stcsim.kernels.sparsert_tune import autotune, candidates, engine_objective
from stcsim.kernels.spmm_sparsert import SparseRtKernel
from stcsim.sim import Engine, PtxError
from stcsim.sparsity import get
from stcsim.sparsity.unstructured import SparseRT

PTXAS = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if Path("/usr/local/bin/ptxas").is_file() else None)
PATTERN = SparseRT()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Every test generates into its own disk cache, and starts with an empty memory cache."""
    monkeypatch.setenv(codegen.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(codegen, "_MEMORY", {})


@pytest.fixture(scope="module")
def engine():
    return Engine("h100")


def random_csr(rng, m, k, sparsity):
    w = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float32)
    return PATTERN.encode(w, PATTERN.prune(w, sparsity))


def ptxas(text, tmp_path):
    path = tmp_path / "k.ptx"
    path.write_text(text)
    return subprocess.run([PTXAS, "-arch=sm_80", str(path), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("m", "n", "k", "params", "sparsity"),
    [
        (64, 64, 64, SplitParams(8, 64, 2, "imm"), 0.9),
        (33, 17, 40, SplitParams(4, 32, 1, "const"), 0.8),
        (70, 100, 50, SplitParams(16, 32, 4, "auto"), 0.9),
        (1, 1, 1, SplitParams(8, 64, 2, "imm"), 0.0),
        (48, 37, 130, SplitParams(4, 64, 3, "imm"), 0.95),
        (5, 9, 7, SplitParams(32, 32, 4, "const"), 0.5),
    ],
    ids=["64x64x64-imm", "33x17x40-const", "70x100x50-g4", "1x1x1", "48x37x130-g3", "5x9x7-const-g4"],
)
def test_generated_kernel_matches_numpy_on_the_engine(engine, m, n, k, params, sparsity):
    check = verify_gemm(SparseRtKernel(params), engine, GemmProblem(m, n, k), pattern=PATTERN,
                        sparsity=sparsity)
    assert check.ok, str(check)
    assert check.stats["kernel_cycles"] > 0


def test_the_plan_balances_rows_and_k_and_covers_every_nonzero_once():
    rng = np.random.default_rng()
    csr = random_csr(rng, 96, 80, 0.85)
    plan = make_plan(csr, SplitParams(8, 32, 3))
    assert plan.blocks == 12 and plan.row_starts[0] == 0 and plan.row_starts[-1] == 96
    assert all(0 < plan.block_rows(b) <= 16 for b in range(plan.blocks))
    seen = {}
    for seg in plan.segments:
        ks = [c for c, _ in seg.columns]
        assert ks == sorted(set(ks))
        for c, entries in seg.columns:
            for r, v in entries:
                seen[(plan.row_starts[seg.block] + r, c)] = v
    dense = csr.to_dense()
    assert seen == {(r, c): float(dense[r, c]) for r, c in zip(*np.nonzero(dense), strict=True)}
    assert plan.imbalance() < 1.6
    for b in range(plan.blocks):  # every group but the last: its share, give or take one column of W
        segs = [plan.segment(b, g) for g in range(3)]
        share = sum(s.nnz for s in segs) / 3
        widest = max(len(e) for s in segs for _, e in s.columns)
        assert all(abs(s.nnz - share) < widest for s in segs[:2])


def test_row_partition_follows_nnz_quantiles_within_the_caps():
    assert row_partition(np.array([10, 0, 0, 0, 10, 0, 0, 0]), 2, 8) == (0, 1, 8)
    assert row_partition(np.array([1] * 8), 4, 2) == (0, 2, 4, 6, 8)
    assert row_partition(np.array([100, 1, 1, 1, 1, 1]), 3, 2) == (0, 2, 4, 6)  # the cap, not the quantile
    assert row_partition(np.array([3, 3, 3, 1, 1, 1, 1, 1, 1]), 2, 8) == (0, 3, 9)  # 9 reaches 7.5
    with pytest.raises(ValueError, match="cannot split"):
        row_partition(np.ones(9), 2, 4)
    assert k_partition(np.array([4, 0, 4, 4, 4]), 2) == [0, 3, 5]


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("weights", ["imm", "const"])
def test_ptxas_accepts_the_generated_ptx(tmp_path, weights):
    csr = random_csr(np.random.default_rng(), 37, 45, 0.9)
    text = codegen.render(make_plan(csr, SplitParams(4, 32, 2, weights)), 29, weights)
    done = ptxas(text, tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_const_bank_holds_64_kib_like_ptxas(engine, tmp_path):
    """One weight over 16384 in .const: the engine refuses the module as ptxas does."""
    rng = np.random.default_rng()
    csr = random_csr(rng, 129, 128, 0.0)  # 16512 weights
    text = codegen.render(make_plan(csr, SplitParams(32, 32, 1, "const")), 8, "const")
    with pytest.raises(PtxError, match="65536"):
        engine.load_ptx(text)
    if PTXAS is not None:
        done = ptxas(text, tmp_path)
        assert done.returncode != 0 and "too much global constant data" in done.stderr
    assert codegen.weight_mode(SplitParams(weights="auto"), 16384) == "const"
    assert codegen.weight_mode(SplitParams(weights="auto"), 16385) == "imm"


def test_generated_ptx_is_cached_by_the_weights_hash(tmp_path):
    rng = np.random.default_rng()
    csr, params = random_csr(rng, 20, 30, 0.8), SplitParams(4, 32, 2)
    first = codegen.generate_cached(csr, 40, params)
    assert not first.cached and first.path.is_file() and first.seconds > 0
    assert codegen.generate_cached(csr, 40, params) is first
    codegen._MEMORY.clear()
    again = codegen.generate_cached(csr, 40, params)
    assert again.cached and again.text == first.text
    other = random_csr(rng, 20, 30, 0.8)
    assert codegen.generate_cached(other, 40, params).path != first.path
    assert codegen.generate_cached(csr, 41, params).path != first.path


def test_the_kernel_is_the_sparsert_patterns_and_goes_through_the_generic_launch(engine):
    kernel = kernels_for("sparsert")
    assert kernel == (SparseRtKernel(),) and isinstance(kernel[0], GeneratedKernel)
    assert all(k.pattern_name != "sparsert" for k in kernels_for("unstructured"))
    assert get_kernel(kernel[0].procedural_name) is kernel[0]
    assert f".entry {kernel[0].entry}(" in kernel[0].ptx_path.read_text()
    assert math_units(kernel[0].procedural_name) == "cuda-core"
    rng = np.random.default_rng()
    w, x = rng.uniform(-1, 1, (24, 40)).astype(np.float32), rng.uniform(-1, 1, (40, 50)).astype(np.float32)
    operands = kernel[0].prepare(w, x, PATTERN, 0.9)
    assert ptx_for(kernel[0], operands) == kernel[0].generated_ptx(operands)
    result, _ = launch(kernel[0], engine, operands)
    np.testing.assert_allclose(result, kernel[0].reference(operands), rtol=0, atol=1e-5)
    stats = kernel[0].generation_stats(operands)
    assert stats["codegen_weights"] == "const" and stats["codegen_ptx_lines"] > 50


def test_the_harness_chooses_the_generator_for_sparsert():
    choice = choose_kernel(GemmProblem(64, 196, 64), get("sparsert"), 0.9, "h100")
    assert choice.kernel == SparseRtKernel().procedural_name and choice.fallback == ""


def test_bad_settings_and_problems_are_refused():
    with pytest.raises(ValueError, match="columns"):
        SplitParams(columns=48)
    with pytest.raises(ValueError, match="weights"):
        SplitParams(weights="texture")
    ok, why = SparseRtKernel(SplitParams(32, 128, 8)).can_implement(GemmProblem(64, 64, 64), PATTERN)
    assert not ok and "static shared" in why
    ok, why = SparseRtKernel().can_implement(GemmProblem(64, 64, 64), get("unstructured"))
    assert not ok and "sparsert" in why


def test_the_autotuner_picks_the_lowest_score_and_keeps_refusals():
    rng = np.random.default_rng()
    w, x = rng.uniform(-1, 1, (40, 30)).astype(np.float32), rng.uniform(-1, 1, (30, 33)).astype(np.float32)
    settings = [SplitParams(4, 32, 1), SplitParams(8, 32, 2), SplitParams(16, 64, 2)]
    result = autotune(w, x, 0.9, engine_objective("h100"), settings)
    scores = [t.score for t in result.trials]
    assert result.best == settings[int(np.argmin(scores))] and result.best_score == min(scores)
    assert all(np.isfinite(scores)) and all(t.codegen_seconds > 0 for t in result.trials)

    def lines(kernel, operands):
        return float(kernel.generation_stats(operands)["codegen_ptx_lines"])

    by_lines = autotune(w, x, 0.9, lines, settings)
    assert by_lines.best_score == min(t.score for t in by_lines.trials) > 100


def test_the_autotuner_keeps_a_setting_the_engine_refuses_with_its_reason():
    rng = np.random.default_rng()
    w, x = rng.uniform(-1, 1, (129, 128)).astype(np.float32), rng.uniform(-1, 1, (128, 4)).astype(np.float32)
    settings = [SplitParams(32, 32, 1, "const"), SplitParams(32, 32, 1, "imm")]
    tuned = autotune(w, x, 0.0, engine_objective("h100"), settings)
    assert "65536" in tuned.trials[0].refused and tuned.trials[0].score == np.inf
    assert tuned.best == settings[1] and np.isfinite(tuned.best_score)
    assert len(candidates(GemmProblem(64, 64, 64))) > 10

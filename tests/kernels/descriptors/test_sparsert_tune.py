"""SparseRT's autotuner (paper 003, section 3.7): the lowest score wins; a refused setting keeps its
reason."""

import numpy as np

from stcsim.kernels import GemmProblem
from stcsim.kernels.codegen.sparsert_plan import SplitParams
from stcsim.kernels.descriptors.sparsert_tune import autotune, candidates, engine_objective


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

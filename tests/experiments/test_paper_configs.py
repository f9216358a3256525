"""A paper's configurations on one layer: same operands for every row, speedups over the first, typed
errors for functional-only engines and failed checks."""

import pytest

from stcsim.experiments import paper_configs
from stcsim.experiments.paper_configs import (
    PAPER001_CUDA_CORE,
    CheckFailed,
    Configuration,
    format_table,
    main,
    measure,
)
from stcsim.kernels import GemmProblem, get_kernel
from stcsim.sparsity import get as get_pattern


def test_the_paper001_preset_names_registered_kernels_and_their_patterns():
    assert [c.paper_speedup for c in PAPER001_CUDA_CORE] == [1.0, 0.86, 1.32, 1.56]
    for c in PAPER001_CUDA_CORE:
        ok, reason = get_kernel(c.kernel).can_implement(GemmProblem(256, 196, 2304), get_pattern(c.pattern))
        assert ok, reason


def test_measure_runs_every_configuration_on_the_same_operands():
    results = measure(PAPER001_CUDA_CORE, GemmProblem(40, 24, 64), "v100", seed=7)
    assert [m.check.seed for m in results] == [7] * 4 and all(m.check.ok for m in results)
    assert [m.check.pattern.split(":")[0] for m in results] == ["dense", "unstructured", "channel", "vw"]
    table = format_table(results).splitlines()
    assert len(table) == 6 and table[2].startswith("| CUDA Core Dense |") and "| 1.00 | 1.00 |" in table[2]
    vw = results[3]
    assert f"| {results[0].cycles / vw.cycles:.2f} | 1.56 |" in table[5]


def test_a_functional_engine_is_refused():
    with pytest.raises(ValueError, match="gives no cycles: use a timing config"):
        measure(PAPER001_CUDA_CORE[:1], GemmProblem(8, 8, 8), None)


def test_main_prints_the_table_and_exits_by_outcome(capsys, monkeypatch):
    assert main(["--shape", "16x16x32", "--config", "v100", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "paper001-cuda-core at 16x16x32 on v100 (seed 3)" in out and out.count("\n| CUDA Core") == 4
    assert main(["--shape", "16x16", "--config", "v100"]) == 2
    assert "shape must be MxNxK" in capsys.readouterr().err

    def failing(*args, **kwargs):
        raise CheckFailed("CUDA Core Dense: FAILED")

    monkeypatch.setattr(paper_configs, "measure", failing)
    assert main(["--shape", "16x16x16"]) == 1
    assert "CUDA Core Dense: FAILED" in capsys.readouterr().err


def test_a_configuration_without_a_paper_value_prints_a_dash():
    extra = Configuration("naive", "gemm_naive_f32_f32_tile16x16x1")
    results = measure((PAPER001_CUDA_CORE[0], extra), GemmProblem(16, 16, 16), "v100", seed=1)
    assert format_table(results).splitlines()[-1].split(" | ")[4] == "-"

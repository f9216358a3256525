"""The paper-003 problem table: SparseRT, the dense SIMT GEMM and the CSR SpMM side by side on the engine."""

import pytest

from stcsim.experiments import sparsert_problems
from stcsim.experiments.sparsert_problems import PROBLEMS, main


def test_the_table_has_the_papers_20_problems():
    assert sorted(PROBLEMS) == list(range(1, 21))
    assert PROBLEMS[11] == (512, 512, 256) and PROBLEMS[12] == (64, 32, 12544)


def test_a_problem_runs_the_three_kernels_and_prints_their_ratios(monkeypatch, capsys):
    monkeypatch.setitem(sparsert_problems.PROBLEMS, 3, (40, 24, 33))  # a tiny stand-in for the run
    assert main(["--problems", "3", "--config", "h100"]) == 0
    row = capsys.readouterr().out.splitlines()[-1].split()
    number, m, k, n = (int(v) for v in row[:4])
    dense, csr, sparsert, x_dense, x_csr = (float(v.replace(",", "")) for v in row[4:9])
    assert (number, m, k, n) == (3, 40, 24, 33)
    assert min(dense, csr, sparsert) > 0
    assert x_dense == pytest.approx(dense / sparsert, abs=0.01)
    assert x_csr == pytest.approx(csr / sparsert, abs=0.01)
    assert row[-1] == "r8c64g2-auto"


def test_unknown_problems_are_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--problems", "21"])
    assert "the paper's are 1..20" in capsys.readouterr().err

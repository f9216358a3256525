"""The measurement tables of the sparse Tensor Core kernels at a tiny shape (docs: the ResNet layer)."""

import pytest

from stcsim.experiments import sparse_tc_measure


def test_the_tables_have_a_row_per_kernel_and_config(capsys):
    assert sparse_tc_measure.main(["--shape", "20x24x40", "--sparsities", "0.9"]) == 0
    out = capsys.readouterr().out
    stc = [r for r in out.splitlines() if r.startswith("| `gemm_")]
    assert len(stc) == 5 * 3
    assert all("refused" in r for r in stc if "shmma" in r and "| v100 |" in r)
    assert [r for r in stc if "gemm_wmma_f16" in r and "| v100 |" in r][0].split("|")[5].strip() == "1.00x"
    ext = [r for r in out.splitlines() if r.startswith("| 90% |")]
    assert [r.split("|")[2].strip() for r in ext] == ["l16", "l32", "l64", "static", "dynamic"]
    assert "(paper 004: 1.36x)" in ext[-1]


def test_bad_arguments_are_a_usage_error():
    with pytest.raises(SystemExit):
        sparse_tc_measure.main(["--shape", "20x24"])

"""The PGO build's training run (stcsim.tools.pgo_train): its launches run and are checked against numpy."""
from pathlib import Path

import pytest

from stcsim.tools import pgo_train


def test_training_cases_cover_each_kernel_class_and_the_functional_mode():
    names = {name for name, _, _ in pgo_train.TRAINING_CASES}
    for kind in ("gemm_wmma_f16", "gemm_mma_f16", "gemm_wmma_global", "gemm_simt", "gemm_mma_sp"):
        assert any(n.startswith(kind) for n in names), kind
    assert any(config is None for _, _, config in pgo_train.TRAINING_CASES)


def test_a_training_case_runs_and_reports_its_instructions():
    (line,) = pgo_train.train((("gemm_mma_sp_f16_f32_tile64x64x64_warp32x32_stage2", (64, 64, 128), "a100"),))
    assert line.startswith("gemm_mma_sp_f16_f32_tile64x64x64_warp32x32_stage2 64x64x128 a100: ")
    assert int(line.split(": ")[1].split()[0]) > 0


def test_a_file_that_is_no_extension_is_refused(tmp_path: Path):
    bogus = tmp_path / "_engine.so"
    bogus.write_text("not an extension")
    with pytest.raises(ImportError):
        pgo_train.load_engine_module(bogus)

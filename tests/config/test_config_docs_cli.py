"""docs/configs.md is current, and the command line shows resolved configs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stcsim.config import CONFIG_DIR, PARAMS
from stcsim.config.__main__ import main
from stcsim.config.derived import DERIVED
from stcsim.config.docs import render

DOCS = CONFIG_DIR.parent / "docs" / "configs.md"


def test_committed_docs_are_current() -> None:
    assert DOCS.read_text() == render(), "regenerate: python -m stcsim.config docs > docs/configs.md"


def test_docs_cover_every_key_and_derived_value() -> None:
    text = render()
    for key in PARAMS:
        assert f"| `{key.rsplit('.', 1)[1]}` |" in text
        assert f"| `{key}` |" in text  # in the per-config tables
    for key in DERIVED:
        assert f"| `{key}` |" in text


def test_module_entry_point_prints_the_docs() -> None:
    out = subprocess.run([sys.executable, "-m", "stcsim.config", "docs"], capture_output=True, text=True,
                         check=True, cwd=CONFIG_DIR.parent).stdout
    assert out == render()


def test_show_prints_the_flat_resolved_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "v100+stc"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "stc.enabled = true" in lines
    assert "stc.smma_k4.latency = 26" in lines
    assert "tensor.wmma_m16n16k16_f32.latency = 40" in lines
    assert main(["show", "v100", "--sources"]) == 0
    assert "l1d.hit_latency = 28  # configs/v100.yaml: Jia et al. 2018" in capsys.readouterr().out


def test_show_reports_errors_and_list_names_everything(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "v100+stcc"]) == 2
    assert "unknown overlay 'stcc'; available: extensor, stc, stc-pingpong" in capsys.readouterr().err
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "configs: a100, h100, t4, titanv, v100" in out and "overlays: extensor, stc, stc-pingpong" in out

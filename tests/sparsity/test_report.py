"""Tests of the pattern report and its command line."""

from __future__ import annotations

import pytest

from stcsim.sparsity.__main__ import main
from stcsim.sparsity.report import DEFAULT_PATTERNS, report_rows


def test_report_rows_cover_every_pattern() -> None:
    """One row per pattern: kept fraction near the target, bytes, ratio = dense fp16 bytes / bytes."""
    rows = report_rows((64, 200), 0.75, seed=1)
    assert len(rows) == len(DEFAULT_PATTERNS)
    for row in rows:
        assert row["bytes"] == sum(row["breakdown"].values())
        assert row["compression_ratio"] == pytest.approx(64 * 200 * 2 / row["bytes"])
        expected = 1.0 if row["pattern"] == "dense" else 0.25
        assert abs(row["kept_fraction"] - expected) < 0.03, row


def test_unreachable_targets_are_reported_not_raised() -> None:
    """2:4 and TVW cannot reach 30% sparsity: their rows carry the reason."""
    specs = ["nm:N=2,M=4", "tvw:G=64", "tw:G=64"]
    rows = dict(zip(specs, report_rows((32, 64), 0.3, patterns=specs), strict=True))
    assert "sparsity must be in [0.5, 1)" in rows["nm:N=2,M=4"]["note"]
    assert "sparsity must be in [0.5, 1)" in rows["tvw:G=64"]["note"]
    assert rows["tw:G=64"]["note"] == "" and rows["tw:G=64"]["bytes"] > 0


def test_cli_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m stcsim.sparsity report --shape 512x2304 --sparsity 0.75`` prints every pattern."""
    assert main(["report", "--shape", "512x2304", "--sparsity", "0.75"]) == 0
    out = capsys.readouterr().out
    for name in ("dense", "unstructured", "vw:", "shflbw:", "tvw:", "tw:", "tew:", "nm:", "bw:", "channel"):
        assert name in out
    assert "extensor:maxL=64" in out and "kept_fraction" in out and "compression_ratio" in out


def test_cli_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    """Bad shapes and sparsities exit with a usage error naming the allowed form."""
    with pytest.raises(SystemExit):
        main(["report", "--shape", "512by2304", "--sparsity", "0.75"])
    assert "512x2304" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report", "--shape", "8x8", "--sparsity", "1.5"])
    assert "[0, 1)" in capsys.readouterr().err

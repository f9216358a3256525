"""Calibration plumbing that runs anywhere: parsing ncu's CSV, joining it with the launch order, comparing."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stcsim.gpu.calibrate import SUITE, collect, compare, read_ncu_csv

HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",' \
    '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'


def _ncu_rows(launches: list[tuple[int, str, float]]) -> str:
    lines = ["==PROF== Connected to process 1", HEADER]
    for i, name, cycles in launches:
        for metric, value in (("gpc__cycles_elapsed.max", cycles), ("gpu__time_duration.sum", cycles / 2),
                              ("sm__cycles_active.avg", cycles / 3), ("smsp__inst_executed.sum", 1000.0)):
            lines.append(f'"{i}","1","python3","h","{name}","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0",'
                         f'"Command line profiler metrics","{metric}","cycle","{value:,.0f}"')
    return "\n".join(lines)


def test_read_ncu_csv_pivots_metrics_per_launch():
    df = read_ncu_csv(_ncu_rows([(0, "k", 1234.0), (1, "k", 2345.0)]))
    assert list(df["gpc__cycles_elapsed.max"]) == [1234.0, 2345.0]
    assert list(df["kernel_name"]) == ["k", "k"]


def test_collect_keeps_measured_launches_and_checks_order(tmp_path):
    kernel = SUITE[0][0]
    order = pd.DataFrame({"launch": [0, 1], "kernel": [kernel] * 2, "m": 8, "n": 8, "k": 8,
                          "role": ["warmup", "measured"]})
    order.to_csv(tmp_path / "order.csv", index=False)
    (tmp_path / "ncu.csv").write_text(_ncu_rows([(0, kernel, 900.0), (1, kernel, 800.0), (2, "helper", 5.0)]))
    out = collect(str(tmp_path / "ncu.csv"), str(tmp_path / "order.csv"))
    assert out["measured_cycles"].tolist() == [800.0]
    (tmp_path / "ncu.csv").write_text(_ncu_rows([(0, kernel, 900.0)]))
    with pytest.raises(ValueError, match="profiled 1 launches"):
        collect(str(tmp_path / "ncu.csv"), str(tmp_path / "order.csv"))


def test_compare_reports_mae_and_correlation(tmp_path):
    reference = Path(__file__).resolve().parents[2] / "results" / "reference" / "h100_calibration.csv"
    rows = pd.read_csv(reference, comment="#")
    small = rows[(rows.m == 200) & rows.kernel.str.contains("naive|stage2")]
    small.to_csv(tmp_path / "m.csv", index=False)
    c = compare(str(tmp_path / "m.csv"), "h100")
    rel = (c.rows["sim_cycles"] - c.rows["measured_cycles"]) / c.rows["measured_cycles"]
    assert c.mae == pytest.approx(float(np.abs(rel).mean()))
    assert -1.0 <= c.pearson <= 1.0
    assert "Pearson" in str(c)

"""Calibration plumbing that runs anywhere: parsing ncu's CSV, joining it with the launch order, comparing."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stcsim.config.errors import ConfigError
from stcsim.experiments import calibrate
from stcsim.experiments.calibrate import GEMM_SUITE, collect, compare, halves, read_ncu_csv, score, suite

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
    kernel = GEMM_SUITE[0][0]
    order = pd.DataFrame({"launch": [0, 1], "kernel": [kernel] * 2, "shape": "8x8x8",
                          "role": ["warmup", "measured"], "check": "ok"})
    order.to_csv(tmp_path / "order.csv", index=False)
    (tmp_path / "ncu.csv").write_text(_ncu_rows([(0, kernel, 900.0), (1, kernel, 800.0), (2, "helper", 5.0)]))
    out = collect(str(tmp_path / "ncu.csv"), str(tmp_path / "order.csv"))
    assert out["measured_cycles"].tolist() == [800.0]
    assert out["shape"].tolist() == ["8x8x8"] and out["check"].tolist() == ["ok"]
    (tmp_path / "ncu.csv").write_text(_ncu_rows([(0, kernel, 900.0)]))
    with pytest.raises(ValueError, match="profiled 1 launches"):
        collect(str(tmp_path / "ncu.csv"), str(tmp_path / "order.csv"))


def test_compare_reports_both_halves_from_an_old_style_csv(tmp_path):
    reference = Path(__file__).resolve().parents[2] / "results" / "reference" / "h100_calibration.csv"
    rows = pd.read_csv(reference, comment="#")  # m, n, k columns: the shape is derived
    small = rows[(rows.m == 200) & rows.kernel.str.contains("naive|stage2|simt")]
    small.to_csv(tmp_path / "m.csv", index=False)
    c = compare([str(tmp_path / "m.csv")], "h100")
    rel = (c.rows["sim_cycles"] - c.rows["measured_cycles"]) / c.rows["measured_cycles"]
    by_half = {h.half: h for h in c.halves}
    tuning = c.rows["half"] == "tuning"
    assert by_half["tuning"].cases == 2 and by_half["validation"].cases == 1
    assert by_half["tuning"].mae == pytest.approx(float(np.abs(rel[tuning]).mean()))
    assert by_half["all"].mae == pytest.approx(float(np.abs(rel).mean()))
    assert -1.0 <= by_half["all"].pearson <= 1.0
    assert "validation" in str(c) and "Pearson" in str(c)
    assert (c.rows["sass_per_ptx"] == c.rows["inst_executed"] / c.rows["sim_warp_insts"]).all()


def test_compare_averages_passes_and_reads_a_simulated_file(tmp_path):
    rng = np.random.default_rng()
    cases = suite()[-3:]
    first = rng.uniform(1e3, 1e5, len(cases))
    second = first * rng.uniform(0.9, 1.1, len(cases))
    for name, cycles in (("a.csv", first), ("b.csv", second)):
        pd.DataFrame({"kernel": [k for k, _ in cases], "shape": [s for _, s in cases],
                      "measured_cycles": cycles, "inst_executed": cycles / 2}).to_csv(
            tmp_path / name, index=False)
    sim = rng.uniform(1e3, 1e5, len(cases))
    pd.DataFrame({"kernel": [k for k, _ in cases], "shape": [s for _, s in cases], "sim_cycles": sim,
                  "sim_warp_insts": sim / 3}).to_csv(tmp_path / "sim.csv", index=False)
    c = compare([str(tmp_path / "a.csv"), str(tmp_path / "b.csv")], "h100", str(tmp_path / "sim.csv"))
    mean = (first + second) / 2
    assert c.rows["measured_cycles"].to_numpy() == pytest.approx(mean)
    assert c.rows["spread"].to_numpy() == pytest.approx(np.abs(first - second) / mean)
    assert c.rows["rel_error"].to_numpy() == pytest.approx((sim - mean) / mean)
    assert c.rows["sass_per_ptx"].to_numpy() == pytest.approx(3 * mean / 2 / sim)
    pd.DataFrame({"kernel": [cases[0][0]], "shape": [cases[0][1]], "measured_cycles": [1.0]}).to_csv(
        tmp_path / "short.csv", index=False)
    with pytest.raises(ValueError, match="same cases"):
        compare([str(tmp_path / "a.csv"), str(tmp_path / "short.csv")], "h100", str(tmp_path / "sim.csv"))


def test_score_finds_the_worst_ratio_per_class():
    rng = np.random.default_rng()
    measured = rng.uniform(1e3, 1e5, 4)
    factor = np.array([1.1, 0.5, 1.2, 3.0])
    rows = pd.DataFrame({"kernel": list("abcd"), "shape": "s", "half": ["tuning", "tuning", "validation",
                         "validation"], "class": ["x", "x", "y", "y"], "measured_cycles": measured,
                         "sim_cycles": measured * factor})
    c = score(rows)
    assert c.worst.set_index("class")["kernel"].to_dict() == {"x": "b", "y": "d"}
    assert c.worst["ratio"].tolist() == pytest.approx([0.5, 3.0])
    assert c.halves[0].mae == pytest.approx((0.1 + 0.5) / 2)


def test_every_suite_kernel_has_one_half():
    kernels = {k for k, _ in suite()}
    declared = halves()
    assert set(declared["kernel"]) == kernels
    assert set(declared["half"]) == {"tuning", "validation"}
    assert len(suite()) >= 40 and len(set(suite())) == len(suite())


def test_a_kernel_without_a_valid_half_is_a_config_error(tmp_path, monkeypatch):
    bad = tmp_path / "halves.yaml"
    bad.write_text("gemm_naive_f32_f32_tile16x16x1: {half: both, class: gemm-simt}\n")
    monkeypatch.setattr(calibrate, "HALVES_FILE", bad)
    with pytest.raises(ConfigError, match="gemm_naive.*tuning or validation"):
        halves()

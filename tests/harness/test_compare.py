"""`invoke compare`: speedups per layer and network over a baseline, geomean, baseline lookup, the plot."""

import numpy as np
import pandas as pd
import pytest

from stcsim.harness.compare import compare, format_comparison, load_results, main, resolve_baseline
from stcsim.harness.results import ResultStore


def _rows(variant, pattern, config, cycles, network="net", repeats=(1, 3)):
    return [{"row_type": "layer", "network": network, "batch": 1, "layer_index": i, "layer": f"l{i}",
             "variant": variant, "pattern": pattern, "sparsity": 0.0, "config": config, "m": 64, "n": 32,
             "k": 16 * (i + 1), "repeat": repeats[i], "macs": 1, "group_layers": len(cycles), "kernel": "g",
             "fallback": False, "fallback_reason": "", "density": 1.0, "check": "full", "check_ok": True,
             "host_seconds": 1.0, "launch_seconds": 1.0, "key": variant, "gpu_sim_cycle": c}
            for i, c in enumerate(cycles)]


def _write(path, rows):
    store = ResultStore(path)
    for row in rows:
        store.add(row)
    return path


@pytest.fixture
def two_files(tmp_path):
    rng = np.random.default_rng()
    base = rng.integers(1000, 5000, size=4)
    fast = rng.integers(200, 900, size=4)
    a = _write(tmp_path / "a.csv", _rows("dense/v100", "dense", "v100", base[:2]) +
               _rows("dense/v100", "dense", "v100", base[2:], network="other"))
    b = _write(tmp_path / "b.csv", _rows("vw@0.75/v100+stc", "vw:L=16,K=4,axis=row", "v100+stc", fast[:2]) +
               _rows("vw@0.75/v100+stc", "vw:L=16,K=4,axis=row", "v100+stc", fast[2:], network="other"))
    return a, b, base, fast


def test_speedups_per_layer_per_network_and_geomean(two_files):
    a, b, base, fast = two_files
    c = compare(load_results([a, b]), "dense/v100")
    layer = c.layers["vw@0.75/v100+stc"].to_numpy()
    assert np.allclose(layer, base / fast)
    net = (base[0] + 3 * base[1]) / (fast[0] + 3 * fast[1])
    other = (base[2] + 3 * base[3]) / (fast[2] + 3 * fast[3])
    assert np.isclose(c.networks.loc[("net", 1), "vw@0.75/v100+stc"], net)
    assert np.isclose(c.networks.loc[("GeoMean", ""), "vw@0.75/v100+stc"], np.sqrt(net * other))
    assert np.allclose(c.networks["dense/v100"], 1.0)
    assert "GeoMean" in format_comparison(c)


def test_baseline_by_label_pattern_and_config_or_default(two_files):
    frame = load_results(two_files[:2])
    assert resolve_baseline(frame, "") == "dense/v100"
    assert resolve_baseline(frame, "vw:L=16,K=4/v100+stc") == "vw@0.75/v100+stc"
    with pytest.raises(ValueError, match="names no variant; the files hold: dense/v100, vw@0.75"):
        resolve_baseline(frame, "dense/h100")
    dense = frame[frame["pattern"] == "dense"]
    twice = pd.concat([dense.assign(variant="on CUDA cores"), dense.assign(variant="on Tensor Cores")])
    with pytest.raises(ValueError, match="matches several variants"):
        resolve_baseline(twice, "dense/v100")


def test_runs_over_different_layers_compare_what_both_have_and_say_so(tmp_path):
    a = _write(tmp_path / "a.csv", _rows("base", "dense", "v100", [400, 100]))
    b = _write(tmp_path / "b.csv", _rows("other", "dense", "h100", [200])[:1])
    c = compare(load_results([a, b]), "base")
    assert np.isclose(c.networks.loc[("net", 1), "other"], 2.0)
    assert c.notes == ("net other: 1 of 2 layers",)


def test_main_prints_tables_and_draws_the_plot(two_files, tmp_path, capsys):
    a, b, _, _ = two_files
    png = tmp_path / "fig.png"
    assert main([str(a), str(b), "--baseline", "dense/v100", "--plot", str(png)]) == 0
    assert "speedup over dense/v100" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_a_file_that_is_not_a_network_run_is_exit_status_2(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"x": [1]}).to_csv(bad, index=False)
    assert main([str(bad)]) == 2
    assert "is not a network-run CSV" in capsys.readouterr().err

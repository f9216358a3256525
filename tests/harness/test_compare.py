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


def test_metric_time_uses_each_config_clock(tmp_path):
    # 1530 cycles on the v100 (1530 MHz) = 1 us; 1980 cycles on the h100 (1980 MHz) = 1 us
    a = _write(tmp_path / "a.csv", _rows("v", "dense", "v100", [1530, 3060]))
    b = _write(tmp_path / "b.csv", _rows("h", "dense", "h100", [1980, 1980]))
    frame = load_results([a, b])
    want = (1530 + 3 * 3060) / (1980 + 3 * 1980)
    assert np.isclose(compare(frame, "v").networks.loc[("net", 1), "h"], want)
    timed = compare(frame, "v", metric="time")
    assert np.isclose(timed.networks.loc[("net", 1), "h"], (1 + 3 * 2) / (1 + 3 * 1))
    assert np.isclose(timed.network_values.loc[("net", 1), "v"], 1 + 3 * 2)
    assert np.allclose(timed.layer_values["h"], [1.0, 1.0])
    rate = compare(frame, "v", metric="tflops")
    flops = 2 * 64 * 32 * (16 + 3 * 32)  # 2 x M x N x K x repeat over both layers
    assert np.isclose(rate.network_values.loc[("net", 1), "h"], flops / 4.0 / 1e6)  # TFLOP/s over 4 us
    assert np.isclose(rate.networks.loc[("net", 1), "h"], timed.networks.loc[("net", 1), "h"])


def test_metric_kernel_cycles_needs_the_column(tmp_path):
    rows = [dict(r, kernel_cycles=r["gpu_sim_cycle"] - 100) for r in _rows("a", "dense", "v100", [400, 200])]
    a = _write(tmp_path / "a.csv", rows)
    rows = [dict(r, kernel_cycles=100) for r in _rows("b", "dense", "v100", [300, 300])]
    b = _write(tmp_path / "b.csv", rows)
    c = compare(load_results([a, b]), "a", metric="kernel-cycles")
    assert np.isclose(c.networks.loc[("net", 1), "b"], (300 + 3 * 100) / (100 + 3 * 100))
    with pytest.raises(ValueError, match="--metric 'watts'"):
        compare(load_results([a, b]), "a", metric="watts")


def test_views_and_metric_on_the_command_line(two_files, tmp_path, capsys):
    a, b, _, _ = two_files
    assert main([str(a), str(b), "--metric", "time", "--view", "network"]) == 0
    out = capsys.readouterr().out
    assert "us per network" in out and "speedup over dense/v100 (us at each config's clock" in out
    assert "per-layer" not in out and "per launch" not in out
    assert main([str(a), str(b), "--view", "layer"]) == 0
    out = capsys.readouterr().out
    assert "per-layer speedup over dense/v100 (cycles)" in out and "GeoMean" not in out


def test_plot_labels_are_readable(tmp_path):
    from stcsim.harness.compare import _network_label, readable_label

    assert readable_label("dense/configs/my_gpu.yaml+stc") == "dense/my_gpu+stc"
    assert readable_label("nm:N=2,M=4@0.5//tmp/x/h100.yaml/tensor-core") == "nm:N=2,M=4@0.5/h100/tensor-core"
    assert readable_label("dense/h100") == "dense/h100"
    label = _network_label(("llama2-7b:phase=prefill,seq_len=2048", 1))
    assert label == "llama2-7b\nphase=prefill\nseq_len=2048"
    assert _network_label(("bert_base", 8)) == "bert_base\n(batch 8)"

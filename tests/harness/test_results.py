"""The results file: rows by identity, totals weighted by repeat counts, order-independent, stable on disk."""

import numpy as np
import pandas as pd

from stcsim.harness.results import ResultStore, total_row


def _row(layer: str, index: int, repeat: int, cycles: int, insn: int, variant: str = "dense/v100",
         key: str = "k", group_layers: int = 2) -> dict:
    return {
        "row_type": "layer", "network": "net", "batch": 1, "layer_index": index, "layer": layer,
        "variant": variant, "pattern": "dense", "sparsity": 0.0, "config": "v100", "kernel_selector": "auto",
        "repeat": repeat, "macs": 1000 * repeat, "group_layers": group_layers, "kernel": "gemm_x",
        "fallback": False, "fallback_reason": "", "density": 0.5 + index / 10, "check": "full",
        "rel_error": 1e-7 * (index + 1), "check_ok": True, "host_seconds": 0.25, "launch_seconds": 0.125,
        "key": key, "gpu_sim_cycle": cycles, "gpu_sim_insn": insn, "gpu_ipc": insn / cycles,
        "grid_ctas": 4 + index, "achieved_occupancy": 0.3,
    }


def test_total_sums_stats_times_repeat_and_recomputes_ratios():
    rows = pd.DataFrame([_row("a", 0, 1, 100, 1000), _row("b", 1, 3, 50, 400)])
    total = total_row(rows)
    assert total["row_type"] == "total" and total["repeat"] == 4
    assert total["gpu_sim_cycle"] == 100 + 3 * 50 and total["gpu_sim_insn"] == 1000 + 3 * 400
    assert np.isclose(total["gpu_ipc"], 2200 / 250)
    assert "grid_ctas" not in total and "achieved_occupancy" not in total
    assert np.isclose(total["density"], (0.5 * 1000 + 0.6 * 3000) / 4000)


def test_file_is_sorted_totals_only_for_complete_groups_and_reads_back_identically(tmp_path):
    path = tmp_path / "results.csv"
    store = ResultStore(path)
    store.add(_row("b", 1, 3, 50, 400))
    store.add(_row("x", 0, 1, 70, 300, variant="other", group_layers=2))
    store.add(_row("a", 0, 1, 100, 1000))
    frame = pd.read_csv(path)
    assert list(frame["layer"]) == ["a", "b", "(network total)", "x"]
    assert list(frame["row_type"]) == ["layer", "layer", "total", "layer"]
    text = path.read_text()
    ResultStore(path).write()
    assert path.read_text() == text


def test_same_identity_replaces_and_the_cache_answers_by_key(tmp_path):
    store = ResultStore(tmp_path / "r.csv")
    store.add(_row("a", 0, 1, 100, 1000, key="old"))
    identity = ("net", 1, "a", "dense/v100")
    assert ResultStore(tmp_path / "r.csv").cached(identity, "old")["gpu_sim_cycle"] == 100
    assert ResultStore(tmp_path / "r.csv").cached(identity, "new") is None
    store.add(_row("a", 0, 1, 90, 1000, key="new"))
    reopened = ResultStore(tmp_path / "r.csv")
    assert reopened.cached(identity, "new")["gpu_sim_cycle"] == 90
    reopened.discard([identity])
    reopened.write()
    assert pd.read_csv(tmp_path / "r.csv").empty

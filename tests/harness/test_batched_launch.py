"""Issue 45 item 3: a batched activation x activation layer (attention's score and context GEMMs) runs as one
strided-batched launch per layer where a kernel with a batch dimension runs on the config, the per-head serial
form only with the network's ``launch=serial``; the CSV and the table say which form ran, and both forms count
the same GEMMs and MACs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from stcsim.harness.jobs import BATCHED, SERIAL, Variant, decide_launch
from stcsim.harness.network_run import RESULTS_CSV
from stcsim.workloads import get_network

REPO = Path(__file__).resolve().parents[2]
BERT = "bert_base:seq_len=32"
"""BERT-base at 32 tokens: scores (32, 32, 64) and context (64, 32, 32), 12 heads x 12 layers of each."""


@pytest.fixture(scope="module")
def both_forms(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, str]:
    """BERT's batched form (the default) and serial form (``--launch serial``) on h100 into one results file:
    the rows and the printed tables."""
    out = tmp_path_factory.mktemp("batched")
    printed = ""
    for extra in ([], ["--launch", "serial"]):
        cmd = [sys.executable, "-m", "stcsim.harness.network_run", "--workload", BERT, "--config", "h100",
               "--jobs", "1", "--no-progress", "--out", str(out), *extra]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600)
        assert done.returncode == 0, done.stderr
        printed += done.stdout
    return pd.read_csv(out / RESULTS_CSV), printed


def _attention(frame: pd.DataFrame, network: str) -> pd.DataFrame:
    rows = frame[(frame["row_type"] == "layer") & (frame["network"] == network)]
    return rows[rows["kind"].isin(["attn_score", "attn_context"])].set_index("kind")


def test_batched_is_one_launch_per_layer_and_serial_one_per_head(both_forms) -> None:
    frame, _ = both_forms
    batched, serial = _attention(frame, BERT), _attention(frame, f"{BERT},launch=serial")
    assert list(batched["launch"]) == [BATCHED, BATCHED] and list(serial["launch"]) == [SERIAL, SERIAL]
    assert list(batched["launch_batch"]) == [12, 12] and list(serial["launch_batch"]) == [1, 1]
    assert list(batched["repeat"]) == [12, 12] and list(serial["repeat"]) == [144, 144]  # launches
    assert batched["kernel"].str.startswith("gemm_wgmma_batched_").all()
    assert not serial["kernel"].str.startswith("gemm_wgmma_batched_").any()
    assert batched["check_ok"].all() and serial["check_ok"].all()
    assert (batched["macs"] == serial["macs"]).all()  # the same GEMMs, launched differently
    for kind in ("attn_score", "attn_context"):  # 12 heads side by side cost about one head's launch
        b, s = batched.loc[kind], serial.loc[kind]
        assert b["gpu_sim_cycle"] < 1.5 * s["gpu_sim_cycle"]
        assert b["gpu_sim_cycle"] * b["repeat"] < s["gpu_sim_cycle"] * s["repeat"] / 5


def test_totals_count_launches_and_the_same_macs(both_forms) -> None:
    frame, out = both_forms
    totals = frame[frame["row_type"] == "total"].set_index("network")
    batched, serial = totals.loc[BERT], totals.loc[f"{BERT},launch=serial"]
    assert batched["macs"] == serial["macs"] == get_network(BERT).gemm_macs
    assert batched["repeat"] == serial["repeat"] - 2 * (144 - 12)
    assert batched["gpu_sim_cycle"] < serial["gpu_sim_cycle"]
    assert "batched x12" in out and " serial " in out


def test_v100_runs_batched_on_wmma_and_cuda_cores_serially_saying_why() -> None:
    """On v100 the batched layer takes the batched WMMA tiles; with ``--kernel cuda-core`` (no SIMT kernel has
    a batch dimension) it runs one GEMM per launch, with the reason in ``launch_note``."""
    net = get_network(BERT)
    scores = next(layer for layer in net.layers if layer.kind.value == "attn_score")
    per_launch, note, decided = decide_launch(scores, Variant.make("dense", 0.0, "v100"))
    assert (per_launch, note) == (12, "") and decided[3].kernel.startswith("gemm_wmma_batched_")
    per_launch, note, decided = decide_launch(scores, Variant.make("dense", 0.0, "v100", "cuda-core"))
    assert per_launch == 1 and "batch dimension" in note and "v100" in note
    assert decided[3].kernel.startswith("gemm_simt_")
    query = next(layer for layer in net.layers if layer.has_weights)
    assert decide_launch(query, Variant.make("dense", 0.0, "v100"))[:2] == (1, "")


def test_launch_flag_conflicting_with_the_spec_is_a_one_line_error() -> None:
    cmd = [sys.executable, "-m", "stcsim.harness.network_run", "--workload", f"{BERT},launch=serial",
           "--launch", "batched", "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 2 and "launch=batched conflicts with launch=serial" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1

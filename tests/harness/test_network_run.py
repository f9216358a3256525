"""`invoke run --workload`: tables and totals, resume after a kill, stale rows, interruption, failures,
the process pool and the Dask executor give the same file."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from stcsim.harness import executor as executor_module
from stcsim.harness.executor import DaskExecutor, InlineExecutor
from stcsim.harness.jobs import Variant, WeightSource, plan_network
from stcsim.harness.network_run import RESULTS_CSV, main, run_jobs, sweep
from stcsim.harness.results import HOST_TIME_COLUMNS

MOBILENET = "mobilenet_v1:image_size=32"
RESNET = "resnet18:image_size=32"


def _frame(folder) -> pd.DataFrame:
    return pd.read_csv(folder / RESULTS_CSV).drop(columns=list(HOST_TIME_COLUMNS))


def test_main_prints_the_layer_table_total_and_fallbacks(dense_only, tmp_path, capsys):
    args = ["--workload", MOBILENET, "--layers", "2", "--pattern", "dense", "--pattern", "vw:L=16,K=4",
            "--config", "v100", "--jobs", "1", "--out", str(tmp_path), "--no-progress", "--allow-fallback"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "mobilenet_v1:image_size=32 (batch 1), dense/v100:" in out
    assert out.count("network total:") == 2
    assert "dense fallbacks (2 of 2 layers):" in out and "no kernel implements the sparsity pattern" in out
    assert "4 layer runs: 4 simulated, 0 reused" in out
    frame = pd.read_csv(tmp_path / RESULTS_CSV)
    assert list(frame["row_type"]) == ["layer", "layer", "total"] * 2
    assert main(args) == 0
    assert "4 layer runs: 0 simulated, 4 reused" in capsys.readouterr().out


def test_bad_input_is_exit_status_2(tmp_path, capsys):
    assert main(["--workload", "resnet51", "--out", str(tmp_path)]) == 2
    assert "unknown" in capsys.readouterr().err
    assert main(["--workload", MOBILENET, "--pattern", "vw:L=16,K=17", "--out", str(tmp_path)]) == 2


def test_killing_a_run_halfway_and_rerunning_gives_the_uninterrupted_csv(tmp_path):
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    cmd = [sys.executable, "-m", "stcsim.harness.network_run", "--workload", RESNET, "--jobs", "1",
           "--no-progress", "--layers", "8", "--out", str(killed)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    csv, deadline = killed / RESULTS_CSV, time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if csv.exists() and (pd.read_csv(csv)["row_type"] == "layer").sum() >= 3:
            break
        time.sleep(0.02)
    assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read().decode()}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = pd.read_csv(csv)
    done = int((partial["row_type"] == "layer").sum())
    assert 3 <= done < 8 and "total" not in set(partial["row_type"])

    jobs = plan_network(RESNET, [Variant.make("dense", 0, "v100")], max_layers=8)
    resumed = run_jobs(jobs, killed, InlineExecutor(), progress=False)
    assert (resumed.reused, resumed.simulated) == (done, 8 - done)
    uninterrupted = run_jobs(jobs, whole, progress=False, make={"workers": 2})
    assert uninterrupted.simulated == 8 and uninterrupted.ok
    pd.testing.assert_frame_equal(_frame(killed), _frame(whole))


def test_identical_runs_under_two_labels_are_simulated_once(tmp_path, seed):
    variants = [Variant.make("unstructured", 0.9, "v100", label=label) for label in ("A", "B")]
    jobs = plan_network(MOBILENET, variants, weights=WeightSource(seed), max_layers=2)
    summary = run_jobs(jobs, tmp_path, InlineExecutor(), progress=False)
    assert (summary.simulated, summary.shared) == (2, 2)
    layers = summary.frame[summary.frame["row_type"] == "layer"]
    assert list(layers["variant"]) == ["A", "A", "B", "B"]
    assert list(layers["gpu_sim_cycle"][:2]) == list(layers["gpu_sim_cycle"][2:])


def test_an_edited_config_invalidates_only_its_rows(tmp_path):
    overlay = tmp_path / "slow_tensor.yaml"
    overlay.write_text("tensor:\n  wmma_m16n16k16_f32:\n    issue_interval: 60\n")
    # A sweep point holds its config resolved when it was made: a run after the edit makes its points again
    # (as a new command does), so the plan is built from a fresh sweep each time.
    points = lambda: sweep(["dense"], [0.0], ["v100", f"v100+{overlay}"], ["auto"])  # noqa: E731
    plan = lambda: plan_network(MOBILENET, points(), max_layers=2)  # noqa: E731
    first = run_jobs(plan(), tmp_path, InlineExecutor(), progress=False)
    assert first.simulated == 4
    overlay.write_text("tensor:\n  wmma_m16n16k16_f32:\n    issue_interval: 120\n")
    from stcsim.harness import jobs as jobs_module

    jobs_module.config_digest.cache_clear()
    second = run_jobs(plan(), tmp_path, InlineExecutor(), progress=False)
    assert (second.reused, second.simulated) == (2, 2)
    rows = second.frame[second.frame["row_type"] == "total"].set_index("config")["gpu_sim_cycle"]
    before = first.frame[first.frame["row_type"] == "total"].set_index("config")["gpu_sim_cycle"]
    assert rows["v100"] == before["v100"] and rows[f"v100+{overlay}"] > before[f"v100+{overlay}"]


class _InterruptAfterOne(InlineExecutor):
    def map_unordered(self, fn, items):
        items = iter(items)
        yield fn(next(items))
        raise KeyboardInterrupt


def test_ctrl_c_keeps_the_finished_rows(tmp_path, seed):
    jobs = plan_network(MOBILENET, [Variant.make("dense", 0, "v100")], weights=WeightSource(seed),
                        max_layers=3)
    summary = run_jobs(jobs, tmp_path, _InterruptAfterOne(), progress=False)
    assert summary.interrupted and not summary.ok and summary.simulated == 1
    assert list(pd.read_csv(tmp_path / RESULTS_CSV)["row_type"]) == ["layer"]


def test_the_costliest_jobs_start_first(tmp_path, monkeypatch, seed):
    """A short job, not a long one, ends a run on several workers: jobs start in decreasing
    ``LayerJob.cost`` (threads launched times K per block), whatever the plan's order."""
    jobs = plan_network(RESNET, [Variant.make("dense", 0, "v100")], weights=WeightSource(seed), max_layers=6)
    started: list[str] = []

    class Record(InlineExecutor):
        def map_unordered(self, fn, items):
            for index, job in items:
                started.append(job.layer.name)
                yield fn((index, job))

    run_jobs(jobs, tmp_path, Record(), progress=False)
    costs = {job.layer.name: job.cost() for job in jobs}
    assert sorted(started) == sorted(costs) and len(set(costs.values())) > 1
    assert [costs[name] for name in started] == sorted(costs.values(), reverse=True)
    assert [job.layer.name for job in jobs] != started  # the plan's order is not already the costliest first


def test_a_failing_layer_is_reported_and_the_others_run(tmp_path, monkeypatch, seed):
    jobs = plan_network(MOBILENET, [Variant.make("dense", 0, "v100")], weights=WeightSource(seed),
                        max_layers=3)
    real = executor_module.run_job

    def flaky(job):
        if job.layer.name == jobs[1].layer.name:
            raise RuntimeError("simulated failure")
        return real(job)

    monkeypatch.setattr(executor_module, "run_job", flaky)
    summary = run_jobs(jobs, tmp_path, InlineExecutor(), progress=False)
    assert summary.simulated == 2 and [j.layer.name for j, _ in summary.failed] == [jobs[1].layer.name]
    assert "RuntimeError: simulated failure" in summary.failed[0][1].message
    assert "total" not in set(summary.frame["row_type"])


def test_a_sweep_on_a_dask_local_cluster_matches_the_local_run(tmp_path, seed):
    pytest.importorskip("distributed", reason="the dask executor is the optional extra stcsim[dask]")
    variants = sweep(["dense", "unstructured"], [0.9], ["v100"], ["auto"])
    jobs = plan_network(MOBILENET, variants, weights=WeightSource(seed), max_layers=2)
    local = run_jobs(jobs, tmp_path / "local", InlineExecutor(), progress=False)
    dask = DaskExecutor(workers=1)
    try:
        remote = run_jobs(jobs, tmp_path / "dask", dask, progress=False)
    finally:
        dask.close()
    assert local.simulated == remote.simulated == 4 and remote.ok
    pd.testing.assert_frame_equal(_frame(tmp_path / "local"), _frame(tmp_path / "dask"))


def test_kernel_choices_simulated_on_the_workers_give_the_same_rows(tmp_path, monkeypatch):
    """With several workers the per-shape choices' candidate launches are simulated on the pool first
    (``presimulate``); the rows equal those of one worker choosing in the planning process."""
    from stcsim.harness import kernel_choice

    rows, listed, simulate_all = {}, [], kernel_choice.simulate_all
    monkeypatch.setattr(kernel_choice, "simulate_all", lambda wanted, runner: (listed.append(len(wanted)),
                                                                               simulate_all(wanted, runner)))
    for jobs in (1, 2):
        monkeypatch.setenv("STCSIM_CACHE", str(tmp_path / f"cache{jobs}"))
        monkeypatch.setattr("stcsim.harness.kernel_choice._simulated", {})
        out = tmp_path / f"jobs{jobs}"
        assert main(["--workload", RESNET, "--layers", "2", "--config", "v100", "--jobs", str(jobs),
                     "--out", str(out), "--no-progress"]) == 0
        rows[jobs] = _frame(out)
        assert list((tmp_path / f"cache{jobs}" / "kernel_choice").glob("*.json"))
    assert "per-shape" in set(rows[2]["kernel_choice"]) and len(listed) == 1 and listed[0] > 1
    pd.testing.assert_frame_equal(rows[1], rows[2])

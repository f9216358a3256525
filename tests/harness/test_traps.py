"""Issue 45's traps, driven the way a user meets them: the network-run and compare CLIs and invoke as
subprocesses (exit codes, stderr lines, the CSV), on the smallest workloads."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from stcsim.harness import run as single_run
from stcsim.harness.jobs import Variant, extra_zeros
from stcsim.harness.network_run import RESULTS_CSV, sweep

REPO = Path(__file__).resolve().parents[2]
TINY = ["--workload", "mobilenet_v1:image_size=32", "--jobs", "1", "--no-progress"]
"""Two cheap unique shapes of a small network, one worker, no bar: a network run in about a second."""


def _network_run(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "stcsim.harness.network_run", *TINY, *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)


def _invoke(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "invoke", "-r", str(REPO), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A dense run and a fallback run (vw:L=15,K=4, allowed) of the same two layers, with their output."""
    root = tmp_path_factory.mktemp("runs")
    dense = _network_run("--layers", "2", "--out", str(root / "dense"))
    fallback = _network_run("--layers", "2", "--pattern", "vw:L=15,K=4", "--allow-fallback", "--out",
                            str(root / "fallback"))
    assert dense.returncode == 0, dense.stderr
    assert fallback.returncode == 0, fallback.stderr
    return {"dense": root / "dense" / RESULTS_CSV, "fallback": root / "fallback" / RESULTS_CSV,
            "fallback_out": fallback.stdout}


# 1. a fixed-ratio pattern runs at its own sparsity; more is extra zeros, with a warning

def test_a_fixed_ratio_pattern_runs_at_its_own_sparsity(tmp_path):
    done = _network_run("--layers", "1", "--pattern", "nm:N=2,M=4", "--config", "h100", "--out",
                        str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    layers = pd.read_csv(tmp_path / RESULTS_CSV).query("row_type == 'layer'")
    assert list(layers["variant"]) == ["nm:N=2,M=4@0.5/h100"]
    assert list(layers["sparsity"]) == [0.5] and list(layers["density"]) == [0.5]


def test_sparsity_defaults_per_pattern_and_extra_zeros_say_so():
    variants = sweep(["nm:N=2,M=4", "vw:L=16,K=8", "unstructured", "dense"], [], ["v100"], ["auto"])
    assert [v.sparsity for v in variants] == [0.5, 0.5, 0.75, 0.0]
    assert not any(map(extra_zeros, variants))
    assert extra_zeros(Variant.make("unstructured", 0.9, "v100")) == ""
    why = extra_zeros(Variant.make("nm:N=2,M=4", 0.75, "v100"))
    assert "own sparsity is 0.5" in why and "extra zeros" in why and "0.25" in why


def test_more_than_the_patterns_own_sparsity_is_extra_zeros_with_a_warning(tmp_path):
    done = _network_run("--layers", "1", "--pattern", "nm:N=2,M=4", "--sparsity", "0.75", "--config", "h100",
                        "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "extra zeros" in warnings[0] and "own sparsity is 0.5" in warnings[0]
    layers = pd.read_csv(tmp_path / RESULTS_CSV).query("row_type == 'layer'")
    assert list(layers["density"]) == [0.25]


def test_one_kernel_run_of_a_fixed_ratio_pattern_needs_no_sparsity(capsys):
    assert single_run.main(["--pattern", "nm:N=2,M=4", "--config", "none", "--shape", "16x16x64"]) == 0
    assert "nm:N=2,M=4" in capsys.readouterr().out


# 2. a pattern value no kernel implements is an error unless --allow-fallback; compare marks fallbacks

def test_a_pattern_value_no_kernel_implements_is_a_one_line_error(tmp_path):
    done = _network_run("--layers", "1", "--pattern", "vw:L=15,K=4", "--out", str(tmp_path))
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("error: ")
    assert "vw:L=16,K=4,axis=row" in done.stderr and "--allow-fallback" in done.stderr
    assert not (tmp_path / RESULTS_CSV).exists()
    family = _network_run("--layers", "1", "--pattern", "bw", "--out", str(tmp_path))
    assert family.returncode == 2 and "kernels exist for unstructured" in family.stderr


def test_allowed_fallbacks_are_marked_with_one_line_per_reason(runs):
    out = str(runs["fallback_out"])
    assert "dense fallbacks (2 of 2 layers):" in out
    notes = [line for line in out.splitlines() if line.startswith("  * ")]
    assert len(notes) == 1 and "conv1, conv_pw_2: ran dense" in notes[0]


def test_compare_marks_the_runs_that_fell_back(runs):
    done = _invoke("compare", str(runs["dense"]), str(runs["fallback"]))
    assert done.returncode == 0, done.stderr
    geomean = next(line for line in done.stdout.splitlines() if line.startswith("GeoMean"))
    base, fell_back = geomean.split()[-2:]
    assert base == "1.00" and fell_back.endswith("*")
    assert "* dense fallback" in done.stdout and "2 of 2 layers" in done.stdout


# 3. invoke as a person uses it

def test_invoke_compare_takes_the_files_as_arguments_after_dash_dash_and_as_csv(runs):
    a, b = str(runs["dense"]), str(runs["fallback"])
    outputs = [_invoke("compare", a, b), _invoke("compare", "--", a, b),
               _invoke("compare", "--csv", a, "--csv", b),
               _invoke("compare", "--baseline", "dense/v100", a, b)]
    assert [done.returncode for done in outputs] == [0, 0, 0, 0], [done.stderr for done in outputs]
    assert len({done.stdout for done in outputs}) == 1


def test_dash_h_is_help():
    for flag in ("-h", "--help"):
        done = _invoke("run", flag)
        assert done.returncode == 0, done.stderr
        assert "Usage: inv[oke] [--core-opts] run" in done.stdout and "--allow-fallback" in done.stdout


def _flags(help_text: str) -> set[str]:
    """The long options of a help text's option lines (first column), --help aside."""
    heads = (line.strip().split("  ")[0] for line in help_text.splitlines())
    flags = {flag for head in heads if head.startswith("-") for flag in re.findall(r"--[a-z][a-z-]+", head)}
    return flags - {"--help"}


@pytest.mark.parametrize(("task", "module"), [
    ("run", "stcsim.harness.network_run"), ("run", "stcsim.harness.run"),
    ("reproduce", "stcsim.experiments.reproduce"), ("compare", "stcsim.harness.compare"),
    ("bench", "stcsim.tools.sim_speed"),
])
def test_every_option_of_the_module_is_an_invoke_option(task, module):
    ours = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, cwd=REPO,
                          check=True).stdout
    theirs = _invoke("--help", task)
    assert theirs.returncode == 0, theirs.stderr
    assert _flags(ours) - _flags(theirs.stdout) == set()


def test_an_out_that_is_a_file_or_cannot_be_made_is_one_line_exit_2(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    for out, says in ((afile, "is a file"), ("/proc/stcsim-test/x", "cannot create the folder")):
        done = _invoke("run", "--workload", "mobilenet_v1:image_size=32", "--layers", "1", "--out", str(out))
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: --out ")
        assert says in done.stderr
        assert "Traceback" not in done.stderr


def test_ctrl_c_through_invoke_ends_cleanly_with_status_130(tmp_path):
    cmd = [sys.executable, "-m", "invoke", "-r", str(REPO), "run", "--workload", "vgg16", "--jobs", "1",
           "--out", str(tmp_path)]
    # its own process group, as a terminal's foreground job, with Ctrl-C's default action as a shell gives it
    # (a process that starts with SIGINT ignored, as it inherits from a test runner an earlier library left
    # ignoring it, keeps ignoring it)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    csv, deadline = tmp_path / RESULTS_CSV, time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if csv.exists() and (pd.read_csv(csv)["row_type"] == "layer").any():
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole group
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "re-run the same command to resume" in out and "Traceback" not in out


def test_the_progress_bar_shows_through_invoke_on_a_terminal(tmp_path):
    main, sub = pty.openpty()
    cmd = [sys.executable, "-m", "invoke", "-r", str(REPO), "run", "--workload", "mobilenet_v1:image_size=32",
           "--layers", "1", "--jobs", "1", "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdin=sub, stdout=sub, stderr=sub, cwd=REPO)
    os.close(sub)
    seen = b""
    while select.select([main], [], [], 120)[0]:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    assert proc.wait(timeout=60) == 0, seen.decode(errors="replace")
    assert b"simulating" in seen and b"simulated cycles" in seen


# 4. host time labelled: the jobs' host seconds summed, the run's wall and CPU time

def test_the_summary_labels_wall_and_cpu_time(runs):
    out = str(runs["fallback_out"])
    assert "host time of its layer jobs summed:" in out
    assert re.search(r"; \d+\.\d s wall, \d+\.\d s CPU \(this process and its workers\)", out)


# 5. docs/configs.md's example runs

def test_the_configs_doc_example_runs(monkeypatch):
    text = (REPO / "docs" / "configs.md").read_text()
    example = re.search(r"```python\n(.*?)```", text, re.S)
    assert example is not None
    monkeypatch.chdir(REPO)  # the example names configs/ by a relative path
    exec(compile(example.group(1), "docs/configs.md", "exec"), {})


def test_a_pt_weights_file_without_torch_is_a_one_line_error(tmp_path, monkeypatch):
    """A .pt weights file on a machine without PyTorch: exit 2 with one line, no traceback (issue 46)."""
    import builtins

    from stcsim.harness import network_run

    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *args, **kwargs)

    weights = tmp_path / "w.pt"
    weights.write_bytes(b"not really a torch file")
    monkeypatch.setattr(builtins, "__import__", no_torch)
    code = network_run.main(["--workload", "mobilenet_v1:image_size=32", "--layers", "1", "--weights",
                             str(weights), "--out", str(tmp_path / "out"), "--no-check"])
    assert code == 2

"""Results files under faults (issue 46): one run at a time owns a results file (a lock naming its pid and
host; a stale one is taken over), a damaged file is an error naming file and line or is repaired with a
backup, never rows duplicated or lost; unusable folders are one-line errors; files get the umask's mode."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from stcsim.harness import results
from stcsim.harness.files import FileUseError, InUseError, write_csv_atomic
from stcsim.harness.network_run import RESULTS_CSV
from stcsim.harness.network_run import main as network_run
from stcsim.harness.results import ResultsFileError, ResultStore

MOBILENET = "mobilenet_v1:image_size=32"

# Holds a ResultStore of argv[1] open until its stdin closes.
HOLDER = """
import sys
from stcsim.harness.results import ResultStore
store = ResultStore(sys.argv[1])
print("held", flush=True)
sys.stdin.read()
"""


def _row(layer: str, index: int, key: str = "k") -> dict:
    return {
        "row_type": "layer", "network": "net", "batch": 1, "layer_index": index, "layer": layer,
        "variant": "dense/v100", "pattern": "dense", "sparsity": 0.0, "config": "v100",
        "kernel_selector": "auto", "repeat": 1 + index, "macs": 1000, "group_layers": 2, "kernel": "gemm_x",
        "fallback": False, "fallback_reason": "", "density": 1.0, "check": "full", "rel_error": 1e-7,
        "check_ok": True, "host_seconds": 0.25, "launch_seconds": 0.125, "key": key,
        "gpu_sim_cycle": 100 + index, "gpu_sim_insn": 1000, "gpu_ipc": 1000 / (100 + index),
    }


def _results(path: Path) -> Path:
    """A results file of one complete group: header (line 1), two layer rows (2, 3), the total (4)."""
    with ResultStore(path) as store:
        store.add(_row("a", 0))
        store.add(_row("b", 1))
    assert list(pd.read_csv(path)["row_type"]) == ["layer", "layer", "total"]
    return path


@pytest.fixture
def holder(tmp_path: Path):
    """A child process holding tmp_path/results.csv open in a ResultStore."""
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / RESULTS_CSV)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    line = child.stdout.readline().strip()
    assert line == "held", child.stderr.read() if child.stderr else ""
    yield child
    child.stdin.close()
    child.wait(timeout=30)


def test_a_results_file_open_in_a_running_process_is_refused(tmp_path, holder):
    with pytest.raises(InUseError) as caught:
        ResultStore(tmp_path / RESULTS_CSV)
    message = str(caught.value)
    assert f"pid {holder.pid} on host {socket.gethostname()}" in message
    assert "is in use by another run" in message and f"{tmp_path / RESULTS_CSV}.lock" in message
    assert "\n" not in message


def test_a_second_network_run_into_the_same_folder_is_refused(tmp_path, holder, capsys):
    args = ["--workload", MOBILENET, "--layers", "1", "--jobs", "1", "--no-progress", "--out", str(tmp_path)]
    assert network_run(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and f"pid {holder.pid}" in err and "\n" not in err
    assert not (tmp_path / RESULTS_CSV).exists()  # the holder wrote nothing yet, and neither did this run


def test_a_stale_lock_is_taken_over_with_a_note(tmp_path, capsys):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(gone.stdout)
    lock = tmp_path / "results.csv.lock"
    lock.write_text(json.dumps({"pid": dead_pid, "host": socket.gethostname(), "since": "then"}))
    store = ResultStore(tmp_path / RESULTS_CSV)
    err = capsys.readouterr().err
    assert "taking over the stale lock" in err and f"pid {dead_pid}" in err and "no longer running" in err
    assert json.loads(lock.read_text())["pid"] == os.getpid()
    store.close()
    assert not lock.exists()


def test_stores_of_one_process_share_the_lock_until_the_last_closes(tmp_path):
    lock = tmp_path / "r.csv.lock"
    first = ResultStore(tmp_path / "r.csv")
    second = ResultStore(tmp_path / "r.csv")
    first.close()
    assert lock.exists()
    second.close()
    second.close()
    assert not lock.exists()
    del first, second


def test_a_garbage_line_is_an_error_naming_file_and_line(tmp_path):
    path = _results(tmp_path / "r.csv")
    with path.open("a") as f:
        f.write("garbage\n")
    before = path.read_bytes()
    with pytest.raises(ResultsFileError, match=rf"^{path}:5: not a result row: 1 fields where the header"):
        ResultStore(path)
    assert path.read_bytes() == before
    assert not path.with_name("r.csv.lock").exists()  # the failed open released its lock


@pytest.mark.parametrize("damage, line, why", [
    (lambda text: text.replace("\n", "\nnet,1\n", 1), 2, "2 fields where the header has"),
    (lambda text: text + text.splitlines()[0] + "\n", 5, "row_type 'row_type' is neither"),
    (lambda text: text + text.splitlines()[1] + "\n", 5,
     "a second row of net/1/a/dense/v100 (the first is at line 2)"),
    (lambda text: text.replace(",1,0,a,", ",1.0,0,a,", 1), 2, "batch '1.0' is not an integer"),
    (lambda text: text.replace(",False,", ",maybe,", 1), 2, "fallback 'maybe' is neither True nor False"),
])
def test_every_kind_of_bad_row_is_named(tmp_path, damage, line, why):
    path = _results(tmp_path / "r.csv")
    path.write_text(damage(path.read_text()))
    with pytest.raises(ResultsFileError, match=rf"^{path}:{line}: not a result row: .*"):
        ResultStore(path)
    with pytest.raises(ResultsFileError) as caught:
        ResultStore(path)
    assert why in str(caught.value)


def test_a_damaged_file_stops_a_network_run_before_it_writes(tmp_path, capsys):
    args = ["--workload", MOBILENET, "--layers", "2", "--jobs", "1", "--no-progress", "--out", str(tmp_path)]
    assert network_run(args) == 0
    csv = tmp_path / RESULTS_CSV
    assert list(pd.read_csv(csv)["row_type"]) == ["layer", "layer", "total"]
    with csv.open("a") as f:
        f.write("x,y,z\n")
    before = csv.read_bytes()
    capsys.readouterr()
    assert network_run(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {csv}:5: not a result row") and "\n" not in err
    assert csv.read_bytes() == before  # no layer row written again, the total kept


def test_repair_keeps_the_valid_rows_and_backs_the_file_up(tmp_path, capsys):
    path = _results(tmp_path / "r.csv")
    good = pd.read_csv(path)
    lines = path.read_text().splitlines(keepends=True)
    damaged = "".join([lines[0], "garbage\n", *lines[1:], lines[1], "\x00\n"])
    path.write_text(damaged)
    assert results.main(["--repair", str(path)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith(f"repaired {path}: kept its 2 valid layer rows, dropped 3 bad lines (2, 6, 7)")
    (backup,) = tmp_path.glob("r.csv.bad-*")
    assert backup.read_text() == damaged
    pd.testing.assert_frame_equal(pd.read_csv(path), good)
    assert results.main(["--repair", str(path)]) == 0
    assert "every row is valid (2 layer rows)" in capsys.readouterr().out
    assert len(list(tmp_path.glob("r.csv.bad-*"))) == 1


def test_unusable_folders_are_one_line_errors(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(FileUseError, match=f"^results folder {afile} is a file, not a folder$"):
        ResultStore(afile / RESULTS_CSV)
    with pytest.raises(FileUseError, match="^cannot create the results folder /proc/x: No such file or dir"):
        ResultStore("/proc/x/results.csv")
    assert results.main(["--repair", str(afile / RESULTS_CSV)]) == 2


def test_results_files_get_the_umask_mode_or_keep_their_own(tmp_path):
    old = os.umask(0o022)
    try:
        path = _results(tmp_path / "r.csv")
        assert path.stat().st_mode & 0o777 == 0o644
        path.chmod(0o640)
        write_csv_atomic(pd.DataFrame({"a": [1]}), path)
        assert path.stat().st_mode & 0o777 == 0o640
        os.umask(0o077)
        write_csv_atomic(pd.DataFrame({"a": [1]}), tmp_path / "new.csv")
        assert (tmp_path / "new.csv").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)

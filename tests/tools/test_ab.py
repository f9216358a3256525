"""`python -m stcsim.tools.ab`: two engine builds side by side, one per core."""

import math
import os
from pathlib import Path

import pytest
import stcsim._engine

from stcsim.tools import ab
from stcsim.tools.sim_speed import MMA

ENGINE = Path(stcsim._engine.__file__)
CASE = f"{MMA}:64x64x64:h100"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_an_a_a_run_times_both_sides_of_every_pair(capsys):
    assert ab.main([str(ENGINE), str(ENGINE), "--case", CASE, "--pairs", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()[1:3]]
    for _, a, b, ratio in rows:
        assert float(a) > 0 and float(b) > 0
        assert abs(float(ratio) - float(b) / float(a)) < 2e-3
    assert "geometric mean B/A" in out


def test_the_geometric_mean_is_of_the_pair_ratios():
    r = ab.AbResult([1.0, 2.0, 4.0], [0.5, 4.0, 4.0])
    assert r.ratios == [0.5, 2.0, 1.0]
    assert math.isclose(r.geomean, 1.0)


def test_one_core_is_refused(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    with pytest.raises(SystemExit, match="needs two cores"):
        ab.two_cores()


def test_bad_arguments_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        ab.main([str(ENGINE), "--case", CASE])  # one engine
    with pytest.raises(SystemExit):
        ab.main([str(ENGINE), str(tmp_path / "missing.so"), "--case", CASE])
    capsys.readouterr()
    with pytest.raises(SystemExit) as bad_case:
        ab.main([str(ENGINE), str(ENGINE), "--case", "nonsense"])
    assert bad_case.value.code == 2  # a one-line usage error, exit code 2
    assert "KERNEL:MxNxK:CONFIG" in capsys.readouterr().err.strip().splitlines()[-1]


def test_a_failing_run_names_its_build(tmp_path):
    bogus = tmp_path / "bogus.so"
    bogus.write_bytes(b"not an extension")
    with pytest.raises(RuntimeError, match="bogus.so"):
        ab.run_pair(ENGINE, bogus, CASE, 1, (0, 1) if len(os.sched_getaffinity(0)) > 1 else (0, 0))

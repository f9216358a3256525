"""`invoke bench` measures real launches (smoke test on a small shape)."""

import gc
import os

import pandas as pd

from stcsim.sim import Engine
from stcsim.tools.sim_speed import (
    MMA,
    bench_case,
    bench_network,
    format_network,
    format_rows,
    host_description,
    main,
    peak_rss_mib,
)


def test_bench_case_measures_a_timed_launch():
    row = bench_case(MMA, (64, 64, 64), "h100")
    assert row.warp_insts > 0 and row.host_seconds > 0 and row.gpu_sim_cycle > 0
    assert (
        abs(row.warp_insts_per_second - row.warp_insts / row.host_seconds) < 1e-6 * row.warp_insts_per_second
    )
    assert MMA in format_rows([row])


def test_bench_case_frees_each_runs_engine_at_once():
    # (the peak memory bench reports is the engine's, not engines waiting for Python's cycle collector)
    # Engines other code keeps on purpose (kernel_choice's per-process probe engines, made by a network run
    # of an earlier test) are not bench_case's.
    gc.collect()
    kept = {id(o) for o in gc.get_objects() if isinstance(o, Engine)}
    gc.disable()
    try:
        bench_case(MMA, (64, 64, 64), "h100", repeat=3)
        alive = [o for o in gc.get_objects() if isinstance(o, Engine) and id(o) not in kept]
    finally:
        gc.enable()
    assert alive == []


def test_host_description_names_the_cores():
    assert f"{len(os.sched_getaffinity(0))} cores" in host_description()


def test_peak_rss_is_positive():
    assert peak_rss_mib() > 1


def test_main_quick_writes_csv(tmp_path, capsys):
    out = tmp_path / "bench.csv"
    assert main(["--quick", "--csv", str(out)]) == 0
    df = pd.read_csv(out)
    assert len(df) == 4 and (df["warp_insts"] > 0).all()
    assert "peak host memory" in capsys.readouterr().out


def test_network_case_times_a_whole_checked_run():
    row = bench_network("mobilenet_v1:image_size=32", workers=1, layers=2)
    assert row.layers == 2 and row.host_seconds > 0 and row.gpu_sim_cycle > 0
    assert "mobilenet_v1:image_size=32 batch 1, dense on v100, 2 unique layers" in format_network(row)
    assert row.met == (row.host_seconds < 60)


def test_profile_reruns_the_command_line_it_was_given(monkeypatch):
    # From the command line main() gets argv=None: --profile must re-run that command (sys.argv), not the
    # default cases.
    import sys

    from stcsim.tools import sim_speed

    seen = {}
    monkeypatch.setattr(sim_speed, "_profile", lambda argv, data: seen.update(argv=argv, data=data) or 0)
    case = f"{MMA}:64x64x64:h100"
    monkeypatch.setattr(sys, "argv", ["sim_speed.py", "--case", case, "--profile", "p.data"])
    assert main() == 0
    assert seen == {"argv": ["--case", case, "--profile", "p.data"], "data": "p.data"}


def test_classes_pairs_each_timed_case_with_the_functional_core_alone(tmp_path, monkeypatch):
    from stcsim.tools import sim_speed

    monkeypatch.setattr(sim_speed, "CLASS_CASES", ((MMA, (64, 64, 64), "h100"),))
    gather = ("access", "gather", "n=8K", "gather", (1 << 13,), "v100")
    monkeypatch.setattr(sim_speed, "STYLE_CASES", (gather,))
    out = tmp_path / "classes.csv"
    assert main(["--classes", "--csv", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df["config"]) == ["h100", "v100", "functional", "functional"]
    assert list(df["kernel"]) == [MMA, "gather", MMA, "gather"]
    for kernel in (MMA, "gather"):  # the same launch, twice
        runs = df[df["kernel"] == kernel]
        assert runs["warp_insts"].nunique() == 1 and (runs["warp_insts"] > 0).all()
        assert runs["gpu_sim_cycle"].iloc[0] > 0 and runs["gpu_sim_cycle"].iloc[1] == 0


def test_style_cases_are_checked_calibration_kernels():
    from stcsim.tools import sim_speed

    for module, kernel, shape, plan, args, _ in sim_speed.STYLE_CASES:
        case = sim_speed._style_case(module, kernel, shape, plan, args)
        assert case.ptx.exists() and kernel in case.ptx.read_text()
    row = sim_speed.bench_style("tc_styles", "tcs_wmma_sample", "64x64x32,w4", "wmma_sample",
                                (64, 64, 32, 2, 2), "v100")
    assert row.kernel == "tcs_wmma_sample" and row.warp_insts > 0 and row.gpu_sim_cycle > 0


def test_case_names_a_style_case(tmp_path, monkeypatch):
    from stcsim.tools import sim_speed

    gather = ("access", "gather", "n=8K", "gather", (1 << 13,), "v100")
    monkeypatch.setattr(sim_speed, "STYLE_CASES", (gather,))
    out = tmp_path / "gather.csv"
    assert main(["--case", "gather", "--csv", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df["kernel"]) == ["gather"] and list(df["config"]) == ["v100"]


def test_profile_passes_on_the_childs_failure(monkeypatch):
    import shutil
    import subprocess

    from stcsim.tools import sim_speed

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/perf")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 2))
    assert sim_speed._profile(["--case", "nonsense"], "p.data") == 2

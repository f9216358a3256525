"""invoke tasks: thin wrappers that call into stcsim (build-sim, run, bench, test, workloads, ...)."""

from __future__ import annotations

import shlex

from invoke import task


def _py(c, module: str, *args: str) -> None:
    c.run(" ".join(["python", "-m", module, *(shlex.quote(a) for a in args)]), pty=False)


@task(name="build-sim")
def build_sim(c):
    """Rebuild the C++ engine in place (incremental, reuses build/)."""
    c.run("pip install --no-build-isolation --no-deps -e . -q", pty=False)


@task(
    iterable=["workload", "pattern", "config", "kernel", "sparsity"],
    help={
        "workload": "network spec, e.g. resnet50 (repeatable): simulate every layer (a network run)",
        "kernel": "kernel name; for a network run also auto, tensor-core or cuda-core (repeatable)",
        "shape": "MxNxK (one-kernel run)",
        "config": "GPU config spec (v100, h100, v100+stc, a YAML path); 'none': functional (one kernel)",
        "pattern": "sparsity pattern spec of the weights (default: dense; repeatable for a network run)",
        "sparsity": "fraction of the weights pruned (network run default: 0.75 for sparse patterns)",
        "seed": "operand seed (default: fresh for one kernel, 0 for a network run)",
        "all": "print every statistic (one-kernel run)",
        "batch": "batch of the network run",
        "weights": "weights file (.npz or PyTorch state_dict) of the network run (default: seeded random)",
        "out": "results folder of the network run (default results/runs/<workload>)",
        "layers": "network run: only the N unique shapes cheapest to simulate",
        "jobs": "network run: parallel workers (default: one per core)",
        "executor": "network run: local (process pool) or dask",
        "scheduler": "dask scheduler address (default: a LocalCluster)",
        "no_check": "network run: skip the numpy check",
    },
)
def run(c, workload=None, kernel=None, shape="", config=None, pattern=None, sparsity=None, seed=None,
        all=False, batch=1, weights="", out="", layers=None, jobs=None, executor="local", scheduler="",
        no_check=False):
    """Simulate a network (--workload, the main job) or one kernel of the set, checked against numpy."""
    if workload:
        args = [a for w in workload for a in ("--workload", w)]
        for flag, values in (("--pattern", pattern), ("--config", config), ("--kernel", kernel),
                             ("--sparsity", sparsity)):
            args += [a for v in values or [] for a in (flag, str(v))]
        options = (("--batch", batch), ("--weights", weights), ("--out", out), ("--layers", layers),
                   ("--jobs", jobs), ("--executor", executor), ("--scheduler", scheduler), ("--seed", seed))
        args += [a for flag, val in options if val not in ("", None) for a in (flag, str(val))]
        _py(c, "stcsim.harness.network_run", *args, *(["--no-check"] if no_check else []))
        return
    args = []
    single = {"--kernel": kernel, "--config": config, "--pattern": pattern, "--sparsity": sparsity}
    for flag, values in single.items():
        if values and len(values) > 1:
            raise SystemExit(f"{flag} takes one value without --workload")
        if values:
            args += [flag, str(values[0])]
    for flag, val in (("--shape", shape), ("--seed", seed)):
        if val not in ("", None):
            args += [flag, str(val)]
    if all:
        args.append("--all")
    _py(c, "stcsim.harness.run", *args)


@task(
    iterable=["csv"],
    help={"csv": "a network-run result file (results.csv; repeatable)",
          "baseline": "variant label or PATTERN/CONFIG (default: the first variant)",
          "plot": "also draw the grouped bar chart to this PNG"},
)
def compare(c, csv=None, baseline="", plot=""):
    """Speedups of network runs over a baseline, per layer and network, geomeans; optional plot.

    Files as --csv A.csv --csv B.csv, or after a standalone --: invoke compare -- A.csv B.csv --plot f.png
    """
    args = list(csv or []) + shlex.split(c.remainder)
    args += (["--baseline", baseline] if baseline else []) + (["--plot", plot] if plot else [])
    _py(c, "stcsim.harness.compare", *args)


@task(
    help={"figure": "paper001-fig16 or paper004-fig6", "quick": "the 2 cheapest unique shapes per network",
          "out": "output folder (default results/<figure>[-quick])", "jobs": "parallel workers",
          "executor": "local or dask", "scheduler": "dask scheduler address"},
)
def reproduce(c, figure, quick=False, out="", jobs=None, executor="local", scheduler=""):
    """A paper figure as network runs: CSV, a table next to the paper's numbers, the PNG."""
    options = (("--out", out), ("--jobs", jobs), ("--executor", executor), ("--scheduler", scheduler))
    args = [figure, *(["--quick"] if quick else [])]
    args += [a for flag, val in options if val not in ("", None) for a in (flag, str(val))]
    _py(c, "stcsim.harness.reproduce", *args)


@task(help={"quick": "small shapes only, no network case", "csv": "also write rows to this CSV",
            "network": "only the network case (ResNet-50 batch 1, all layers, v100)"})
def bench(c, quick=False, csv="", network=False):
    """Engine speed: warp instructions per host second, host seconds, peak memory; a whole network run."""
    flags = [flag for flag, on in (("--quick", quick), ("--network", network)) if on]
    _py(c, "stcsim.harness.bench", *flags, *(["--csv", csv] if csv else []))


WIDE_RUNS = ",".join(f"results/reference/h100_calibration_wide_run{i}.csv" for i in (1, 2))


@task(help={"measured": "measured CSVs, comma-separated (several passes: their mean)",
            "config": "GPU config spec",
            "simulated": "a CSV written by `python -m stcsim.gpu.calibrate simulate` instead of simulating"})
def calibrate(c, measured=WIDE_RUNS, config="h100", simulated=""):
    """Simulate every case of the measured calibration CSVs; per case the error, per half MAE and Pearson."""
    _py(c, "stcsim.gpu.calibrate", "compare", *measured.split(","), "--config", config,
        *(["--simulated", simulated] if simulated else []))


@task
def test(c, k="", x=False):
    """Run the test suite (`-k` to select, `-x` to stop at the first failure)."""
    args = ["-q"] + (["-k", k] if k else []) + (["-x"] if x else [])
    _py(c, "pytest", *args)


@task
def workloads(c):
    """List the networks with their source, options (variants) and the papers that ran them."""
    _py(c, "stcsim.workloads", "--list")


@task(
    help={"name": "network spec, e.g. alexnet:variant=tf-slim (see invoke workloads)", "batch": "batch",
          "image_size": "image size", "seq_len": "sequence length", "hidden": "LSTM cells (LSTM models)"}
)
def workload(c, name, batch=1, image_size=None, seq_len=None, hidden=None):
    """Print a network's GEMM layer table and totals."""
    args = [name, "--batch", str(batch)]
    if image_size:
        args += ["--image-size", str(image_size)]
    if seq_len:
        args += ["--seq-len", str(seq_len)]
    if hidden:
        args += ["--hidden", str(hidden)]
    _py(c, "stcsim.workloads", *args)


@task(name="sparsity-report", help={"shape": "MxK weight shape", "sparsity": "target sparsity"})
def sparsity_report(c, shape="512x2304", sparsity=0.75):
    """Every pattern's kept fraction, format bytes and compression ratio."""
    _py(c, "stcsim.sparsity", "report", "--shape", shape, "--sparsity", str(sparsity))


@task(name="build-kernels", help={"check": "only check that the committed PTX is current"})
def build_kernels(c, check=False):
    """Recompile ptx_kernels/*.cu to PTX with nvcc (skipped without nvcc)."""
    _py(c, "stcsim.kernels.build", *(["--check"] if check else []))

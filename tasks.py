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
        "sample": "network run: sampled simulation with this wave tolerance, e.g. 0.02 (docs/performance.md)",
    },
)
def run(c, workload=None, kernel=None, shape="", config=None, pattern=None, sparsity=None, seed=None,
        all=False, batch=1, weights="", out="", layers=None, jobs=None, executor="local", scheduler="",
        no_check=False, sample=None):
    """Simulate a network (--workload, the main job) or one kernel of the set, checked against numpy."""
    if workload:
        args = [a for w in workload for a in ("--workload", w)]
        for flag, values in (("--pattern", pattern), ("--config", config), ("--kernel", kernel),
                             ("--sparsity", sparsity)):
            args += [a for v in values or [] for a in (flag, str(v))]
        options = (("--batch", batch), ("--weights", weights), ("--out", out), ("--layers", layers),
                   ("--jobs", jobs), ("--executor", executor), ("--scheduler", scheduler), ("--seed", seed),
                   ("--sample", sample))
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
            "network": "only the network case (ResNet-50 batch 1, all layers, v100)",
            "classes": "only the kernel-class cases (mma.sync, WMMA, WMMA-global, SIMT) on the timing model, "
                       "then each on the functional core alone",
            "case": "only this case: KERNEL:MxNxK:CONFIG", "repeat": "runs per case (the fastest counts)",
            "profile": "run the cases under perf record into this file and print the top of perf report",
            "sampling": "sampled vs full cycles per ResNet-50 batch-1 layer (docs/performance.md)",
            "large": "with --sampling: the multi-wave GEMMs",
            "layers": "with --sampling: the N cheapest layers"})
def bench(c, quick=False, csv="", network=False, classes=False, case="", repeat=1, profile="", sampling=False,
          large=False, layers=None):
    """Engine speed: warp instructions per host second, host seconds, peak memory; a whole network run;
    --classes the kernel-class cases; --profile PERF_DATA under perf; --sampling the sampling error."""
    flags = [flag for flag, on in (("--quick", quick), ("--network", network), ("--classes", classes),
                                   ("--sampling", sampling), ("--large", large)) if on]
    options = (("--csv", csv), ("--case", case), ("--profile", profile), ("--layers", layers))
    flags += [a for flag, val in options if val not in ("", None) for a in (flag, str(val))]
    if repeat != 1:
        flags += ["--repeat", str(repeat)]
    _py(c, "stcsim.harness.bench", *flags)


WIDE_RUNS = ",".join(f"results/reference/h100_calibration_wide_run{i}.csv" for i in (1, 2))


@task(help={"measured": "measured CSVs, comma-separated (several passes: their mean; default: the two H100 "
                        "passes of the wider suite; --sparse: the sparse table's measured CSV)",
            "config": "GPU config spec",
            "simulated": "a CSV written by `python -m stcsim.gpu.calibrate simulate` instead of simulating",
            "sparse": "the sparse silicon table: simulate the measured sparse cases, speedups over dense",
            "out": "with --sparse: the table CSV (default results/reference/h100_sparse_silicon.csv)",
            "jobs": "with --sparse: simulation processes"})
def calibrate(c, measured="", config="h100", simulated="", sparse=False, out="", jobs=1):
    """Simulate every case of the measured calibration CSVs; per case the error, per half MAE and Pearson.
    With --sparse: the sparse silicon table (stcsim.gpu.sparse_silicon; measure with
    benchmarks/gpu/sparse_silicon.sh)."""
    if not sparse:
        _py(c, "stcsim.gpu.calibrate", "compare", *(measured or WIDE_RUNS).split(","), "--config", config,
            *(["--simulated", simulated] if simulated else []))
        return
    out = out or "results/reference/h100_sparse_silicon.csv"
    measured = measured or "results/reference/h100_sparse_silicon_measured.csv"
    summary = out.replace(".csv", "_summary.csv")
    _py(c, "stcsim.gpu.sparse_silicon", "table", measured, "--out", out, "--summary", summary,
        "--config", config, "--jobs", str(jobs))


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

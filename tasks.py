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
    help={
        "kernel": "kernel name (see stcsim.kernels.KERNELS)",
        "shape": "MxNxK",
        "config": "GPU config spec (v100, h100, v100+stc, a YAML path) or 'none'",
        "pattern": "sparsity pattern spec of the weights (default: dense)",
        "sparsity": "fraction of the weights pruned (default: 0)",
        "seed": "operand seed (default: fresh)",
        "all": "print every statistic",
    }
)
def run(c, kernel="", shape="", config="", pattern="", sparsity="", seed=None, all=False):
    """Run one kernel on the simulator, check it against numpy and print its stats."""
    args = []
    options = (("--kernel", kernel), ("--shape", shape), ("--config", config), ("--pattern", pattern),
               ("--sparsity", sparsity), ("--seed", seed))
    for flag, val in options:
        if val not in ("", None):
            args += [flag, str(val)]
    if all:
        args.append("--all")
    _py(c, "stcsim.harness.run", *args)


@task(help={"quick": "small shapes only", "csv": "also write rows to this CSV"})
def bench(c, quick=False, csv=""):
    """Engine speed: warp instructions per host second, host seconds, peak memory."""
    args = (["--quick"] if quick else []) + (["--csv", csv] if csv else [])
    _py(c, "stcsim.harness.bench", *args)


@task(help={"measured": "CSV of measured cycles", "config": "GPU config spec"})
def calibrate(c, measured="results/reference/h100_calibration.csv", config="h100"):
    """Simulate every case of a measured calibration CSV; per-case error, MAE and Pearson correlation."""
    _py(c, "stcsim.gpu.calibrate", "compare", measured, "--config", config)


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

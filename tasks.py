"""invoke tasks: thin wrappers that call into stcsim (build-sim, run, bench, test, workloads, ...)."""

from __future__ import annotations

import shlex
import subprocess
import sys

from invoke import Exit, Task, task


def _py(module: str, *args: str) -> None:
    """Run ``python -m module args`` on this terminal and exit with its status when it fails.

    The module writes to the terminal itself, so its progress bars show whenever stderr is one. Ctrl-C
    reaches the module too (the terminal signals the whole foreground process group): invoke waits for it to
    end its own way (a network run keeps its finished rows and says how to resume) and exits with its
    status, 130, without a traceback of its own.
    """
    proc = subprocess.Popen([sys.executable, "-m", module, *args])
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:
            continue
    if code < 0:
        code = 128 - code  # killed by a signal: the shell's convention
    if code:
        raise Exit(code=code)


@task(name="build-sim")
def build_sim(c):
    """Rebuild the C++ engine in place (incremental, reuses build/)."""
    c.run("pip install --no-build-isolation --no-deps -e . -q", pty=False)


@task(
    auto_shortflags=False,  # no -h for --scheduler: -h is --help
    iterable=["workload", "pattern", "config", "kernel", "sparsity"],
    help={
        "workload": "network spec, e.g. resnet50, or an imported model onnx:FILE.onnx / "
                    "torch:MODULE:CALLABLE:input=3x224x224 (repeatable): simulate every layer (a network "
                    "run)",
        "kernel": "kernel name; for a network run also auto, tensor-core or cuda-core (repeatable)",
        "shape": "MxNxK (one-kernel run)",
        "config": "GPU config spec (v100, h100, v100+stc, a YAML path); 'none': functional (one kernel)",
        "pattern": "sparsity pattern spec of the weights (default: dense; repeatable for a network run)",
        "sparsity": "fraction of the weights pruned (network run default: the pattern's own, 1 - N/M for "
                    "N:M, else 0.75)",
        "seed": "operand seed (default: fresh for one kernel, 0 for a network run)",
        "all": "print every statistic (one-kernel run)",
        "batch": "batch of the network run",
        "weights": "weights file (.npz or PyTorch state_dict) of the network run (default: seeded random)",
        "weights_prefix": "network run: prefix of the weight keys in the --weights file",
        "out": "results folder of the network run (default results/runs/<workload>)",
        "layers": "network run: only the N unique shapes cheapest to simulate",
        "jobs": "network run: parallel workers (default: one per core)",
        "executor": "network run: local (process pool) or dask",
        "scheduler": "dask scheduler address (default: a LocalCluster)",
        "no_check": "network run: skip the numpy check",
        "check_limit": "network run: MACs above which the numpy check samples output columns",
        "allow_fallback": "network run: run a pattern no kernel implements on the dense kernel (marked) "
                          "instead of stopping with an error",
        "no_progress": "network run: no progress bar",
        "sample": "network run: sampled simulation with this wave tolerance, e.g. 0.02 (docs/performance.md)",
        "phase": "network run, LLMs: prefill or decode",
        "seq": "network run: tokens per sequence (seq_len of every workload)",
        "kv_len": "network run, LLMs: keys attended",
        "launch": "network run: attention's per-head GEMMs batched (one launch per layer, default) or serial",
        "threads": "single-kernel run: host threads of the launch (its SMs split among them; same stats)",
    },
)
def run(c, workload=None, kernel=None, shape="", config=None, pattern=None, sparsity=None, seed=None,
        all=False, batch=1, weights="", weights_prefix="", out="", layers=None, jobs=None, executor="local",
        scheduler="", no_check=False, check_limit=None, allow_fallback=False, no_progress=False, sample=None,
        phase="", seq=None, kv_len=None, launch="", threads=None):
    """Simulate a network (--workload, the main job) or one kernel of the set, checked against numpy."""
    if workload:
        args = [a for w in workload for a in ("--workload", w)]
        for flag, values in (("--pattern", pattern), ("--config", config), ("--kernel", kernel),
                             ("--sparsity", sparsity)):
            args += [a for v in values or [] for a in (flag, str(v))]
        options = (("--batch", batch), ("--weights", weights), ("--weights-prefix", weights_prefix),
                   ("--out", out), ("--layers", layers), ("--jobs", jobs), ("--executor", executor),
                   ("--scheduler", scheduler), ("--seed", seed), ("--sample", sample),
                   ("--check-limit", check_limit), ("--phase", phase), ("--seq", seq), ("--kv-len", kv_len),
                   ("--launch", launch))
        args += [a for flag, val in options if val not in ("", None) for a in (flag, str(val))]
        flags = {"--no-check": no_check, "--allow-fallback": allow_fallback, "--no-progress": no_progress}
        _py("stcsim.harness.network_run", *args, *(flag for flag, on in flags.items() if on))
        return
    args = []
    single = {"--kernel": kernel, "--config": config, "--pattern": pattern, "--sparsity": sparsity}
    for flag, values in single.items():
        if values and len(values) > 1:
            raise Exit(f"error: {flag} takes one value without --workload", code=2)
        if values:
            args += [flag, str(values[0])]
    for flag, val in (("--shape", shape), ("--seed", seed), ("--threads", threads)):
        if val not in ("", None):
            args += [flag, str(val)]
    if all:
        args.append("--all")
    _py("stcsim.harness.run", *args)


@task(
    iterable=["csv"],
    help={"csv": "a network-run result file (results.csv; repeatable)",
          "baseline": "variant label or PATTERN/CONFIG (default: the first variant)",
          "plot": "also draw the grouped bar chart to this PNG",
          "metric": "cycles (default), kernel-cycles, time (us at each config's clock) or tflops",
          "view": "both (default), network or layer: which tables to print"},
)
def compare(c, csv=None, baseline="", plot="", metric="", view=""):
    """Speedups of network runs over a baseline, per layer and network, geomeans; optional plot.

    Files as invoke compare A.csv B.csv, as --csv A.csv --csv B.csv, or after a standalone --: invoke compare
    -- A.csv B.csv --plot f.png. Fallback layers are marked *.
    """
    args = list(csv or []) + shlex.split(c.remainder)
    args += (["--baseline", baseline] if baseline else []) + (["--plot", plot] if plot else [])
    args += (["--metric", metric] if metric else []) + (["--view", view] if view else [])
    _py("stcsim.harness.compare", *args)


@task(
    auto_shortflags=False,
    help={"figure": "paper001-fig16 or paper004-fig6", "quick": "the 2 cheapest unique shapes per network",
          "layers": "the N cheapest unique shapes per network", "out": "output folder (default "
          "results/<figure>[-quick])", "jobs": "parallel workers", "executor": "local or dask",
          "scheduler": "dask scheduler address", "no_progress": "no progress bar",
          "fixed": "every bar's kernel by the fixed rule (one tile per family, no split-K), as before the "
                   "per-shape choice",
          "full_detail": "no sampled simulation (full runs sample by default; --quick runs do not)",
          "sample": "sampling tolerance (default 0.02 for full runs; turns sampling on for --quick)",
          "check_layers": "sampled layer runs per network re-run in full detail to measure the error",
          "batch": "every network at this batch (a sensitivity run; default: the paper's)"},
)
def reproduce(c, figure, quick=False, layers=None, out="", jobs=None, executor="local", scheduler="",
              no_progress=False, fixed=False, full_detail=False, sample=None, check_layers=None, batch=None):
    """A paper figure as network runs: CSV, a table next to the paper's numbers (with the run's scope and its
    sampling error measured against full detail), the PNG."""
    options = (("--layers", layers), ("--out", out), ("--jobs", jobs), ("--executor", executor),
               ("--scheduler", scheduler), ("--sample", sample), ("--check-layers", check_layers),
               ("--batch", batch))
    args = [figure, *(["--quick"] if quick else []), *(["--no-progress"] if no_progress else [])]
    args += ["--fixed"] if fixed else []
    args += ["--full-detail"] if full_detail else []
    args += [a for flag, val in options if val not in ("", None) for a in (flag, str(val))]
    _py("stcsim.experiments.reproduce", *args)


@task(help={"quick": "small shapes only, no network case", "csv": "also write rows to this CSV",
            "network": "only the network case (ResNet-50 batch 1, all layers, v100)",
            "classes": "only the kernel-class cases (mma.sync, WMMA, WMMA-global, SIMT, then the calibration "
                       "suite's styles: WMMA from global, uncoalesced, one-warp CTAs, atomics) on the timing "
                       "model, then each on the functional core alone",
            "case": "only this case: KERNEL:MxNxK:CONFIG", "repeat": "runs per case (the fastest counts)",
            "profile": "run the cases under perf record into this file and print the top of perf report",
            "sampling": "sampled vs full cycles per ResNet-50 batch-1 layer (docs/performance.md)",
            "large": "with --sampling: the multi-wave GEMMs",
            "layers": "with --sampling: the N cheapest layers", "batch": "with --sampling: the batch",
            "always_full": "with --sampling: run every layer in full detail too"})
def bench(c, quick=False, csv="", network=False, classes=False, case="", repeat=1, profile="", sampling=False,
          large=False, layers=None, batch=None, always_full=False):
    """Engine speed: warp instructions per host second, host seconds, peak memory; a whole network run;
    --classes the kernel-class cases; --profile PERF_DATA under perf; --sampling the sampling error."""
    chosen = {"--quick": quick, "--network": network, "--classes": classes, "--sampling": sampling,
              "--large": large, "--always-full": always_full}
    flags = [flag for flag, on in chosen.items() if on]
    options = (("--csv", csv), ("--case", case), ("--profile", profile), ("--layers", layers),
               ("--batch", batch))
    flags += [a for flag, val in options if val not in ("", None) for a in (flag, str(val))]
    if repeat != 1:
        flags += ["--repeat", str(repeat)]
    _py("stcsim.tools.sim_speed", *flags)


WIDE_RUNS = ",".join(f"results/reference/h100_calibration_wide_run{i}.csv" for i in (1, 2))
TC_STYLE_RUNS = ",".join(f"results/reference/h100_tc_styles_run{i}.csv" for i in (1, 2))


@task(help={"measured": "measured CSVs, comma-separated (several passes: their mean; default: the two H100 "
                        "passes of the wider suite; --sparse: the sparse table's measured CSV)",
            "config": "GPU config spec",
            "simulated": "a CSV written by `python -m stcsim.experiments.calibrate simulate` instead of "
                         "simulating",
            "sparse": "the sparse silicon table: simulate the measured sparse cases, speedups over dense",
            "out": "with --sparse: the table CSV (default results/reference/h100_sparse_silicon.csv)",
            "jobs": "with --sparse: simulation processes",
            "tc_styles": "issue 43's Tensor Core styles (the two H100 passes of the tc-styles group) "
                         "instead of the wider suite"})
def calibrate(c, measured="", config="h100", simulated="", sparse=False, out="", jobs=1, tc_styles=False):
    """Simulate every case of the measured calibration CSVs; per case the error, per half MAE and Pearson.
    With --sparse: the sparse silicon table (stcsim.experiments.sparse_silicon; measure with
    benchmarks/gpu/sparse_silicon.sh)."""
    if not sparse:
        runs = measured or (TC_STYLE_RUNS if tc_styles else WIDE_RUNS)
        _py("stcsim.experiments.calibrate", "compare", *runs.split(","), "--config", config,
            *(["--simulated", simulated] if simulated else []))
        return
    out = out or "results/reference/h100_sparse_silicon.csv"
    measured = measured or "results/reference/h100_sparse_silicon_measured.csv"
    summary = out.replace(".csv", "_summary.csv")
    _py("stcsim.experiments.sparse_silicon", "table", measured, "--out", out, "--summary", summary,
        "--config", config, "--jobs", str(jobs))


@task
def test(c, k="", x=False):
    """Run the test suite (`-k` to select, `-x` to stop at the first failure)."""
    args = ["-q"] + (["-k", k] if k else []) + (["-x"] if x else [])
    _py("pytest", *args)


@task
def workloads(c):
    """List the networks with their source, options (variants) and the papers that ran them, and the forms
    that import a model (onnx:FILE.onnx, torch:MODULE:CALLABLE:input=...)."""
    _py("stcsim.workloads", "--list")


@task(
    auto_shortflags=False,  # no -h for --hidden: -h is --help
    help={"name": "network spec, e.g. alexnet:variant=tf-slim or onnx:FILE.onnx (see invoke workloads)",
          "batch": "batch",
          "image_size": "image size", "seq_len": "sequence length", "hidden": "LSTM cells (LSTM models)",
          "markdown": "the table as markdown"}
)
def workload(c, name, batch=1, image_size=None, seq_len=None, hidden=None, markdown=False):
    """Print a network's GEMM layer table and totals."""
    args = [name, "--batch", str(batch), *(["--markdown"] if markdown else [])]
    if image_size:
        args += ["--image-size", str(image_size)]
    if seq_len:
        args += ["--seq-len", str(seq_len)]
    if hidden:
        args += ["--hidden", str(hidden)]
    _py("stcsim.workloads", *args)


@task(name="sparsity-report", iterable=["patterns"],
      help={"shape": "MxK weight shape", "sparsity": "target sparsity", "seed": "seed of the random weights",
            "patterns": "a pattern spec (repeatable; default: every pattern)"})
def sparsity_report(c, shape="512x2304", sparsity=0.75, seed=0, patterns=None):
    """Every pattern's kept fraction, format bytes and compression ratio."""
    chosen = ["--patterns", *patterns] if patterns else []
    _py("stcsim.sparsity", "report", "--shape", shape, "--sparsity", str(sparsity), "--seed", str(seed),
        *chosen)


@task(name="build-kernels", help={"check": "only check that the committed PTX is current"})
def build_kernels(c, check=False):
    """Recompile ptx_kernels/*.cu to PTX with nvcc (skipped without nvcc)."""
    _py("stcsim.kernels.build", *(["--check"] if check else []))


def _bare_compare_files() -> None:
    """Let ``invoke compare A.csv B.csv`` work: invoke's parser has no variadic positional arguments, so the
    bare words after ``compare`` (up to the next task name) move behind the ``--`` that the task reads.

    Runs when invoke imports this file: after it parsed its own options, before it parses the tasks'.
    """
    from invoke.main import program

    core = getattr(program, "core", None)
    if core is None or "compare" not in core.unparsed:
        return
    tasks = {t.name for t in globals().values() if isinstance(t, Task)}
    takes_value = {("-" if len(name) == 1 else "--") + name.replace("_", "-")
                   for arg in compare.get_arguments() if arg.takes_value for name in arg.names}
    start = core.unparsed.index("compare") + 1
    kept, files, waiting = core.unparsed[:start], [], False
    for i, token in enumerate(core.unparsed[start:], start):
        if not waiting and token in tasks:
            kept += core.unparsed[i:]
            break
        if waiting or token.startswith("-"):
            kept.append(token)
            waiting = not waiting and token in takes_value
        else:
            files.append(token)
    core.unparsed[:] = kept
    core.remainder = " ".join([*map(shlex.quote, files), *([core.remainder] if core.remainder else [])])


_bare_compare_files()

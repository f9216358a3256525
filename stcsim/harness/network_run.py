"""`invoke run --workload NET`: simulate every layer of a network, pruned with a pattern, on a GPU config.

``python -m stcsim.harness.network_run --workload resnet50 --config v100 --pattern dense --out DIR``.
Several ``--workload``/``--pattern``/``--sparsity``/``--config``/``--kernel`` values make a sweep (their
product). Rows go to ``DIR/results.csv`` (``results``), which is also the cache: a re-run of an interrupted
or changed run simulates only the rows that are missing or stale. Layers run in parallel (``--jobs``, a
process pool; ``--executor dask``). Prints one table per network and variant with the network total.
See docs/harness.md.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from stcsim.harness import kernel_choice, units
from stcsim.harness.executor import EXECUTORS, DaskUnavailable, Executor, JobError, attempt, make_executor
from stcsim.harness.host_memory import reuse_freed_memory
from stcsim.harness.jobs import (
    DEFAULT_CHECK_LIMIT,
    LayerJob,
    Variant,
    WeightSource,
    describe,
    extra_zeros,
    fixed_sparsity,
    plan_network,
)
from stcsim.harness.kernel_choice import AUTO, require_kernels
from stcsim.harness.results import LAYER, TOTAL, ResultStore
from stcsim.kernels import NoKernelError
from stcsim.sparsity import get
from stcsim.workloads import WeightFileError, with_params

RESULTS_CSV = "results.csv"
DEFAULT_CONFIG = "v100"
DEFAULT_PATTERN = "dense"
DEFAULT_SPARSITY = 0.75
"""Target sparsity of the patterns whose own ratio sets none (``fixed_sparsity``), when none is given."""


class OutputError(ValueError):
    """The results folder is a file or cannot be created."""


@dataclass
class RunSummary:
    """What a run did: jobs planned; rows reused from the results file; simulations; rows that share the
    result of an identical computation (same key, another label); failures; the results; the run's wall
    time and the CPU time of this process and its workers (``main``: from the kernel choice on)."""

    path: Path
    planned: int = 0
    reused: int = 0
    simulated: int = 0
    shared: int = 0
    failed: list[tuple[LayerJob, JobError]] = field(default_factory=list)
    interrupted: bool = False
    frame: pd.DataFrame = field(default_factory=pd.DataFrame)
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def checks_failed(self) -> int:
        """Layer rows of this run whose numpy check failed."""
        rows = self.frame[self.frame["row_type"] == LAYER] if len(self.frame) else self.frame
        return int((~rows["check_ok"].astype(bool)).sum()) if len(rows) else 0

    @property
    def ok(self) -> bool:
        """Everything ran and every check passed."""
        return not self.failed and not self.interrupted and self.checks_failed == 0


def _progress(enabled: bool) -> Progress:
    console = Console(stderr=True)
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("layers"),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        TextColumn("{task.fields[cycles]:,} simulated cycles"),
        console=console, disable=not (enabled and console.is_terminal),
    )


def run_jobs(
    jobs: Sequence[LayerJob],
    out: str | Path,
    executor: Executor | None = None,
    progress: bool = True,
    make: dict[str, object] | None = None,
) -> RunSummary:
    """Simulate the jobs whose rows `out`/results.csv lacks (or has stale), writing each row as it finishes.

    Jobs with the same key (the same computation under two labels, e.g. two bars that both fall back to the
    same dense run) are simulated once; a key the file already has under another identity is reused.
    `executor` runs them (default: ``make_executor(**make)``, started only when something is left to run).
    On Ctrl-C the rows finished so far stay in the file and the summary says it was interrupted.
    """
    start, cpu = time.perf_counter(), _cpu_seconds()
    path = Path(out) / RESULTS_CSV
    store = ResultStore(path)
    stale = [job for job in jobs if store.cached(job.identity, job.key()) is None]
    store.discard(job.identity for job in stale)
    waiting: dict[str, list[LayerJob]] = {}
    summary = RunSummary(path, planned=len(jobs), reused=len(jobs) - len(stale))
    for job in stale:
        known = store.by_key(job.key())
        if known is not None:
            store.put(same_result(job, known))
            summary.shared += 1
        else:
            waiting.setdefault(job.key(), []).append(job)
    store.write()
    if waiting:
        owned = executor is None
        runner = executor if executor is not None else make_executor(**(make or {}))
        try:
            _execute(list(waiting.values()), runner, store, summary, progress)
        finally:
            if owned:
                runner.close(interrupted=summary.interrupted)
    summary.frame = store.frame()
    summary.wall_seconds, summary.cpu_seconds = time.perf_counter() - start, _cpu_seconds() - cpu
    return summary


def presimulate(plan: Callable[[], object], make: dict[str, object]) -> Executor | None:
    """Run the kernel-choice simulations that `plan` needs (``kernel_choice.collecting``: the candidates of
    every per-shape choice whose cycles no cache holds) on the workers of an executor made from `make`, and
    return that executor for the layer jobs (None when there is nothing to simulate or one worker: the choice
    then simulates its candidates itself, one after another). Planning afterwards finds every candidate
    cached."""
    if int(make.get("workers", 1) or 1) <= 1:  # type: ignore[call-overload]
        return None
    with kernel_choice.collecting() as wanted:
        plan()
    if not wanted:
        return None
    runner = make_executor(**make)  # type: ignore[arg-type]
    try:
        kernel_choice.simulate_all(wanted, runner)
    except BaseException:
        runner.close(interrupted=True)
        raise
    return runner


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished child processes (the pool's workers once closed)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def same_result(job: LayerJob, row: dict[str, object]) -> dict[str, object]:
    """`row` (a result with the job's key) as the job's own row: its plan columns, the shared results."""
    return {**row, **describe(job)}


def _execute(todo: Sequence[list[LayerJob]], runner: Executor, store: ResultStore, summary: RunSummary,
             progress: bool) -> None:
    """Run the first job of each list, the costliest first (``LayerJob.cost``); its row also stands for the
    others (same key)."""
    cycles = 0
    with _progress(progress) as bar:
        task = bar.add_task("simulating", total=len(todo), cycles=0)
        try:
            order = sorted(range(len(todo)), key=lambda i: -todo[i][0].cost())
            firsts = ((i, todo[i][0]) for i in order)
            for index, outcome in runner.map_unordered(attempt, firsts):
                same = todo[index]
                if isinstance(outcome, JobError):
                    summary.failed += [(job, outcome) for job in same]
                    job = same[0]
                    bar.console.print(f"[red]{job.network} {job.layer.name} ({job.variant.label}) failed: "
                                      f"{outcome.message}[/red]")
                else:
                    for job in same[1:]:
                        store.put(same_result(job, outcome))
                    store.add(outcome)
                    summary.simulated += 1
                    summary.shared += len(same) - 1
                    cycles += int(outcome.get("gpu_sim_cycle", 0)) * same[0].repeat
                bar.update(task, advance=1, cycles=cycles)
        except KeyboardInterrupt:
            summary.interrupted = True


def _cell(value: object, digits: int = 3) -> str:
    """A table cell: integers with thousands separators, other numbers to `digits` significant digits."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        if value != value:
            return "-"
        return f"{int(value):,}" if float(value).is_integer() else f"{float(value):.{digits}g}"
    return str(value)


TEXT_COLUMNS = ("layer", "kernel", "check")
"""Left-aligned columns of the layer table (the others are numbers)."""


def _grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    left = [name in TEXT_COLUMNS for name in header]

    def line(cells: Sequence[str]) -> str:
        parts = zip(cells, widths, left, strict=True)
        return "  ".join(c.ljust(w) if is_text else c.rjust(w) for c, w, is_text in parts).rstrip()

    return [line(r) for r in (header, ["-" * w for w in widths], *rows)]


def format_table(frame: pd.DataFrame, network: str, batch: int, variant: str) -> str:
    """The per-layer table of one network and variant, its total, and every fallback with its reason."""
    rows = frame[(frame["network"] == network) & (frame["batch"] == batch) & (frame["variant"] == variant)]
    layers, total = rows[rows["row_type"] == LAYER], rows[rows["row_type"] == TOTAL]
    header = ["#", "layer", "M", "N", "K", "launch", "repeat", "kernel", "density", "cycles", "x repeat",
              "us x repeat", "TFLOP/s", "% peak", "check"]
    body, notes = [], {}
    for r in layers.to_dict("records"):
        cycles = r.get("gpu_sim_cycle", float("nan"))
        mark = " *" if r["fallback"] else ""
        check = "off" if r["check"] == "off" else ("ok" if r["check_ok"] else "FAILED")
        check += "" if r["check"] in ("full", "off") else " (sampled)"
        body.append([_cell(r["layer_index"]), r["layer"] + mark, _cell(r["m"]), _cell(r["n"]), _cell(r["k"]),
                     _launch_cell(r), _cell(r["repeat"]), r["kernel"], f"{r['density']:.3f}", _cell(cycles),
                     _cell(cycles * r["repeat"]), *_unit_cells(r), check])
        if r["fallback"]:
            notes.setdefault((r["run_pattern"], r["fallback_reason"]), []).append(r)
    out = [f"{network} (batch {batch}), {variant}:"] + _grid(header, body)
    if len(total):
        t = total.iloc[0]
        out.append(f"network total: {_cell(t.get('gpu_sim_cycle', float('nan')))} cycles over "
                   f"{_cell(t['repeat'])} launches of {len(layers)} unique shapes, {_cell(t['macs'])} MACs, "
                   f"density {t['density']:.3f}; host time of its layer jobs summed: "
                   f"{t['host_seconds']:.1f} s (parallel workers overlap them)")
        out.append(_unit_total(layers.to_dict("records")))
    else:
        planned = layers["group_layers"].max()
        out.append(f"network total: incomplete ({len(layers)} of {planned} layers have rows)")
    launch_notes = {r["launch_note"] for r in layers.to_dict("records")
                    if isinstance(r.get("launch_note"), str) and r["launch_note"]}
    out += [f"serial*: {note}" for note in sorted(launch_notes)]
    if notes:
        fell_back = sum(len(rows) for rows in notes.values())
        out.append(f"dense fallbacks ({fell_back} of {len(layers)} layers):")
        out += [_fallback_note(rows, why) for (_, why), rows in notes.items()]
    return "\n".join(out)


def _launch_cell(row: dict) -> str:
    """How the row's GEMMs launch: ``batched xB`` (one strided-batched launch of B GEMMs), ``serial`` (one
    launch per GEMM of a per-head layer, ``serial*`` when the batched form was asked for but no batched
    kernel runs), or blank (a layer of one GEMM; a file from before the column)."""
    form = row.get("launch")
    if form == "batched":
        return f"batched x{units.launch_batch(row)}"
    if form == "serial":
        return "serial*" if isinstance(row.get("launch_note"), str) and row["launch_note"] else "serial"
    return ""


def _unit_cells(row: dict) -> list[str]:
    """Time x repeat (us), TFLOP/s and % of the config's peak of one layer row (stcsim.harness.units)."""
    u = units.row_columns(row)
    return [f"{u['time_us'] * row['repeat']:,.1f}", f"{u['tflops']:.3g}", f"{u['pct_peak']:.1f}"]


def _unit_total(rows: list[dict]) -> str:
    """The network total in physical units."""
    u, config = units.total_columns(rows), rows[0]["config"]
    return (f"  = {u['time_us']:,.1f} us at {units.clock_mhz(config):g} MHz, {u['tflops']:.3g} TFLOP/s, "
            f"{u['pct_peak']:.1f}% of the config's peak ({u['peak_tflops']:,.1f} TFLOP/s)")


def _fallback_note(rows: Sequence[dict], why: str, named: int = 3) -> str:
    """One line for the layers that fell back for the same reason: the first `named` of them, what ran."""
    names = ", ".join(r["layer"] for r in rows[:named])
    names += f" (+{len(rows) - named} more)" if len(rows) > named else ""
    kernels = ", ".join(dict.fromkeys(r["kernel"] for r in rows))
    return f"  * {names}: ran {rows[0]['run_pattern']} on {kernels}: {why}"


def format_summary(summary: RunSummary, jobs: Sequence[LayerJob]) -> str:
    """Every (network, variant) table of the run, then what was simulated, reused and failed."""
    seen = list(dict.fromkeys((j.network, j.batch, j.variant.label) for j in jobs))
    parts = [format_table(summary.frame, *group) for group in seen] if len(summary.frame) else []
    line = (f"{summary.planned} layer runs: {summary.simulated} simulated, {summary.reused} reused from "
            f"{summary.path}")
    if summary.shared:
        line += f", {summary.shared} identical to another run (same key)"
    if summary.failed:
        line += f", {len(summary.failed)} failed"
    if summary.checks_failed:
        line += f", {summary.checks_failed} failed the numpy check"
    line += (f"; {summary.wall_seconds:.1f} s wall, {summary.cpu_seconds:.1f} s CPU (this process and its "
             "workers)")
    if summary.interrupted:
        line += "; interrupted: re-run the same command to resume"
    return "\n\n".join([*parts, line])


def default_sparsity(pattern: str) -> float:
    """The sparsity a pattern runs at when none is given: its own (``fixed_sparsity``: 2:4 0.5), else
    DEFAULT_SPARSITY."""
    own = fixed_sparsity(get(pattern))
    return DEFAULT_SPARSITY if own is None else own


def sweep(patterns: Sequence[str], sparsities: Sequence[float], configs: Sequence[str],
          kernels: Sequence[str]) -> list[Variant]:
    """The product of the values as variants (a dense pattern once, whatever the sparsities; no
    sparsities: each pattern at ``default_sparsity``)."""
    variants = []
    for pattern, config, kernel in itertools.product(patterns, configs, kernels):
        for sparsity in sparsities or [default_sparsity(pattern)]:
            variant = Variant.make(pattern, sparsity, config, kernel)
            if variant not in variants:
                variants.append(variant)
    return variants


def parser() -> argparse.ArgumentParser:
    """The command line of a network run."""
    ap = argparse.ArgumentParser(prog="python -m stcsim.harness.network_run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", action="append", required=True, help="network spec (repeatable)")
    ap.add_argument("--config", action="append",
                    help=f"GPU config spec (repeatable; default {DEFAULT_CONFIG})")
    ap.add_argument("--pattern", action="append", help="sparsity pattern spec (repeatable; default dense)")
    ap.add_argument("--sparsity", action="append", type=float,
                    help="target sparsity of the sparse patterns (repeatable; default: the pattern's own, "
                         f"1 - N/M for N:M, else {DEFAULT_SPARSITY}; above its own: extra zeros, a warning)")
    ap.add_argument("--kernel", action="append",
                    help="auto, tensor-core, cuda-core, a kernel name or a glob of names, chosen per shape "
                         "among the family's tiles and K splits; fixed:SEL (e.g. fixed:cuda-core) keeps "
                         "the fixed rule, one tile per family (repeatable; default auto)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--weights", default="",
                    help="weights file (.npz or PyTorch state_dict); default: seeded random")
    ap.add_argument("--weights-prefix", default="", help="prefix of the weight keys in the file")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random weights and activations")
    ap.add_argument("--out", default="", help="results folder (default results/runs/<workload>)")
    ap.add_argument("--layers", type=int, default=None, help="only the N unique shapes cheapest to simulate")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel workers")
    ap.add_argument("--executor", choices=EXECUTORS, default="local")
    ap.add_argument("--scheduler", default="", help="dask scheduler address (default: a LocalCluster)")
    ap.add_argument("--allow-fallback", action="store_true",
                    help="run a pattern no kernel implements on the dense kernel (marked fallback rows) "
                         "instead of stopping with an error")
    ap.add_argument("--no-check", action="store_true", help="skip the numpy check")
    ap.add_argument("--check-limit", type=int, default=DEFAULT_CHECK_LIMIT,
                    help="MACs above which the check samples output columns")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--sample", type=float, default=0.0,
                    help="sampled simulation with this wave tolerance, e.g. 0.02 (default 0: full detail)")
    ap.add_argument("--phase", help="LLMs: prefill or decode (adds phase= to every workload spec)")
    ap.add_argument("--seq", type=int, help="tokens per sequence (adds seq_len= to every workload spec)")
    ap.add_argument("--kv-len", type=int, help="LLMs: keys attended (adds kv_len= to every workload spec)")
    ap.add_argument("--launch", choices=("batched", "serial"),
                    help="attention's per-head GEMMs: one strided-batched launch per layer (default) or one "
                         "launch per GEMM (adds launch= to every workload spec)")
    return ap


def default_out(workloads: Sequence[str]) -> Path:
    """results/runs/<first workload, made a folder name>."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in workloads[0])
    return Path("results") / "runs" / name


def results_folder(out: str | Path) -> Path:
    """`out` as the folder results.csv goes in, created when missing; OutputError when it is a file or
    cannot be created."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"--out {folder} is a file: name a folder (results.csv is written inside it)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"--out {folder}: cannot create the folder: {err.strerror}") from None
    return folder


def os_error(err: OSError) -> str:
    """An OSError in one line: the file and the system's reason (not the bare errno of ``err.args[0]``)."""
    return f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err)


def main(argv: list[str] | None = None) -> int:
    """CLI (module docstring). Exit status: 0 ok, 1 a layer failed or failed its check, 2 bad input (a
    pattern no kernel implements without --allow-fallback, an --out that is a file, ...), 130 interrupted."""
    a = parser().parse_args(argv)
    try:
        variants = sweep(a.pattern or [DEFAULT_PATTERN], a.sparsity or [],
                         a.config or [DEFAULT_CONFIG], a.kernel or [AUTO])
        for pattern in dict.fromkeys(v.pattern for v in variants if not a.allow_fallback):
            require_kernels(get(pattern))
        for why in filter(None, map(extra_zeros, variants)):
            print(f"warning: {why}", file=sys.stderr)
        weights = WeightSource.from_file(a.weights, a.weights_prefix) if a.weights else WeightSource(a.seed)
        a.workload = [with_params(w, phase=a.phase, seq_len=a.seq, kv_len=a.kv_len, launch=a.launch)
                      for w in a.workload]

        def plan() -> list[LayerJob]:
            return [job for net in a.workload for job in plan_network(
                net, variants, a.batch, weights, max_layers=a.layers, check=not a.no_check,
                check_limit=a.check_limit, sample=a.sample)]

        make = {"kind": a.executor, "workers": a.jobs, "scheduler": a.scheduler}
        out = results_folder(a.out or default_out(a.workload))
        start, cpu = time.perf_counter(), _cpu_seconds()
        runner, interrupted = presimulate(plan, make), True
        try:
            jobs = plan()
            summary = run_jobs(jobs, out, runner, progress=not a.no_progress, make=make)
            interrupted = summary.interrupted
        finally:
            if runner is not None:
                runner.close(interrupted=interrupted)
        # the whole run: kernel choice included, and the workers' CPU once they have exited
        summary.wall_seconds, summary.cpu_seconds = time.perf_counter() - start, _cpu_seconds() - cpu
    except KeyboardInterrupt:  # while planning (run_jobs handles it while the layers run)
        print("interrupted before any layer ran", file=sys.stderr)
        return 130
    except NoKernelError as err:
        print(f"error: {err.args[0]} (--allow-fallback runs its layers on the dense kernel, marked)",
              file=sys.stderr)
        return 2
    except OSError as err:
        print(f"error: {os_error(err)}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, WeightFileError, DaskUnavailable, ImportError) as err:
        # ImportError: an optional extra the input needs (a .pt weights file without PyTorch)
        print(f"error: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2
    print(format_summary(summary, jobs))
    if summary.interrupted:
        return 130
    return 0 if summary.ok else 1


if __name__ == "__main__":
    reuse_freed_memory()  # the CLI process only: an importing program keeps its allocator
    raise SystemExit(main())

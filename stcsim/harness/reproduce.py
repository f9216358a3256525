"""`invoke reproduce paper001-fig16` / `paper004-fig6`: a paper figure as network runs, next to its numbers.

Each bar of the figure (``paper_figures.yaml``) is a variant of a network run over the networks the paper ran,
in the variant it ran (``stcsim.workloads.papers``). The command writes into ``--out``: ``results.csv`` (the
network-run CSV, also the cache: an interrupted reproduction resumes), ``table.md`` (per cell our speedup, the
paper's and their ratio; the run's scope; the paper cited by title and section; the layers that ran a dense
fallback because no kernel of the bar's pattern exists yet) and ``<figure>.png`` (grouped bars, the paper's
values as black ticks, the share of a bar's layers that fell back hatched, the scope in the title).
``--quick`` runs the few unique layer shapes per network cheapest to simulate (``--layers``, default 2):
minutes on two cores; the full run states its expected time first. Every layer's kernel is chosen per shape
among its family's tiles and K splits (``kernel_choice``; ``plan_figure(..., fixed=True)`` keeps the fixed
rule, one tile per family as before issue 44). A bar whose pattern spec ``stcsim.sparsity`` does not accept
yet is listed as unavailable with the reason, not simulated.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from stcsim.harness.compare import GEOMEAN, compare
from stcsim.harness.executor import EXECUTORS, DaskUnavailable
from stcsim.harness.jobs import LayerJob, Variant, plan_network, simulation_work
from stcsim.harness.kernel_choice import CUDA_CORE, FIXED, TENSOR_CORE, math_units, parse_selector
from stcsim.harness.network_run import RunSummary, os_error, results_folder, run_jobs
from stcsim.harness.paper_figures import Figure, Panel, figures, get_figure
from stcsim.harness.plots import figure_panels

QUICK_LAYERS = 2
SECONDS_PER_WORK = {TENSOR_CORE: 1e-8, CUDA_CORE: 5e-8}
"""Host seconds per unit of ``simulation_work`` of a dense kernel (fitted to runs on the development
machine, one core, v100 config: WMMA 64x3136x64 0.18 s, 2048x1x512 0.73 s, 256x3136x2304 20 s; SIMT
64x3136x64 1.1 s, 512x49x2048 3.9 s, 2048x1x512 4.1 s)."""


@dataclass(frozen=True)
class FigurePlan:
    """The jobs of a figure, its variants by bar label, and the bars that cannot run with the reason."""

    figure: Figure
    jobs: tuple[LayerJob, ...]
    variants: dict[str, Variant]
    unavailable: dict[str, str]
    layers: int | None = None
    fixed: bool = False

    def scope(self) -> str:
        """The run's scope in one line: full or quick, batch, sampling, configs and how kernels are chosen."""
        shapes = (f"quick: the {self.layers} unique layer shapes per network cheapest to simulate"
                  if self.layers else "full: every unique layer shape of each network")
        batches = sorted({job.batch for job in self.jobs}) or [self.figure.batch]
        samples = sorted({job.sample for job in self.jobs if job.sample})
        sampling = (f"sampled simulation (tolerance {', '.join(f'{s:g}' for s in samples)})" if samples
                    else "full-detail simulation (no sampling)")
        configs = ", ".join(dict.fromkeys(v.config for v in self.variants.values()))
        choice = ("by the fixed rule (one tile per kernel family)" if self.fixed
                  else "per shape among each family's tiles and K splits")
        return (f"{shapes}; batch {', '.join(map(str, batches))}; {sampling}; configs {configs}; kernels "
                f"chosen {choice}")


def plan_figure(figure: Figure, layers: int | None = None, check: bool = True,
                fixed: bool = False) -> FigurePlan:
    """Every job of the figure: each network (the paper's variant) times each available bar (`fixed`: every
    bar's kernel selector behind ``fixed:``, the fixed rule)."""
    variants, unavailable = {}, {}
    for bar in figure.bars:
        selector = bar.kernel
        if fixed and not parse_selector(selector)[0]:
            selector = FIXED + selector
        try:
            variants[bar.label] = Variant.make(bar.pattern, bar.sparsity, bar.config, selector, bar.label)
        except ValueError as err:
            unavailable[bar.label] = f"pattern {bar.pattern!r}: {err}"
    jobs = [job for w in figure.networks for job in plan_network(
        w.spec, list(variants.values()), w.batch or figure.batch, max_layers=layers, check=check)]
    return FigurePlan(figure, tuple(jobs), variants, unavailable, layers, fixed)


def job_seconds(job: LayerJob) -> float:
    """Estimated host seconds of one job: its ``simulation_work`` at the measured rate of its kernel's math
    units. Sparse kernels are not credited with their sparsity: their simulation cost does not fall with the
    kept work (the ExTensor SpMM simulates VGG's 64 x 50176 x 27 conv at 90% slower than the dense WMMA
    GEMM), and preparing their operands costs host time too."""
    return simulation_work(job.layer) * SECONDS_PER_WORK[math_units(job.choice.kernel)]


def expected_seconds(jobs: Sequence[LayerJob], workers: int) -> float:
    """Estimated wall seconds of the jobs on `workers` parallel workers (jobs with one key run once)."""
    unique = {job.key(): job for job in jobs}.values()
    return sum(job_seconds(job) for job in unique) / max(1, workers)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def panel_tables(plan: FigurePlan, panel: Panel, frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ours, paper): speedups over the panel's baseline, rows = networks (paper labels) + GeoMean, columns =
    the panel's bars. Ours is NaN where a bar is unavailable or its layers have no rows yet."""
    labels = [bar.label for bar in panel.bars]
    networks = [w.label for w in plan.figure.networks] + [GEOMEAN]
    ours = pd.DataFrame(np.nan, index=networks, columns=labels)
    runnable = [label for label in labels if label in plan.variants]
    rows = frame[frame["variant"].isin(runnable)]
    if panel.baseline in runnable and len(rows):
        result = compare(rows, panel.baseline).networks
        names = {w.spec: w.label for w in plan.figure.networks} | {GEOMEAN: GEOMEAN}
        result.index = [names[spec] for spec, _ in result.index]
        ours.update(result)
    paper = pd.DataFrame({bar.label: [*bar.paper, bar.paper_geomean] for bar in panel.bars}, index=networks,
                         dtype=float)
    return ours, paper


def _fallbacks(frame: pd.DataFrame, label: str) -> str:
    rows = frame[(frame["variant"] == label) & (frame["row_type"] == "layer")] if len(frame) else frame
    return f"{int(rows['fallback'].astype(bool).sum())} of {len(rows)}" if len(rows) else "-"


def fallback_shares(plan: FigurePlan, frame: pd.DataFrame) -> pd.DataFrame:
    """The share of each bar's layer rows that ran a dense fallback, per network (paper labels) and over all
    networks (GeoMean row); 0 where a bar has no rows."""
    networks = [w.label for w in plan.figure.networks]
    labels = [bar.label for bar in plan.figure.bars]
    shares = pd.DataFrame(0.0, index=[*networks, GEOMEAN], columns=labels)
    layers = frame[frame["row_type"] == "layer"] if len(frame) else frame
    if not len(layers):
        return shares
    names = {w.spec: w.label for w in plan.figure.networks}
    for label in labels:
        rows = layers[layers["variant"] == label]
        fell = rows["fallback"].astype(bool)
        for spec, group in fell.groupby(rows["network"]):
            if spec in names:
                shares.at[names[spec], label] = float(group.mean())
        if len(rows):
            shares.at[GEOMEAN, label] = float(fell.mean())
    return shares


def _cell(mine: float, theirs: float, unavailable: bool) -> str:
    """``ours (paper P, ratio R)``: R = ours / paper; ``n/a`` for an unavailable bar, ``-`` without rows."""
    text = "n/a" if unavailable else ("-" if np.isnan(mine) else f"{mine:.2f}")
    if np.isnan(theirs):
        return text
    ratio = "" if unavailable or np.isnan(mine) or theirs == 0 else f", ratio {mine / theirs:.2f}"
    return f"{text} (paper {theirs:.2f}{ratio})"


def format_panel(plan: FigurePlan, panel: Panel, frame: pd.DataFrame) -> str:
    """A markdown table: one row per bar, ``ours (paper P, ratio R)`` per network and the geomean, and the
    dense-fallback layers."""
    ours, paper = panel_tables(plan, panel, frame)
    head = ["configuration", *ours.index, "dense-fallback layers"]
    lines = [f"{plan.figure.title} {panel.name}".rstrip() + f", over {panel.baseline}:", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label in ours.columns:
        cells = [_cell(ours.at[network, label], paper.at[network, label], label in plan.unavailable)
                 for network in ours.index]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {_fallbacks(frame, label)} |")
    return "\n".join(lines)


def kernel_choices(plan: FigurePlan, frame: pd.DataFrame) -> str:
    """Per bar, the kernels its layers ran and how they were chosen (``kernel_choice`` column counts)."""
    layers = frame[frame["row_type"] == "layer"] if len(frame) else frame
    if not len(layers) or "kernel_choice" not in layers:
        return ""
    lines = []
    for label in plan.variants:
        rows = layers[layers["variant"] == label]
        if not len(rows):
            continue
        how = rows["kernel_choice"].fillna("fixed").value_counts()
        kernels = rows["kernel"].value_counts()
        lines.append(f"- {label}: " + ", ".join(f"{n} {h}" for h, n in how.items()) + "; ran " +
                     ", ".join(f"{name} ({n})" for name, n in kernels.items()))
    head = ("Kernel choice per bar (layers chosen per shape among simulated candidates, the only "
            "configuration left, or by the fixed rule; kernels with their layer counts):")
    return head + "\n" + "\n".join(lines)


def report(plan: FigurePlan, summary: RunSummary, seconds: float) -> str:
    """All panels' tables, the unavailable bars and the fallback reasons, and the wall time."""
    frame = summary.frame
    parts = [f"Scope: {plan.scope()}."]
    parts += [format_panel(plan, panel, frame) for panel in plan.figure.panels]
    parts.append("Cells: ours (paper P, ratio R = ours / paper). Speedups are simulated cycles x repeat "
                 f"summed over the layers run. Paper numbers: {plan.figure.source}")
    choices = kernel_choices(plan, frame)
    if choices:
        parts.append(choices)
    if plan.unavailable:
        parts.append("Unavailable bars (not simulated):\n" + "\n".join(
            f"- {label}: {why}" for label, why in plan.unavailable.items()))
    layers = frame[frame["row_type"] == "layer"] if len(frame) else frame
    fell_back = layers.loc[layers["fallback"].astype(bool), "fallback_reason"] if len(layers) else []
    reasons = sorted(set(fell_back))
    if reasons:
        parts.append("Dense fallbacks (the layer ran a dense kernel on its pruned weights):\n" + "\n".join(
            f"- {reason}" for reason in reasons))
    parts.append(f"{summary.planned} layer runs: {summary.simulated} simulated, {summary.reused} reused, "
                 f"{summary.shared} identical to another (same key); wall time {seconds:.0f} s")
    return "\n\n".join(parts)


def describe_networks(figure: Figure) -> str:
    """The networks as the paper ran them: label, variant spec, batch and the evidence."""
    lines = [f"{figure.name}: {figure.title}", f"networks (paper {figure.paper}'s variants; "
                                                f"{figure.batch_note or f'batch {figure.batch}'}):"]
    lines += [f"  {w.label}: {w.spec} ({w.evidence})" for w in figure.networks]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI (module docstring). Exit status 0 when every layer ran and passed its check, 1 otherwise, 2 for
    bad input, 130 when interrupted."""
    ap = argparse.ArgumentParser(prog="python -m stcsim.harness.reproduce", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("figure", help=f"one of: {', '.join(figures())}")
    ap.add_argument("--quick", action="store_true", help="only the few cheapest unique shapes per network")
    ap.add_argument("--layers", type=int, default=None, help=f"shapes per network (--quick: {QUICK_LAYERS})")
    ap.add_argument("--out", default="", help="output folder (default results/<figure>[-quick])")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel workers")
    ap.add_argument("--executor", choices=EXECUTORS, default="local")
    ap.add_argument("--scheduler", default="", help="dask scheduler address (default: a LocalCluster)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--fixed", action="store_true",
                    help="every bar on its family's fixed kernel (the rule before the per-shape choice)")
    a = ap.parse_args(argv)
    start = time.perf_counter()
    try:
        figure = get_figure(a.figure)
        layers = a.layers if a.layers is not None else (QUICK_LAYERS if a.quick else None)
        print(describe_networks(figure))
        plan = plan_figure(figure, layers, fixed=a.fixed)
        estimate = _duration(expected_seconds(plan.jobs, a.jobs))
        scope = f"the {layers} cheapest shapes per network" if layers else "every layer"
        print(f"{len(plan.jobs)} layer runs ({scope}), {len(plan.variants)} configurations; expected time "
              f"about {estimate} on {a.jobs} worker(s) (fewer if results.csv already has rows)", flush=True)
        out = results_folder(a.out or Path("results") / (figure.name + ("-quick" if layers else "")))
        make = {"kind": a.executor, "workers": a.jobs, "scheduler": a.scheduler}
        summary = run_jobs(plan.jobs, out, progress=not a.no_progress, make=make)
    except OSError as err:
        print(f"error: {os_error(err)}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, DaskUnavailable) as err:
        print(f"error: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2
    text = report(plan, summary, time.perf_counter() - start)
    (out / "table.md").write_text(text + "\n")
    panels = [(p.name, *panel_tables(plan, p, summary.frame)) for p in figure.panels]
    title = f"{figure.title}\n{plan.scope()}"
    png = figure_panels(panels, "speedup", out / f"{figure.name}.png", title,
                        fallback_shares(plan, summary.frame))
    print(text)
    print(f"files: {summary.path}, {out / 'table.md'}, {png}")
    if summary.interrupted:
        return 130
    return 0 if summary.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

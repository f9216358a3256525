"""`invoke reproduce FIGURE` (paper000-transformer, paper001-fig16, paper002-fig10, paper003-table1,
paper004-fig6): a paper figure as network runs, next to its numbers.

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
yet, or whose every kernel the bar's GPU config refuses (e.g. an sm_80 kernel on the sm_75 T4: a probe launch
of each kernel, ``kernel_choice.probe``), is listed as unavailable with the reason, not simulated; so is a
panel's baseline when no other bar of its panel can run. A figure with ``problems`` (paper 003's 20 SpMM
problems) runs only those layer shapes of its networks and adds a table per problem (``--quick``: the cheapest
problems per network).

Full runs simulate with sampling (``launch(..., sample=SAMPLE_TOLERANCE)``, docs/performance.md) unless
``--full-detail``; ``--sample TOL`` sets the tolerance (and turns sampling on for ``--quick`` runs, which run
in full detail by default). A sampled run then measures its own error: per network the ``--check-layers``
cheapest layer runs the sampler actually sampled are simulated again in full detail (into
``<out>/full_detail/``), and ``table.md`` gives their measured errors next to their stated estimates
(``sample_error_estimate``), the largest of each, and whether every one is within its estimate.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path

import numpy as np
import pandas as pd

from stcsim.experiments.paper_figures import Bar, Figure, Panel, figures, get_figure
from stcsim.harness import jobs as plans
from stcsim.harness.compare import GEOMEAN, compare
from stcsim.harness.executor import EXECUTORS, DaskUnavailable
from stcsim.harness.host_memory import reuse_freed_memory
from stcsim.harness.jobs import LayerJob, Variant, plan_network, simulation_work
from stcsim.harness.kernel_choice import (
    AUTO,
    CUDA_CORE,
    DENSE,
    FIXED,
    SELECTORS,
    TENSOR_CORE,
    math_units,
    parse_selector,
    probe,
)
from stcsim.harness.network_run import RunSummary, os_error, presimulate, results_folder, run_jobs
from stcsim.harness.plots import figure_panels
from stcsim.kernels import NoKernelError, get_kernel, kernels_for
from stcsim.kernels.ptx_info import opcodes
from stcsim.sparsity import get

QUICK_LAYERS = 2
SAMPLE_TOLERANCE = 0.02
"""Sampling tolerance of full runs (``--sample``; 0 / ``--full-detail``: full detail)."""
CHECK_LAYERS = 3
"""Sampled layer runs per network re-run in full detail to measure the sampling error (``--check-layers``)."""
SAMPLED_MODES = (1, 5, 6)
"""``sample_mode`` values of a launch the sampler shortened (docs/stats.md); every other mode ran in full
detail, so its error is 0 by construction and re-running it would measure nothing."""
FULL_DETAIL_FOLDER = "full_detail"
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
        unit = "of the paper's problems" if self.figure.problems else "unique layer shapes"
        shapes = (f"quick: the {self.layers} {unit} per network cheapest to simulate" if self.layers
                  else "full: every one of the paper's problems" if self.figure.problems
                  else "full: every unique layer shape of each network")
        batches = sorted({job.batch for job in self.jobs}) or [self.figure.batch]
        samples = sorted({job.sample for job in self.jobs if job.sample})
        sampling = (f"sampled simulation (tolerance {', '.join(f'{s:g}' for s in samples)})" if samples
                    else "full-detail simulation (no sampling)")
        configs = ", ".join(dict.fromkeys(v.config for v in self.variants.values()))
        choice = ("by the fixed rule (one tile per kernel family)" if self.fixed
                  else "per shape among each family's tiles and K splits")
        return (f"{shapes}; batch {', '.join(map(str, batches))}; {sampling}; configs {configs}; kernels "
                f"chosen {choice}")


SM80_ONLY = (("cp.async", "cp.async"), (".m16n8k16", "mma.sync m16n8k16"), ("mma.sp", "mma.sp"))
"""(opcode text, name) of the instructions the PTX ISA gives sm_80 and later only (the engine's
feature_gates.def): what an sm_80 kernel uses that an sm_70 / sm_75 GPU lacks."""


def _sm80_instructions(name: str) -> list[str]:
    """The sm_80-only instructions in the PTX module of kernel `name`."""
    ops = opcodes(get_kernel(name).ptx_path.read_text())
    return [what for text, what in SM80_ONLY if any(text in op for op in ops)]


def refusal(pattern: str, sparsity: float, config: str, selector: str) -> str:
    """Why no kernel of `pattern` the selector picks can run on `config` ('' when one can, and for a pattern
    without kernels, which runs as marked dense fallbacks): each kernel's probe launch on the config
    (``kernel_choice.probe``) refused, with the sm_80-only instructions the kernels use."""
    if get(pattern).spec() == DENSE:
        return ""
    try:
        kernels = kernels_for(get(pattern))
    except NoKernelError:
        return ""
    base = parse_selector(selector)[1]
    if base in SELECTORS:
        kernels = tuple(k for k in kernels if base == AUTO or math_units(k.procedural_name) == base)
    else:
        kernels = tuple(k for k in kernels if fnmatchcase(k.procedural_name, base))
    reasons = [probe(k.procedural_name, get(pattern).spec(), sparsity, config) for k in kernels]
    if not kernels or not all(reasons):
        return ""
    needs = sorted({what for k in kernels for what in _sm80_instructions(k.procedural_name)})
    uses = f" (they use {', '.join(needs)}: sm_80+ in the PTX ISA)" if needs else ""
    first = re.sub(r"\(/[^()]*/([^/()]+)\)", r"(\1)", reasons[0])
    return (f"not runnable on {config}: every {pattern} kernel{uses} is refused by the config; "
            f"{first}")


def _plan_shapes(network: str, variants: list[Variant], batch: int, shapes: set[tuple[int, int, int]],
                 layers: int | None, check: bool) -> list[LayerJob]:
    """``plan_network`` restricted to the layer groups of the given (M, N, K) shapes (the ``layers``
    cheapest of them): what a figure of single GEMMs (``problems``) runs. Planning decides every job's
    kernel, which simulates candidates, so the other shapes are left out before it, not after."""
    net = plans.get_network(network, batch=batch)
    source = plans.WeightSource()
    groups = [g for g in plans.shape_groups(net) if (g.layer.m, g.layer.n, g.layer.k) in shapes]
    if layers is not None:
        groups = plans.smallest_groups(groups, layers)
    jobs = []
    for variant in variants:
        plans.check_variant(variant)
        versions = {"engine": plans.engine_version(), "config": variant.config_hash()}
        for g in groups:
            action, reason, run_shape, choice, fallback = plans._decide(g.layer, variant)
            jobs.append(LayerJob(
                network, batch, g.index, g.layer, g.names, g.repeat, len(groups), variant, source, action,
                reason, run_shape, choice, fallback, check, plans.DEFAULT_CHECK_LIMIT,
                {**versions, "kernel_ptx": plans.kernel_digest(choice.kernel)},
            ))
    return jobs


def _lonely_baselines(figure: Figure, unavailable: dict[str, str]) -> dict[str, str]:
    """Baselines none of whose panels has another bar that runs: nothing to compare them with."""
    lonely = {}
    for panel in figure.panels:
        others = [bar.label for bar in panel.bars if bar.label != panel.baseline]
        if others and all(label in unavailable for label in others):
            lonely.setdefault(panel.baseline, []).append(panel.name)
    useful = {panel.baseline for panel in figure.panels
              if any(bar.label not in unavailable for bar in panel.bars if bar.label != panel.baseline)}
    return {label: "not run: no other bar of its panel can run, so there is nothing to compare it with"
            for label in lonely if label not in useful}


def plan_figure(figure: Figure, layers: int | None = None, check: bool = True,
                fixed: bool = False, sample: float = 0.0) -> FigurePlan:
    """Every job of the figure: each network (the paper's variant; only the figure's problems where it has
    some) times each available bar (`fixed`: every bar's kernel selector behind ``fixed:``, the fixed
    rule; `sample` > 0: each job simulated with sampling at that tolerance)."""
    variants: dict[str, Variant] = {}
    unavailable: dict[str, str] = {}
    per_network: dict[str, dict[str, Variant]] = {w.label: {} for w in figure.networks}

    def make(bar: Bar, pattern: str, sparsity: float, selector: str) -> Variant | None:
        try:
            variant = Variant.make(pattern, sparsity, bar.config, selector, bar.label)
        except ValueError as err:
            unavailable[bar.label] = f"pattern {pattern!r}: {err}"
            return None
        why = refusal(pattern, sparsity, bar.config, selector)
        if why:
            unavailable[bar.label] = why
            return None
        return variant

    for bar in figure.bars:
        selector = bar.kernel
        if fixed and not parse_selector(selector)[0]:
            selector = FIXED + selector
        variant = make(bar, bar.pattern, bar.sparsity, selector)
        if variant is None:
            continue
        own = {}
        for w in figure.networks:
            pattern, sparsity = bar.on(w.label)
            own[w.label] = (variant if (pattern, sparsity) == (bar.pattern, bar.sparsity)
                            else make(bar, pattern, sparsity, selector))
        if bar.label in unavailable:
            continue
        variants[bar.label] = variant
        for label, v in own.items():
            per_network[label][bar.label] = v
    for label, why in _lonely_baselines(figure, unavailable).items():
        unavailable[label] = why
        variants.pop(label, None)
        for chosen in per_network.values():
            chosen.pop(label, None)
    jobs = []
    for w in figure.networks:
        chosen = list(per_network[w.label].values())
        shapes = figure.shapes(w.label)
        batch = w.batch or figure.batch
        if shapes is None:
            jobs += plan_network(w.spec, chosen, batch, max_layers=layers, check=check, sample=sample)
        else:
            planned = _plan_shapes(w.spec, chosen, batch, shapes, layers, check)
            jobs += [replace(job, sample=sample) for job in planned]
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


def problem_label(problem) -> str:
    """A problem's row label: the paper's number and the shape M x N x K."""
    return f"#{problem.label} ({problem.m}x{problem.n}x{problem.k})"


def problem_tables(plan: FigurePlan, panel: Panel, frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ours, paper) per problem of a figure with ``problems``: rows = problems + GeoMean, columns = the
    panel's bars; ours is the simulated speedup of the problem's layer over the baseline's. Ours' GeoMean is
    over the problems the paper gives the bar a value for (all when it gives none); the paper's is its own
    stated geomean."""
    figure = plan.figure
    labels = [bar.label for bar in panel.bars]
    rows = [problem_label(p) for p in figure.problems]
    ours = pd.DataFrame(np.nan, index=[*rows, GEOMEAN], columns=labels)
    runnable = [label for label in labels if label in plan.variants]
    layers = frame[frame["variant"].isin(runnable)] if len(frame) else frame
    if panel.baseline in runnable and len(layers):
        speedups = compare(layers, panel.baseline).layers
        specs = {w.label: w.spec for w in figure.networks}
        where = {(specs[p.network], *p.shape): problem_label(p) for p in figure.problems}
        for key, values in speedups.iterrows():
            network, _batch, _index, _layer, m, n, k = key
            row = where.get((network, int(m), int(n), int(k)))
            if row is not None:
                ours.loc[row, values.index] = values.to_numpy(dtype=float)
    paper = pd.DataFrame(np.nan, index=ours.index, columns=labels)
    for bar in panel.bars:
        paper.loc[rows, bar.label] = [np.nan if v is None else v for v in bar.paper_problems]
        stated = bar.paper_problems_geomean
        paper.at[GEOMEAN, bar.label] = np.nan if stated is None else stated
        given = paper.loc[rows, bar.label].notna()
        mine = ours.loc[rows, bar.label][given if given.any() else slice(None)].dropna()
        if len(mine):
            ours.at[GEOMEAN, bar.label] = float(np.exp(np.log(mine).mean()))
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


def format_problems(plan: FigurePlan, panel: Panel, frame: pd.DataFrame) -> str:
    """A markdown table per problem of the figure: one row per problem (its network), one column per bar
    but the baseline, ``ours (paper P, ratio R)``; the GeoMean row last."""
    ours, paper = problem_tables(plan, panel, frame)
    bars = [label for label in ours.columns if label != panel.baseline]
    network = {problem_label(p): p.network for p in plan.figure.problems}
    head = ["problem (M x N x K)", "network", *bars]
    lines = [f"{plan.figure.title} {panel.name}".rstrip() + f", per problem, over {panel.baseline}:", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in ours.index:
        cells = [_cell(ours.at[row, label], paper.at[row, label], label in plan.unavailable)
                 for label in bars]
        lines.append(f"| {row} | {network.get(row, '')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


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


def report(plan: FigurePlan, summary: RunSummary, seconds: float, check: SamplingCheck | None = None) -> str:
    """All panels' tables, the unavailable bars and the fallback reasons, the sampling and its measured
    error (`check`), and the wall time."""
    frame = summary.frame
    parts = [f"Scope: {plan.scope()}."]
    if check is not None:
        parts.append(format_sampling(check))
    parts += [format_panel(plan, panel, frame) for panel in plan.figure.panels]
    if plan.figure.problems:
        parts += [format_problems(plan, panel, frame) for panel in plan.figure.panels]
    problems = (" Per problem: the simulated cycles of that layer, baseline / bar; GeoMean over the problems "
                "the paper gives a value for." if plan.figure.problems else "")
    parts.append("Cells: ours (paper P, ratio R = ours / paper). Speedups are simulated cycles x repeat "
                 f"summed over the layers run.{problems} Paper numbers: {plan.figure.source}")
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


@dataclass(frozen=True)
class CheckedRun:
    """One sampled layer run simulated again in full detail: both cycle counts and the sampler's estimate."""

    network: str
    layer: str
    variant: str
    sampled_cycles: float
    full_cycles: float
    estimate: float

    @property
    def error(self) -> float:
        """Relative error of the sampled cycles against full detail."""
        return (self.sampled_cycles - self.full_cycles) / self.full_cycles

    @property
    def within(self) -> bool:
        """The measured error is within the stated estimate (half a cycle of rounding allowed)."""
        return abs(self.sampled_cycles - self.full_cycles) <= self.estimate * self.full_cycles + 0.5


@dataclass(frozen=True)
class SamplingCheck:
    """A run's sampling and its error measured against full detail on a subset of its sampled layer runs."""

    tolerance: float
    layer_runs: int = 0
    sampled_runs: int = 0
    checked: tuple[CheckedRun, ...] = ()
    per_network: int = CHECK_LAYERS
    failed: int = 0

    @property
    def max_error(self) -> float:
        """The largest measured |error| (0 without checked runs)."""
        return max((abs(c.error) for c in self.checked), default=0.0)

    @property
    def max_estimate(self) -> float:
        """The largest stated estimate of the checked runs (0 without any)."""
        return max((c.estimate for c in self.checked), default=0.0)

    @property
    def beyond(self) -> list[CheckedRun]:
        """Checked runs whose measured error exceeds their stated estimate."""
        return [c for c in self.checked if not c.within]

    def title(self) -> str:
        """The sampling part of the PNG title, one line."""
        if self.tolerance <= 0:
            return "full detail (no sampling)"
        if not self.checked:
            return (f"sampled (tolerance {self.tolerance:g}), {self.sampled_runs} of {self.layer_runs} runs "
                    "shortened")
        return (f"sampled (tolerance {self.tolerance:g}): error vs full detail on {len(self.checked)} runs "
                f"max {100 * self.max_error:.2f}% (stated estimates max {100 * self.max_estimate:.2f}%)")


def _layer_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["row_type"] == "layer"] if len(frame) else frame


def _sampled_identities(frame: pd.DataFrame) -> set[tuple[str, int, str, str]]:
    """(network, batch, layer, variant) of the layer rows whose launch the sampler shortened."""
    rows = _layer_rows(frame)
    if not len(rows) or "sample_mode" not in rows:
        return set()
    mode = pd.to_numeric(rows["sample_mode"], errors="coerce").fillna(0).astype(int)
    rows = rows[mode.isin(SAMPLED_MODES)]
    return {(str(r.network), int(r.batch), str(r.layer), str(r.variant)) for r in rows.itertuples()}


def check_jobs(plan: FigurePlan, frame: pd.DataFrame, per_network: int = CHECK_LAYERS) -> list[LayerJob]:
    """Per network the `per_network` cheapest sampled layer runs (``job_seconds``; rows whose
    ``sample_mode`` says the sampler shortened the launch), as full-detail jobs (``sample`` 0)."""
    sampled = _sampled_identities(frame)
    by_network: dict[str, dict[str, LayerJob]] = {}
    for job in plan.jobs:
        if job.sample and job.identity in sampled:
            by_network.setdefault(job.network, {}).setdefault(job.key(), job)
    picked = []
    for jobs in by_network.values():
        cheapest = sorted(jobs.values(), key=lambda j: (job_seconds(j), j.index, j.variant.label))
        picked += [replace(job, sample=0.0) for job in cheapest[:per_network]]
    return picked


def measure_sampling(plan: FigurePlan, frame: pd.DataFrame, out: Path, per_network: int = CHECK_LAYERS,
                     progress: bool = False, make: dict[str, object] | None = None) -> SamplingCheck:
    """The run's sampling error: the ``check_jobs`` simulated in full detail into ``out/full_detail``
    (its own results.csv, a cache as the run's), compared with the sampled rows of `frame`."""
    samples = sorted({job.sample for job in plan.jobs if job.sample})
    tolerance = samples[-1] if samples else 0.0
    layers = _layer_rows(frame)
    runs = len(layers)
    if tolerance <= 0:
        return SamplingCheck(0.0, runs, 0, (), per_network)
    sampled = len(_sampled_identities(frame))
    jobs = check_jobs(plan, frame, per_network)
    if not jobs:
        return SamplingCheck(tolerance, runs, sampled, (), per_network)
    full = run_jobs(jobs, results_folder(out / FULL_DETAIL_FOLDER), progress=progress, make=make)
    cycles = {(str(r.network), int(r.batch), str(r.layer), str(r.variant)): float(r.gpu_sim_cycle)
              for r in _layer_rows(full.frame).itertuples()}
    rows = {(str(r.network), int(r.batch), str(r.layer), str(r.variant)): r for r in layers.itertuples()}
    checked = []
    for job in jobs:
        row, reference = rows.get(job.identity), cycles.get(job.identity)
        if row is None or reference is None or not reference > 0:
            continue
        checked.append(CheckedRun(job.network, job.layer.name, job.variant.label, float(row.gpu_sim_cycle),
                                  reference, float(row.sample_error_estimate)))
    return SamplingCheck(tolerance, runs, sampled, tuple(checked), per_network, len(full.failed))


def format_sampling(check: SamplingCheck) -> str:
    """The sampling paragraph of ``table.md``: on or off, the tolerance, how many runs were shortened, and the
    error measured against full detail on the checked runs with their stated estimates."""
    if check.tolerance <= 0:
        return "Sampling: off (every layer run in full detail, error 0 by construction)."
    head = (f"Sampling: on, tolerance {check.tolerance:g} (docs/performance.md): {check.sampled_runs} of "
            f"{check.layer_runs} layer runs were shortened by the sampler; the others ran in full detail "
            "(their sampling error is 0 by construction).")
    if not check.checked:
        if not check.sampled_runs:
            why = " No layer run was shortened, so there was nothing to measure against full detail."
        elif check.per_network <= 0:
            why = (" None was re-run in full detail (--check-layers 0, or the run was interrupted): the "
                   "sampling error of this run is not measured.")
        else:
            why = f" None of them could be re-run in full detail ({check.failed} failed)."
        return head + why
    worst = max(check.checked, key=lambda c: abs(c.error))
    beyond = check.beyond
    verdict = ("every one within its stated estimate" if not beyond else
               f"{len(beyond)} beyond its stated estimate: " +
               ", ".join(f"{c.network} {c.layer} {c.variant}" for c in beyond))
    lines = [head + f" Sampling error measured against full detail on {len(check.checked)} of them (the "
             f"{check.per_network} cheapest shortened runs per network, simulated again in full detail): "
             f"max |error| {100 * check.max_error:.2f}% ({worst.network} {worst.layer}, {worst.variant}), "
             f"max stated estimate {100 * check.max_estimate:.2f}%; {verdict}.", "",
             "| network | layer | bar | sampled cycles | full-detail cycles | error | stated estimate "
             "| within |",
             "|---|---|---|---|---|---|---|---|"]
    for c in check.checked:
        lines.append(f"| {c.network} | {c.layer} | {c.variant} | {c.sampled_cycles:,.0f} | "
                     f"{c.full_cycles:,.0f} | {100 * c.error:+.2f}% | {100 * c.estimate:.2f}% | "
                     f"{'yes' if c.within else 'no'} |")
    return "\n".join(lines)


def describe_networks(figure: Figure) -> str:
    """The networks as the paper ran them: label, variant spec, batch and the evidence."""
    lines = [f"{figure.name}: {figure.title}", f"networks (paper {figure.paper}'s variants; "
                                                f"{figure.batch_note or f'batch {figure.batch}'}):"]
    lines += [f"  {w.label}: {w.spec} ({w.evidence})" for w in figure.networks]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI (module docstring). Exit status 0 when every layer ran and passed its check, 1 otherwise, 2 for
    bad input, 130 when interrupted."""
    ap = argparse.ArgumentParser(prog="python -m stcsim.experiments.reproduce", description=__doc__,
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
    ap.add_argument("--full-detail", action="store_true",
                    help="no sampled simulation (the default for --quick; full runs sample)")
    ap.add_argument("--sample", type=float, default=None,
                    help=f"sampling tolerance (default {SAMPLE_TOLERANCE:g} for full runs, off for --quick)")
    ap.add_argument("--batch", type=int, default=None,
                    help="every network at this batch (a sensitivity run; default: the paper's)")
    ap.add_argument("--check-layers", type=int, default=CHECK_LAYERS,
                    help="sampled layer runs per network re-run in full detail to measure the sampling error")
    a = ap.parse_args(argv)
    start = time.perf_counter()
    try:
        figure = get_figure(a.figure)
        if a.batch is not None:
            figure = figure.at_batch(a.batch)
        layers = a.layers if a.layers is not None else (QUICK_LAYERS if a.quick else None)
        print(describe_networks(figure))
        if a.full_detail:
            sample = 0.0
        else:
            sample = a.sample if a.sample is not None else (0.0 if layers else SAMPLE_TOLERANCE)
        if sample < 0:
            raise ValueError(f"--sample {sample:g}: a tolerance is >= 0")
        make = {"kind": a.executor, "workers": a.jobs, "scheduler": a.scheduler}
        runner, interrupted = presimulate(lambda: plan_figure(figure, layers, fixed=a.fixed, sample=sample),
                                          make), True
        try:
            plan = plan_figure(figure, layers, fixed=a.fixed, sample=sample)
            estimate = _duration(expected_seconds(plan.jobs, a.jobs))
            scope = f"the {layers} cheapest shapes per network" if layers else "every layer"
            print(f"{len(plan.jobs)} layer runs ({scope}), {len(plan.variants)} configurations; expected "
                  f"time about {estimate} on {a.jobs} worker(s) (fewer if results.csv already has rows)",
                  flush=True)
            suffix = ("-quick" if layers else "") + (f"-batch{a.batch}" if a.batch is not None else "")
            out = results_folder(a.out or Path("results") / (figure.name + suffix))
            summary = run_jobs(plan.jobs, out, runner, progress=not a.no_progress, make=make)
            interrupted = summary.interrupted
        finally:
            if runner is not None:
                runner.close(interrupted=interrupted)
        per_network = 0 if summary.interrupted else a.check_layers  # interrupted: no more simulations
        check = measure_sampling(plan, summary.frame, out, per_network, not a.no_progress, make)
    except OSError as err:
        print(f"error: {os_error(err)}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, DaskUnavailable) as err:
        print(f"error: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2
    text = report(plan, summary, time.perf_counter() - start, check)
    (out / "table.md").write_text(text + "\n")
    title = f"{figure.title}\n{plan.scope()}\n{check.title()}"
    if figure.problems:
        panels = [(p.name, *problem_tables(plan, p, summary.frame)) for p in figure.panels]
        png = figure_panels(panels, "speedup", out / f"{figure.name}.png", title)
    else:
        panels = [(p.name, *panel_tables(plan, p, summary.frame)) for p in figure.panels]
        png = figure_panels(panels, "speedup", out / f"{figure.name}.png", title,
                            fallback_shares(plan, summary.frame))
    print(text)
    print(f"files: {summary.path}, {out / 'table.md'}, {png}")
    if summary.interrupted:
        return 130
    return 0 if summary.ok and not check.failed else 1


if __name__ == "__main__":
    reuse_freed_memory()  # the CLI process only: an importing program keeps its allocator
    raise SystemExit(main())

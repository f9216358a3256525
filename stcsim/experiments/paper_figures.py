"""The papers' figures as data (``paper_figures.yaml``): each bar as a variant of a network run, and the
paper's number for it with its source. ``get_figure("paper001-fig16")`` reads one.

A bar may run another pattern or sparsity on some networks (``per_network``: paper 002 prunes CNNs with
tile width G = 64 and NMT / BERT with G = 128). A figure whose paper reports single GEMMs rather than networks
lists them as ``problems`` (paper 003's 20 SpMM problems): each is a layer shape of one of the figure's
networks, the runs are restricted to those shapes, and the bars carry the paper's value per problem
(``paper_problems``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

import yaml

from stcsim.workloads.papers import PaperWorkload, paper_workloads

DATA_FILE = "paper_figures.yaml"


@dataclass(frozen=True)
class Problem:
    """One GEMM the paper reports on its own: its label there, the network (paper label) it is a layer of,
    and the shape in our terms (M = output channels, N = batch x pixels or tokens, K = reduction)."""

    label: str
    network: str
    m: int
    n: int
    k: int
    note: str = ""

    @property
    def shape(self) -> tuple[int, int, int]:
        """(M, N, K)."""
        return (self.m, self.n, self.k)


@dataclass(frozen=True)
class Bar:
    """One configuration of a figure: the variant that runs it and the paper's values (None: not given).
    ``per_network``: (network label, pattern, sparsity) where a network runs another pattern or sparsity;
    ``paper_problems``: the paper's value per problem of the figure (empty without problems)."""

    label: str
    pattern: str
    sparsity: float
    config: str
    kernel: str
    paper: tuple[float | None, ...]
    paper_geomean: float | None
    per_network: tuple[tuple[str, str, float], ...] = ()
    paper_problems: tuple[float | None, ...] = ()
    paper_problems_geomean: float | None = None

    def on(self, network: str) -> tuple[str, float]:
        """(pattern, sparsity) the bar runs on the network with paper label `network`."""
        for label, pattern, sparsity in self.per_network:
            if label == network:
                return pattern, sparsity
        return self.pattern, self.sparsity


@dataclass(frozen=True)
class Panel:
    """A panel: its bars and the bar every speedup is over."""

    name: str
    baseline: str
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Figure:
    """A paper figure: its networks (the paper's variants), batch, panels, title and source."""

    name: str
    paper: str
    title: str
    source: str
    batch: int
    batch_note: str
    networks: tuple[PaperWorkload, ...]
    panels: tuple[Panel, ...]
    problems: tuple[Problem, ...] = ()

    def shapes(self, network: str) -> set[tuple[int, int, int]] | None:
        """The (M, N, K) shapes the figure runs of the network with paper label `network`; None: all."""
        if not self.problems:
            return None
        return {p.shape for p in self.problems if p.network == network}

    def at_batch(self, batch: int) -> Figure:
        """The figure with every network at `batch` (a sensitivity run: neither paper 001 nor 004 states its
        batch). ValueError for a figure of fixed problems (their shapes are the paper's) or a batch < 1."""
        if batch < 1:
            raise ValueError(f"--batch {batch}: a batch is at least 1")
        if self.problems:
            raise ValueError(f"{self.name} runs the paper's fixed problem shapes; it has no batch to change")
        note = f"batch {batch} (--batch; the paper's: {self.batch_note or f'batch {self.batch}'})"
        return replace(self, batch=batch, batch_note=note,
                       networks=tuple(replace(w, batch=batch) for w in self.networks))

    @property
    def bars(self) -> tuple[Bar, ...]:
        """Every bar of every panel, once per label."""
        return tuple({bar.label: bar for panel in self.panels for bar in panel.bars}.values())


def _need(entry: dict[str, Any], key: str, where: str) -> Any:
    if key not in entry:
        raise ValueError(f"{DATA_FILE}: {where} lacks {key!r}")
    return entry[key]


def _values(values: list[Any]) -> tuple[float | None, ...]:
    return tuple(None if v is None else float(v) for v in values)


def _optional(entry: dict[str, Any], key: str) -> float | None:
    return None if entry.get(key) is None else float(entry[key])


def _bar(entry: dict[str, Any], networks: list[str], problems: int, where: str) -> Bar:
    where = f"{where} bar {entry.get('label', '?')!r}"
    paper = entry.get("paper") or [None] * len(networks)
    if len(paper) != len(networks):
        raise ValueError(f"{DATA_FILE}: {where}: {len(paper)} paper values for {len(networks)} networks")
    by_problem = entry.get("paper_problems") or [None] * problems
    if len(by_problem) != problems:
        raise ValueError(f"{DATA_FILE}: {where}: {len(by_problem)} paper_problems values for {problems} "
                         "problems")
    pattern, sparsity = str(_need(entry, "pattern", where)), float(_need(entry, "sparsity", where))
    overrides = []
    for network, change in (entry.get("per_network") or {}).items():
        if network not in networks:
            raise ValueError(f"{DATA_FILE}: {where}: per_network {network!r} is none of the figure's "
                             "networks")
        overrides.append((str(network), str(change.get("pattern", pattern)),
                          float(change.get("sparsity", sparsity))))
    return Bar(str(_need(entry, "label", where)), pattern, sparsity, str(_need(entry, "config", where)),
               str(_need(entry, "kernel", where)), _values(paper), _optional(entry, "paper_geomean"),
               tuple(overrides), _values(by_problem) if problems else (),
               _optional(entry, "paper_problems_geomean"))


def _problems(entry: dict[str, Any], networks: list[str], name: str) -> tuple[Problem, ...]:
    problems = []
    for item in entry.get("problems") or []:
        where = f"{name} problem {item.get('label', '?')!r}"
        network = str(_need(item, "network", where))
        if network not in networks:
            raise ValueError(f"{DATA_FILE}: {where}: network {network!r} is none of the figure's networks")
        problems.append(Problem(str(_need(item, "label", where)), network, int(_need(item, "m", where)),
                                int(_need(item, "n", where)), int(_need(item, "k", where)),
                                str(item.get("note", ""))))
    return tuple(problems)


def _figure(name: str, entry: dict[str, Any]) -> Figure:
    paper = str(_need(entry, "paper", name))
    known = {w.label: w for w in paper_workloads(paper)}
    labels = _need(entry, "networks", name)
    unknown = [label for label in labels if label not in known]
    if unknown:
        raise ValueError(f"{DATA_FILE}: {name}: networks {unknown} are not paper {paper}'s "
                         f"({', '.join(known)})")
    problems = _problems(entry, labels, name)
    panels = []
    for panel in _need(entry, "panels", name):
        where = f"{name} panel {panel.get('name', '')!r}"
        bars = tuple(_bar(b, labels, len(problems), where) for b in _need(panel, "configurations", where))
        baseline = str(_need(panel, "baseline", where))
        if baseline not in {b.label for b in bars}:
            raise ValueError(f"{DATA_FILE}: {where}: baseline {baseline!r} is none of its bars")
        panels.append(Panel(str(panel.get("name", "")), baseline, bars))
    return Figure(name, paper, str(_need(entry, "title", name)), " ".join(str(entry["source"]).split()),
                  int(entry.get("batch", 1)), str(entry.get("batch_note", "")),
                  tuple(known[label] for label in labels), tuple(panels), problems)


@cache
def figures() -> dict[str, Figure]:
    """Every figure of the data file, by name."""
    text = resources.files("stcsim.experiments").joinpath(DATA_FILE).read_text()
    return {name: _figure(name, entry) for name, entry in yaml.safe_load(text).items()}


def get_figure(name: str) -> Figure:
    """The figure called `name`; ValueError listing the figures otherwise."""
    try:
        return figures()[name]
    except KeyError:
        raise ValueError(f"unknown figure {name!r}; choose one of: {', '.join(figures())}") from None

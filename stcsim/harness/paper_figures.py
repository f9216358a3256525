"""The papers' figures as data (``paper_figures.yaml``): each bar as a variant of a network run, and the
paper's number for it with its source. ``get_figure("paper001-fig16")`` reads one."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from stcsim.workloads.papers import PaperWorkload, paper_workloads

DATA_FILE = "paper_figures.yaml"


@dataclass(frozen=True)
class Bar:
    """One configuration of a figure: the variant that runs it and the paper's values (None: not given)."""

    label: str
    pattern: str
    sparsity: float
    config: str
    kernel: str
    paper: tuple[float | None, ...]
    paper_geomean: float | None


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

    @property
    def bars(self) -> tuple[Bar, ...]:
        """Every bar of every panel, once per label."""
        return tuple({bar.label: bar for panel in self.panels for bar in panel.bars}.values())


def _need(entry: dict[str, Any], key: str, where: str) -> Any:
    if key not in entry:
        raise ValueError(f"{DATA_FILE}: {where} lacks {key!r}")
    return entry[key]


def _bar(entry: dict[str, Any], networks: int, where: str) -> Bar:
    where = f"{where} bar {entry.get('label', '?')!r}"
    paper = entry.get("paper") or [None] * networks
    if len(paper) != networks:
        raise ValueError(f"{DATA_FILE}: {where}: {len(paper)} paper values for {networks} networks")
    return Bar(str(_need(entry, "label", where)), str(_need(entry, "pattern", where)),
               float(_need(entry, "sparsity", where)), str(_need(entry, "config", where)),
               str(_need(entry, "kernel", where)), tuple(None if v is None else float(v) for v in paper),
               None if entry.get("paper_geomean") is None else float(entry["paper_geomean"]))


def _figure(name: str, entry: dict[str, Any]) -> Figure:
    paper = str(_need(entry, "paper", name))
    known = {w.label: w for w in paper_workloads(paper)}
    labels = _need(entry, "networks", name)
    unknown = [label for label in labels if label not in known]
    if unknown:
        raise ValueError(f"{DATA_FILE}: {name}: networks {unknown} are not paper {paper}'s "
                         f"({', '.join(known)})")
    panels = []
    for panel in _need(entry, "panels", name):
        where = f"{name} panel {panel.get('name', '')!r}"
        bars = tuple(_bar(b, len(labels), where) for b in _need(panel, "configurations", where))
        baseline = str(_need(panel, "baseline", where))
        if baseline not in {b.label for b in bars}:
            raise ValueError(f"{DATA_FILE}: {where}: baseline {baseline!r} is none of its bars")
        panels.append(Panel(str(panel.get("name", "")), baseline, bars))
    return Figure(name, paper, str(_need(entry, "title", name)), " ".join(str(entry["source"]).split()),
                  int(entry.get("batch", 1)), str(entry.get("batch_note", "")),
                  tuple(known[label] for label in labels), tuple(panels))


@cache
def figures() -> dict[str, Figure]:
    """Every figure of the data file, by name."""
    text = resources.files("stcsim.harness").joinpath(DATA_FILE).read_text()
    return {name: _figure(name, entry) for name, entry in yaml.safe_load(text).items()}


def get_figure(name: str) -> Figure:
    """The figure called `name`; ValueError listing the figures otherwise."""
    try:
        return figures()[name]
    except KeyError:
        raise ValueError(f"unknown figure {name!r}; choose one of: {', '.join(figures())}") from None

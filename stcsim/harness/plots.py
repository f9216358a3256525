"""The papers' figure style: grouped bars, one group per network (plus the geomean), one bar per variant."""

from __future__ import annotations

import textwrap
from collections.abc import Collection, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

MAX_WIDTH_INCHES = 14.0
TITLE_FONT_SIZE = 10
_CHAR_WIDTH = 0.55
"""A title character's mean width in units of the font size (DejaVu Sans), for wrapping titles."""
PanelData = tuple[str, pd.DataFrame, "pd.DataFrame | None"]
"""(panel title, heights: rows = groups, columns = bars, reference values of the same shape or None)."""


def _label(key: object) -> str:
    parts = key if isinstance(key, tuple) else (key,)
    name = str(parts[0]).replace(":", "\n")
    batch = parts[1] if len(parts) > 1 else ""
    return name if str(batch) in ("", "1") else f"{name}\n(batch {batch})"


Hatched = Collection[str] | pd.DataFrame
"""Bars to hatch: column names (the whole bar), or shares in [0, 1] per group (rows) and column: the hatched
part of a bar is that share of its height (e.g. the share of its layers that ran a dense fallback)."""


def _shares(hatched: Hatched, table: pd.DataFrame, column: object) -> np.ndarray:
    """The hatched share of each bar of `column`, in the order of the table's groups."""
    if isinstance(hatched, pd.DataFrame):
        if column not in hatched.columns:
            return np.zeros(len(table.index))
        return hatched[column].reindex(table.index).fillna(0.0).to_numpy(dtype=float)
    return np.full(len(table.index), 1.0 if column in hatched else 0.0)


def _draw(ax: plt.Axes, table: pd.DataFrame, reference: pd.DataFrame | None, hatched: Hatched,
          value_labels: bool = False, legend_outside: bool = False) -> None:
    groups, bars = len(table.index), len(table.columns)
    width = 0.8 / max(bars, 1)
    x = np.arange(groups)
    colors = plt.get_cmap("tab10")
    marked = hatch_marked = False
    for i, column in enumerate(table.columns):
        offset = (i - (bars - 1) / 2) * width
        heights = np.nan_to_num(table[column].to_numpy(dtype=float))
        drawn = ax.bar(x + offset, heights, width, label=str(column), color=colors(i % 10), edgecolor="white")
        if value_labels:
            texts = [(f"{h:.3g}" if h >= 10 else f"{h:.2f}") if h else "" for h in heights]
            ax.bar_label(drawn, labels=texts, fontsize=6, padding=1, rotation=90 if bars * groups > 12 else 0)
        share = _shares(hatched, table, column)
        if (share > 0).any():
            note = None if hatch_marked else "hatched: share of layers on a dense fallback"
            ax.bar(x + offset, heights * share, width, color="none", hatch="//", edgecolor="black",
                   linewidth=0, label=note)
            hatch_marked = True
        if reference is not None and column in reference.columns:
            ref = reference[column].reindex(table.index).to_numpy(dtype=float)
            shown = ~np.isnan(ref)
            ax.scatter((x + offset)[shown], ref[shown], marker="_", s=160, color="black", zorder=3,
                       label=None if marked or not shown.any() else "paper")
            marked = marked or bool(shown.any())
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(x, [_label(k) for k in table.index])
    if legend_outside:
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.margins(y=0.12)  # room for the value labels
    else:
        ax.legend(fontsize=7, ncol=2, frameon=False)


def wrap_title(title: str, width_inches: float, font_size: float = TITLE_FONT_SIZE) -> str:
    """`title` with every line wrapped at word boundaries to fit a figure `width_inches` wide (a long scope
    line would otherwise run past both edges of the PNG)."""
    chars = max(20, int(width_inches * 72 / (font_size * _CHAR_WIDTH)))
    return "\n".join(textwrap.fill(line, chars) if line else line for line in title.split("\n"))


def figure_panels(panels: Sequence[PanelData], ylabel: str, path: str | Path, title: str = "",
                  hatched: Hatched = (), value_labels: bool = False, legend_outside: bool = False) -> Path:
    """Draw one grouped bar chart per panel, stacked, to a PNG at `path`; NaN heights leave a gap, a
    reference value is a black tick on its bar, and `hatched` bars are hatched (``Hatched``: whole columns,
    or a share of each bar); `value_labels` writes each bar's height on it, `legend_outside` puts the legend
    right of the bars. Returns the path written."""
    widest = max(len(t.index) * max(len(t.columns), 2) for _, t, _ in panels)
    width = min(MAX_WIDTH_INCHES, max(6.0, 0.25 * widest + 3))
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, 4.5 * len(panels)), squeeze=False)
    for ax, (name, table, reference) in zip(axes[:, 0], panels, strict=True):
        _draw(ax, table, reference, hatched, value_labels, legend_outside)
        ax.set_ylabel(ylabel)
        if name:
            ax.set_title(name, fontsize=10)
    if title:
        fig.suptitle(wrap_title(title, width), fontsize=TITLE_FONT_SIZE)
    fig.tight_layout()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=120, **({"bbox_inches": "tight"} if legend_outside else {}))
    plt.close(fig)
    return target


def grouped_bars(table: pd.DataFrame, ylabel: str, path: str | Path, title: str = "",
                 reference: pd.DataFrame | None = None, hatched: Hatched = (), value_labels: bool = False,
                 legend_outside: bool = False) -> Path:
    """One panel of :func:`figure_panels` (`hatched`: columns drawn hatched, e.g. dense fallbacks)."""
    return figure_panels([("", table, reference)], ylabel, path, title, hatched, value_labels, legend_outside)

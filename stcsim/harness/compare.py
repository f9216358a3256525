"""`invoke compare A.csv B.csv ...`: speedups of network runs over a baseline variant, per layer and network.

The result files are joined (a variant is a ``variant`` label of the network-run CSV). ``--metric`` chooses
what is compared: ``cycles`` (``gpu_sim_cycle``, the default: per-cycle speedups, the same across clocks),
``kernel-cycles`` (``kernel_cycles``: without the launch overhead), ``time`` (microseconds: the cycles at
each row's config clock, ``stcsim.harness.units``; speedups across configs with other clocks) or ``tflops``
(2 x M x N x K over that time). The speedup of a variant is the baseline's cycles (or time) over the
variant's, per layer (rows matched by network, batch and layer) and per network (x repeat summed over the
layers both runs have: a note names any network where that is not all of the baseline's); the geometric mean
runs over the networks both have; for ``tflops`` it is the variant's rate over the baseline's (the time
speedup). Beside the speedups it prints the metric itself: per network (x repeat summed over all the
variant's layers; TFLOP/s of the summed MACs over the summed time) and per launch of each layer.
``--view network|layer|both`` (default both) picks the tables. ``--plot`` draws the grouped bar chart of the
papers (one group per network plus the geomean, one bar per variant; the speedups, or the TFLOP/s with
``--metric tflops``), labelled by network name and options and by variant, the value on each bar. Layers whose
rows ran a dense
fallback (``fallback`` column) are marked ``*`` in both tables (a network's cell when any of its layers did)
and hatched in the plot: those speedups are the dense kernel's on pruned weights, not the pattern's kernel's.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from stcsim.harness import units
from stcsim.harness.results import LAYER
from stcsim.sparsity import get

METRIC = "gpu_sim_cycle"
METRICS = ("cycles", "kernel-cycles", "time", "tflops")
"""What ``--metric`` compares (module docstring)."""
_COST = {"cycles": METRIC, "kernel-cycles": "kernel_cycles", "time": "time_us", "tflops": "time_us"}
"""The per-launch cost whose ratio is the speedup, per metric."""
UNIT_TEXT = {"cycles": "cycles", "kernel-cycles": "kernel cycles", "time": "us", "tflops": "TFLOP/s"}
VIEWS = ("both", "network", "layer")
_YAML_PATH = re.compile(r"(?:[^/+]*/)*([^/+]+)\.ya?ml")
REQUIRED_COLUMNS = ("row_type", "network", "batch", "layer_index", "layer", "variant", "pattern", "config",
                    "m", "n", "k", "repeat", METRIC)
GEOMEAN = "GeoMean"
FALLBACK_MARK = "*"


@dataclass(frozen=True)
class Comparison:
    """Speedups over `baseline`: per network (rows, with the geomean last) and per layer, columns = variants;
    notes name the networks a variant shares only part of with the baseline; `network_fallbacks` and
    `layer_fallbacks` (same shapes as `networks` and `layers`) are True where a layer of that cell ran a dense
    fallback; `fallbacks`: (variant, its layers that fell back, its layers) of each variant with any."""

    baseline: str
    variants: tuple[str, ...]
    networks: pd.DataFrame
    layers: pd.DataFrame
    notes: tuple[str, ...] = ()
    network_fallbacks: pd.DataFrame | None = None
    layer_fallbacks: pd.DataFrame | None = None
    fallbacks: tuple[tuple[str, int, int], ...] = ()
    metric: str = "cycles"
    network_values: pd.DataFrame | None = None
    layer_values: pd.DataFrame | None = None
    """The metric itself per network (over each variant's own layers) and per launch of each layer."""


def load_results(paths: Sequence[str | Path]) -> pd.DataFrame:
    """The rows of several network-run CSVs (FileNotFoundError / ValueError naming a bad file)."""
    frames = []
    for path in paths:
        frame = pd.read_csv(path)
        missing = set(REQUIRED_COLUMNS) - set(frame.columns)
        if missing:
            lacks = ", ".join(sorted(missing))
            raise ValueError(f"{path} is not a network-run CSV with cycles: it lacks {lacks}")
        frames.append(frame)
    joined = pd.concat(frames, ignore_index=True)
    return joined.drop_duplicates(subset=["row_type", "network", "batch", "layer", "variant"], keep="last")


def resolve_baseline(frame: pd.DataFrame, baseline: str) -> str:
    """The variant label `baseline` names: a label itself, or ``PATTERN/CONFIG`` (pattern spec or family
    name); default the first variant. ValueError when it names none, or several (listing them)."""
    variants = list(dict.fromkeys(frame["variant"]))
    if not baseline:
        return variants[0]
    if baseline in variants:
        return baseline
    pattern, sep, config = baseline.partition("/")
    if sep:
        try:
            spec = get(pattern).spec()
        except ValueError:
            spec = pattern
        rows = frame[(frame["config"] == config) & frame["pattern"].isin([pattern, spec])]
        found = list(dict.fromkeys(rows["variant"]))
        if len(found) == 1:
            return found[0]
        if found:
            raise ValueError(f"--baseline {baseline} matches several variants; name one: {', '.join(found)}")
    raise ValueError(f"--baseline {baseline!r} names no variant; the files hold: {', '.join(variants)}")


def _network_speedups(weighted: pd.DataFrame, base: str) -> tuple[pd.DataFrame, list[str]]:
    """Per (network, batch): the baseline's cycles x repeat summed over the layers both runs have, over the
    variant's; and a note for every pair where one run has layers the other lacks."""
    rows, notes = {}, []
    for key, group in weighted.groupby(level=["network", "batch"], sort=False):
        reference = group[base]
        row = {}
        for variant in group.columns:
            both = reference.notna() & group[variant].notna()
            row[variant] = reference[both].sum() / group[variant][both].sum() if both.any() else np.nan
            have = max(int(reference.notna().sum()), int(group[variant].notna().sum()))
            if both.any() and both.sum() < have:
                notes.append(f"{key[0]} {variant}: {int(both.sum())} of {have} layers")
        rows[key] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index = pd.MultiIndex.from_tuples(table.index, names=["network", "batch"])
    return table, notes


def fell_back(rows: pd.DataFrame) -> pd.Series:
    """Per row, whether it ran a dense fallback (the ``fallback`` column as the CSV writes it; False when the
    file has no such column)."""
    if "fallback" not in rows:
        return pd.Series(False, index=rows.index)
    return rows["fallback"].map(lambda v: str(v).strip().lower() in ("true", "1", "1.0"))


def _fallback_marks(layers: pd.DataFrame, index: list[str], per_layer: pd.DataFrame,
                    networks: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple[str, int, int]]]:
    """Fallback marks shaped like the per-layer and per-network tables; (variant, fallbacks, layers) of
    every variant with any."""
    flags = layers.assign(fell=fell_back(layers).astype(float)).pivot_table(
        index=index, columns="variant", values="fell", aggfunc="max", sort=True)
    by_layer = flags.reindex(index=per_layer.index, columns=per_layer.columns).fillna(0.0) > 0
    by_network = by_layer.groupby(level=["network", "batch"], sort=False).any()
    by_network = by_network.reindex(index=networks.index, fill_value=False)
    by_network.loc[(GEOMEAN, ""), :] = by_layer.any().to_numpy()
    counts = []
    for variant in per_layer.columns:
        rows = layers[layers["variant"] == variant]
        count = int(fell_back(rows).sum())
        if count:
            counts.append((str(variant), count, len(rows)))
    return by_layer.astype(bool), by_network.astype(bool), counts


def _with_cost(layers: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The layer rows with ``cost`` (per launch: cycles, kernel cycles or microseconds), ``weighted`` (x
    repeat) and ``flops`` (2 x M x N x K x launch_batch x repeat)."""
    if metric not in METRICS:
        raise ValueError(f"--metric {metric!r}: choose one of {', '.join(METRICS)}")
    column = _COST[metric]
    if column == "time_us":
        clocks = layers["config"].map(lambda config: units.clock_mhz(str(config)))
        cost = layers[METRIC].astype(float) / clocks
    elif column not in layers:
        raise ValueError(f"--metric {metric}: the files have no {column} column")
    else:
        cost = layers[column].astype(float)
    per_launch = layers["launch_batch"].fillna(1) if "launch_batch" in layers else 1  # GEMMs per launch
    flops = 2.0 * layers["m"] * layers["n"] * layers["k"] * per_launch * layers["repeat"]
    return layers.assign(cost=cost, weighted=cost * layers["repeat"], flops=flops.astype(float))


def _values(layers: pd.DataFrame, index: list[str], variants: list[str], metric: str,
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The metric per network (each variant's own layers) and per launch of each layer."""
    per_launch = layers.assign(value=layers["cost"] if metric != "tflops"
                               else layers["flops"] / layers["repeat"] / layers["cost"] / 1e6)
    by_layer = per_launch.pivot_table(index=index, columns="variant", values="value", sort=True)
    sums = layers.groupby(["network", "batch", "variant"], sort=False)[["weighted", "flops"]].sum()
    value = sums["weighted"] if metric != "tflops" else sums["flops"] / sums["weighted"] / 1e6
    by_network = value.unstack("variant")
    return by_network.reindex(columns=variants), by_layer.reindex(columns=variants)


def compare(frame: pd.DataFrame, baseline: str = "", metric: str = "cycles") -> Comparison:
    """Per-network and per-layer speedups over the baseline in ``metric`` (module docstring)."""
    base = resolve_baseline(frame, baseline)
    variants = list(dict.fromkeys(frame["variant"]))
    layers = frame[frame["row_type"] == LAYER].copy()
    for name in ("m", "n", "k", "layer_index", "batch"):
        layers[name] = layers[name].astype(int)
    layers = _with_cost(layers, metric)
    index = ["network", "batch", "layer_index", "layer", "m", "n", "k"]
    cycles = layers.pivot_table(index=index, columns="variant", values="cost", sort=True)
    per_layer = cycles.reindex(columns=variants).rdiv(cycles[base], axis=0)
    weighted = layers.pivot_table(index=index, columns="variant", values="weighted", sort=True)
    networks, notes = _network_speedups(weighted.reindex(columns=variants), base)
    networks.loc[(GEOMEAN, ""), :] = [np.exp(np.log(networks[v].dropna()).mean()) for v in variants]
    by_layer, by_network, fallbacks = _fallback_marks(layers, index, per_layer, networks)
    network_values, layer_values = _values(layers, index, variants, metric)
    return Comparison(base, tuple(variants), networks, per_layer, tuple(notes), by_network, by_layer,
                      tuple(fallbacks), metric, network_values.reindex(index=networks.index[:-1]),
                      layer_values.reindex(index=per_layer.index))


def _number(value: float, metric: str) -> str:
    """A metric value as a table cell: cycles and values from 1000 up as integers, others to 4 significant
    digits."""
    if value != value:
        return "-"
    return f"{value:,.0f}" if metric in ("cycles", "kernel-cycles") or abs(value) >= 1000 else f"{value:.4g}"


def _text(table: pd.DataFrame, index_names: Sequence[str], marks: pd.DataFrame | None = None,
          metric: str = "") -> str:
    labels = [" ".join(str(x) for x in (key if isinstance(key, tuple) else (key,)) if str(x) != "")
              for key in table.index]
    columns = [str(c) for c in table.columns]
    marked = marks.to_numpy(dtype=bool) if marks is not None else np.zeros(table.shape, dtype=bool)
    shown = (lambda v: _number(v, metric)) if metric else (lambda v: f"{v:.2f}" if v == v else "-")
    cells = [[shown(v) + (FALLBACK_MARK if m else "") for v, m in zip(row, flags, strict=True)]
             for row, flags in zip(table.to_numpy(dtype=float), marked, strict=True)]
    first = max([len(" ".join(index_names)), *map(len, labels)])
    widths = [max(len(c), 5) for c in columns]
    lines = [" ".join(index_names).ljust(first) + "  " + "  ".join(c.rjust(w) for c, w in zip(columns, widths,
                                                                                             strict=True))]
    lines += [label.ljust(first) + "  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True))
              for label, row in zip(labels, cells, strict=True)]
    return "\n".join(lines)


_HOW = {"cycles": f"{METRIC} x repeat", "kernel-cycles": "kernel_cycles x repeat",
        "time": "us at each config's clock x repeat",
        "tflops": "2 x MACs over the time at each config's clock"}


def format_comparison(c: Comparison, view: str = "both") -> str:
    """The tables as text: per network (the metric, then the speedups with the geomean), then per layer (per
    launch); ``view`` keeps only the network or the layer tables. Dense fallbacks marked."""
    if view not in VIEWS:
        raise ValueError(f"--view {view!r}: choose one of {', '.join(VIEWS)}")
    notes = ["networks compared over the layers both runs have: " + "; ".join(c.notes)] if c.notes else []
    if c.fallbacks:
        counts = "; ".join(f"{variant}: {n} of {total} layers" for variant, n, total in c.fallbacks)
        notes.append(f"{FALLBACK_MARK} dense fallback: the pattern's kernel did not run these layers, the "
                     f"dense kernel did, on the pruned weights ({counts})")
    unit, how = UNIT_TEXT[c.metric], _HOW[c.metric]
    layer_index = ["network", "batch", "#", "layer", "M", "N", "K"]
    parts = []
    if view in ("both", "network"):
        if c.network_values is not None:
            parts += [f"{unit} per network ({how}, summed over each variant's layers):",
                      _text(c.network_values, ["network", "batch"], c.network_fallbacks.iloc[:-1],
                            c.metric)]
        parts += [f"speedup over {c.baseline} ({how} summed over each network's layers; geomean over "
                  "networks):", _text(c.networks, ["network", "batch"], c.network_fallbacks)]
    parts += notes
    if view in ("both", "layer"):
        if c.layer_values is not None:
            parts += [f"{unit} per launch of each layer:",
                      _text(c.layer_values, layer_index, c.layer_fallbacks, c.metric)]
        parts += [f"per-layer speedup over {c.baseline} ({c.metric}):",
                  _text(c.layers, layer_index, c.layer_fallbacks)]
    return "\n\n".join(parts)


def readable_label(text: str) -> str:
    """A variant label for a plot: a config given as a YAML path shortened to the file's name without the
    suffix (``dense/configs/my.yaml+stc`` -> ``dense/my+stc``)."""
    label = str(text)
    if ".yaml" not in label and ".yml" not in label:
        return label
    head, _, config = label.partition("/")
    return head + "/" + _YAML_PATH.sub(r"\1", config)


def _network_label(key: object) -> str:
    name, batch = (key if isinstance(key, tuple) else (key, ""))[:2]
    base, _, options = str(name).partition(":")
    label = "\n".join([base, *filter(None, options.split(","))])
    return label if str(batch) in ("", "1") else f"{label}\n(batch {batch})"


def plot(c: Comparison, path: str | Path) -> Path:
    """The grouped bar chart of ``c`` (module docstring) to a PNG: networks by name and options, variants by
    readable label, the legend beside the bars, each bar's value on it, dense fallbacks hatched."""
    from stcsim.harness.plots import grouped_bars

    tflops = c.metric == "tflops" and c.network_values is not None
    table = (c.network_values if tflops else c.networks).copy()
    table.index = [_network_label(key) for key in table.index]
    table.columns = [readable_label(v) for v in table.columns]
    hatched = [readable_label(variant) for variant, _, _ in c.fallbacks]
    ylabel = "TFLOP/s" if tflops else f"speedup over {readable_label(c.baseline)} ({c.metric})"
    return grouped_bars(table, ylabel, path, hatched=hatched, value_labels=True, legend_outside=True)


def main(argv: list[str] | None = None) -> int:
    """CLI: python -m stcsim.harness.compare A.csv [B.csv ...] [--baseline B] [--plot FILE.png]."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="network-run result files (results.csv)")
    ap.add_argument("--baseline", default="", help="variant label or PATTERN/CONFIG (default: the first)")
    ap.add_argument("--plot", default="", help="also draw the grouped bar chart to this PNG")
    ap.add_argument("--metric", choices=METRICS, default="cycles",
                    help="what to compare: cycles (default), kernel-cycles (no launch overhead), time (us at "
                         "each config's clock) or tflops")
    ap.add_argument("--view", choices=VIEWS, default="both", help="print the network tables, the per-layer "
                    "tables, or both (default)")
    a = ap.parse_args(argv)
    try:
        result = compare(load_results(a.csv), a.baseline, a.metric)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(format_comparison(result, a.view))
    if a.plot:
        plot(result, a.plot)
        print(f"plot: {a.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

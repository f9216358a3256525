"""`invoke compare A.csv B.csv ...`: speedups of network runs over a baseline variant, per layer and network.

The result files are joined (a variant is a ``variant`` label of the network-run CSV). The speedup of a
variant is the baseline's simulated cycles (``gpu_sim_cycle``) over the variant's, per layer (rows matched by
network, batch and layer) and per network (cycles x repeat summed over the layers both runs have: a note
names any network where that is not all of the baseline's); the geometric mean runs over the networks both
have. Cycles, not seconds: compare variants on GPU
configs with the same clock, or read the speedups as per-cycle ones. ``--plot`` draws the grouped bar chart
of the papers (one group per network plus the geomean, one bar per variant). Layers whose rows ran a dense
fallback (``fallback`` column) are marked ``*`` in both tables (a network's cell when any of its layers did)
and hatched in the plot: those speedups are the dense kernel's on pruned weights, not the pattern's kernel's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from stcsim.harness.results import LAYER
from stcsim.sparsity import get

METRIC = "gpu_sim_cycle"
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


def compare(frame: pd.DataFrame, baseline: str = "") -> Comparison:
    """Per-network and per-layer speedups over the baseline (module docstring)."""
    base = resolve_baseline(frame, baseline)
    variants = list(dict.fromkeys(frame["variant"]))
    layers = frame[frame["row_type"] == LAYER].assign(weighted=lambda f: f[METRIC] * f["repeat"])
    for name in ("m", "n", "k", "layer_index", "batch"):
        layers[name] = layers[name].astype(int)
    index = ["network", "batch", "layer_index", "layer", "m", "n", "k"]
    cycles = layers.pivot_table(index=index, columns="variant", values=METRIC, sort=True)
    per_layer = cycles.reindex(columns=variants).rdiv(cycles[base], axis=0)
    weighted = layers.pivot_table(index=index, columns="variant", values="weighted", sort=True)
    networks, notes = _network_speedups(weighted.reindex(columns=variants), base)
    networks.loc[(GEOMEAN, ""), :] = [np.exp(np.log(networks[v].dropna()).mean()) for v in variants]
    by_layer, by_network, fallbacks = _fallback_marks(layers, index, per_layer, networks)
    return Comparison(base, tuple(variants), networks, per_layer, tuple(notes), by_network, by_layer,
                      tuple(fallbacks))


def _text(table: pd.DataFrame, index_names: Sequence[str], marks: pd.DataFrame | None = None) -> str:
    labels = [" ".join(str(x) for x in (key if isinstance(key, tuple) else (key,)) if str(x) != "")
              for key in table.index]
    columns = [str(c) for c in table.columns]
    marked = marks.to_numpy(dtype=bool) if marks is not None else np.zeros(table.shape, dtype=bool)
    cells = [[(f"{v:.2f}" if v == v else "-") + (FALLBACK_MARK if m else "") for v, m in zip(row, flags,
                                                                                          strict=True)]
             for row, flags in zip(table.to_numpy(dtype=float), marked, strict=True)]
    first = max([len(" ".join(index_names)), *map(len, labels)])
    widths = [max(len(c), 5) for c in columns]
    lines = [" ".join(index_names).ljust(first) + "  " + "  ".join(c.rjust(w) for c, w in zip(columns, widths,
                                                                                             strict=True))]
    lines += [label.ljust(first) + "  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True))
              for label, row in zip(labels, cells, strict=True)]
    return "\n".join(lines)


def format_comparison(c: Comparison) -> str:
    """Both tables as text: per network with the geomean, then per layer; dense fallbacks marked."""
    notes = ["networks compared over the layers both runs have: " + "; ".join(c.notes)] if c.notes else []
    if c.fallbacks:
        counts = "; ".join(f"{variant}: {n} of {total} layers" for variant, n, total in c.fallbacks)
        notes.append(f"{FALLBACK_MARK} dense fallback: the pattern's kernel did not run these layers, the "
                     f"dense kernel did, on the pruned weights ({counts})")
    return "\n\n".join([
        f"speedup over {c.baseline} ({METRIC} x repeat summed over each network's layers; geomean over "
        "networks):",
        _text(c.networks, ["network", "batch"], c.network_fallbacks),
        *notes,
        f"per-layer speedup over {c.baseline}:",
        _text(c.layers, ["network", "batch", "#", "layer", "M", "N", "K"], c.layer_fallbacks),
    ])


def main(argv: list[str] | None = None) -> int:
    """CLI: python -m stcsim.harness.compare A.csv [B.csv ...] [--baseline B] [--plot FILE.png]."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="network-run result files (results.csv)")
    ap.add_argument("--baseline", default="", help="variant label or PATTERN/CONFIG (default: the first)")
    ap.add_argument("--plot", default="", help="also draw the grouped bar chart to this PNG")
    a = ap.parse_args(argv)
    try:
        result = compare(load_results(a.csv), a.baseline)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(format_comparison(result))
    if a.plot:
        from stcsim.harness.plots import grouped_bars

        hatched = [variant for variant, _, _ in result.fallbacks]
        grouped_bars(result.networks, f"speedup over {result.baseline}", a.plot, hatched=hatched)
        print(f"plot: {a.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

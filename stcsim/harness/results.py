"""The results file of network runs: a tidy CSV that is also the cache, rewritten atomically after each row.

One row per (network, batch, layer, variant) (``row_type`` = ``layer``) and one network total per (network,
batch, variant) (``row_type`` = ``total``) once all its planned layers have rows. A row is reused when a job
with the same key is planned again; a job with the same identity but another key (an edited config, a
recompiled kernel, a rebuilt engine) replaces it; rows of other identities (other sweeps into the same file)
stay. Every write replaces the whole file through a temporary file and a rename, so a reader (or a run
killed at any point) sees the file before or after a row, never half a row. Rows are sorted (network, batch,
variant, layer index), so the file does not depend on the order in which parallel jobs finish.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from stcsim.harness.files import write_csv_atomic
from stcsim.sim.engine import stat_info

IDENTITY = ("network", "batch", "layer", "variant")
GROUP = ("network", "batch", "variant")
TOTAL = "total"
LAYER = "layer"
COLUMN_ORDER = (
    "row_type", "network", "batch", "layer_index", "layer", "layers", "kind", "variant", "pattern",
    "sparsity", "config", "kernel_selector", "m", "n", "k", "repeat", "macs", "group_layers", "prune_action",
    "prune_reason", "run_m", "run_k", "density", "run_pattern", "kernel", "fallback", "fallback_reason",
    "check", "rel_error", "tolerance", "check_ok", "host_seconds", "launch_seconds", "weights",
    "engine_version", "config_hash", "kernel_hash", "key",
)
"""The columns before the launch stats, in this order (other columns follow, sorted, then the stats)."""
HOST_TIME_COLUMNS = ("host_seconds", "launch_seconds")
"""The only columns that differ between two runs of the same plan."""
_RATIO = re.compile(r"^(\w+) / (\w+)$")
SUMMED_VALUES = ("gpu_sim_cycle", "kernel_cycles")
"""Value-kind stats that add up over layers run one after another (the others are per launch)."""


def _total_rule() -> tuple[list[str], dict[str, tuple[str, str]]]:
    """Stats summed (x repeat) in a total row, and formula stats recomputed as a ratio of summed ones."""
    summed, ratios = [], {}
    for s in stat_info():
        if s.kind == "counter" or s.name in SUMMED_VALUES:
            summed.append(s.name)
        elif s.kind == "formula" and (m := _RATIO.match(s.description)):
            ratios[s.name] = (m.group(1), m.group(2))
    return summed, ratios


def total_row(layers: pd.DataFrame) -> dict[str, object]:
    """The network total of one (network, batch, variant): stats that add up are summed weighted by each
    row's repeat count; ratio formulas (``gpu_ipc`` = insn / cycle, ...) are recomputed from the sums; per
    launch values (grid, occupancy) are left empty."""
    first = layers.iloc[0]
    repeat = layers["repeat"].astype(float)
    row: dict[str, object] = {name: first[name] for name in (*GROUP, "pattern", "sparsity", "config",
                                                               "kernel_selector") if name in layers}
    kernels = sorted(set(layers["kernel"]))
    row.update({
        "row_type": TOTAL, "layer": "(network total)", "layer_index": len(layers),
        "repeat": int(repeat.sum()), "macs": int(layers["macs"].sum()), "group_layers": len(layers),
        "kernel": " ".join(kernels), "fallback": bool(layers["fallback"].astype(bool).any()),
        "fallback_reason": f"{int(layers['fallback'].astype(bool).sum())} of {len(layers)} layers",
        "density": float(np.average(layers["density"], weights=layers["macs"])),
        "check_ok": bool(layers["check_ok"].astype(bool).all()),
        "host_seconds": float(layers["host_seconds"].sum()),
        "launch_seconds": float(layers["launch_seconds"].sum()),
    })
    summed, ratios = _total_rule()
    for name in summed:
        if name in layers and layers[name].notna().all():
            row[name] = float((layers[name].astype(float) * repeat).sum())
    for name, (num, den) in ratios.items():
        if name in layers and row.get(num) is not None and row.get(den):
            row[name] = float(row[num]) / float(row[den])
    return row


def _float_text(value: float) -> str:
    """A float as the CSV shows it: integral values without '.0', others exactly (shortest round trip), so a
    row written from a fresh result and one read back from the file print the same."""
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


class ResultStore:
    """The rows of one results CSV, by identity (module docstring)."""

    def __init__(self, path: str | Path) -> None:
        """Open `path` (its rows are the cache when it exists)."""
        self.path = Path(path)
        self._rows: dict[tuple, dict[str, object]] = {}
        if self.path.exists():
            frame = pd.read_csv(self.path, keep_default_na=True)
            for record in frame[frame["row_type"] == LAYER].to_dict("records"):
                self._rows[self._identity(record)] = {k: v for k, v in record.items() if not _missing(v)}

    @staticmethod
    def _identity(row: dict[str, object]) -> tuple:
        return tuple(str(row[name]) for name in IDENTITY)

    def cached(self, identity: Iterable[object], key: str) -> dict[str, object] | None:
        """The stored row of this identity if it has this key (None when absent or stale)."""
        row = self._rows.get(tuple(str(x) for x in identity))
        return row if row is not None and row.get("key") == key else None

    def discard(self, identities: Iterable[Iterable[object]]) -> None:
        """Drop the rows of these identities (stale rows a re-run will replace), so that no total mixes them
        with new rows if the run stops before it replaces them."""
        for identity in identities:
            self._rows.pop(tuple(str(x) for x in identity), None)

    def by_key(self, key: str) -> dict[str, object] | None:
        """A stored row with this key under any identity (the same computation), or None."""
        return next((row for row in self._rows.values() if row.get("key") == key), None)

    def put(self, row: dict[str, object]) -> None:
        """Store a layer row, replacing the row of the same identity (the file is written by `write`)."""
        self._rows[self._identity(row)] = row

    def add(self, row: dict[str, object]) -> None:
        """`put` the row and rewrite the file."""
        self.put(row)
        self.write()

    def frame(self) -> pd.DataFrame:
        """Layer rows and the totals of complete groups, sorted, stats columns in registry order."""
        if not self._rows:
            return pd.DataFrame(columns=list(COLUMN_ORDER))
        layers = pd.DataFrame(list(self._rows.values()))
        layers = layers.sort_values([*GROUP, "layer_index"], kind="stable")
        parts = []
        for _, group in layers.groupby(list(GROUP), sort=True):
            parts.append(group)
            if len(group) == int(group["group_layers"].iloc[0]):
                parts.append(pd.DataFrame([total_row(group)]))
        frame = pd.concat(parts, ignore_index=True)
        stats = [s.name for s in stat_info() if s.name in frame.columns]
        first = [c for c in COLUMN_ORDER if c in frame.columns]
        others = sorted(set(frame.columns) - set(stats) - set(first))
        return frame[first + others + stats]

    def write(self) -> None:
        """Replace the file atomically with the current rows."""
        write_csv_atomic(self.frame(), self.path, float_format=_float_text)


def _missing(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)

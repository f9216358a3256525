"""The results file of network runs: a tidy CSV that is also the cache, rewritten atomically after each row.

One row per (network, batch, layer, variant) (``row_type`` = ``layer``) and one network total per (network,
batch, variant) (``row_type`` = ``total``) once all its planned layers have rows. A row is reused when a job
with the same key is planned again; a job with the same identity but another key (an edited config, a
recompiled kernel, a rebuilt engine) replaces it; rows of other identities (other sweeps into the same file)
stay. Every write replaces the whole file through a temporary file and a rename, so a reader (or a run
killed at any point) sees the file before or after a row, never half a row. Rows are sorted (network, batch,
variant, layer index), so the file does not depend on the order in which parallel jobs finish.

One run at a time owns a results file: `ResultStore` holds ``results.csv.lock`` (pid, host) while it is open,
and refuses (`InUseError`) a file another running process holds; a lock left by a killed run is taken over. On
opening, every row of the file is checked: a line that is not a result row (garbage, a cut row, a second
header, a duplicate) is a `ResultsFileError` naming the file and line, never rows silently duplicated or
dropped; ``python -m stcsim.harness.results --repair FILE`` keeps the valid rows and backs the file up.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import re
import shutil
import sys
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from stcsim.harness.files import FileLock, FileUseError, InUseError, write_csv_atomic
from stcsim.sim.engine import stat_info

__all__ = ["FileUseError", "InUseError", "ResultStore", "ResultsFileError", "repair", "total_row"]

IDENTITY = ("network", "batch", "layer", "variant")
GROUP = ("network", "batch", "variant")
TOTAL = "total"
LAYER = "layer"
COLUMN_ORDER = (
    "row_type", "network", "batch", "layer_index", "layer", "layers", "kind", "variant", "pattern",
    "sparsity", "config", "kernel_selector", "m", "n", "k", "repeat", "macs", "launch", "launch_batch",
    "launch_note", "group_layers", "prune_action",
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
    row's repeat count (its launches: a batched row's stats are one launch of ``launch_batch`` GEMMs); ratio
    formulas (``gpu_ipc`` = insn / cycle, ...) are recomputed from the sums; per
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


class ResultsFileError(FileUseError):
    """A results file that has a line which is not a result row; the message names the file and the line."""


REQUIRED_COLUMNS = ("row_type", *IDENTITY, "layer_index", "group_layers", "key")
"""Columns every results file has (the ones that identify and group its rows)."""
INTEGER_COLUMNS = ("layer_index", "group_layers", "repeat")
BOOLEAN_COLUMNS = ("fallback", "check_ok")
NUMBER_COLUMNS = ("macs", "density", "host_seconds", "launch_seconds")
_INTEGER = re.compile(r"^[+-]?\d+$")


@dataclass
class _Lines:
    """A results file read as CSV: its header, its valid layer rows (the line each starts on, its fields)
    and every bad line with what is wrong with it."""

    header: list[str] = field(default_factory=list)
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    bad: list[tuple[int, str]] = field(default_factory=list)


def _number(text: str) -> float | None:
    """`text` as a number, or None."""
    try:
        return float(text)
    except ValueError:
        return None


def _row_problem(values: dict[str, str], summed: Sequence[str]) -> str | None:
    """What makes a layer row unusable, or None."""
    for name in REQUIRED_COLUMNS[1:]:
        if not values[name]:
            return f"its {name} is empty"
    if not _INTEGER.match(values["batch"]):
        return f"batch {values['batch']!r} is not an integer"
    for name in INTEGER_COLUMNS:
        number = _number(values.get(name, "0"))
        if number is None or not number.is_integer():
            return f"{name} {values[name]!r} is not an integer"
    for name in BOOLEAN_COLUMNS:
        if name in values and values[name] not in ("True", "False"):
            return f"{name} {values[name]!r} is neither True nor False"
    for name in (*NUMBER_COLUMNS, *summed):
        if values.get(name) and _number(values[name]) is None:
            return f"{name} {values[name]!r} is not a number"
    return None


def _read_lines(path: Path, data: bytes) -> _Lines:
    """Check every line of a results file (the CSV `data` read from `path`); a header without the columns of
    a results file is a ResultsFileError at once (nothing of the file is usable)."""
    lines = _Lines()
    text = data.decode("utf-8", "surrogateescape")
    if not text.strip():
        return lines
    reader = csv.reader(io.StringIO(text, newline=""))
    summed = _total_rule()[0]
    first_of: dict[tuple[str, ...], int] = {}
    end = 0
    while True:
        start = end + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as err:
            if reader.line_num <= end:
                lines.bad.append((start, f"not CSV ({err})"))
                break
            end = reader.line_num
            lines.bad.append((start, f"not CSV ({err})"))
            continue
        end = reader.line_num
        if not fields:
            continue  # a blank line holds no row
        if not lines.header:
            lines.header = fields
            missing = [c for c in REQUIRED_COLUMNS if c not in fields]
            if missing or len(set(fields)) != len(fields):
                why = f"lacks the columns {', '.join(missing)}" if missing else "has a column twice"
                raise ResultsFileError(f"{path}:{start}: not the header of a results file: it {why}")
            continue
        if any("\udc80" <= c <= "\udcff" for f in fields for c in f):
            lines.bad.append((start, "not UTF-8 text"))
            continue
        if len(fields) != len(lines.header):
            lines.bad.append((start, f"{len(fields)} fields where the header has {len(lines.header)}"))
            continue
        values = dict(zip(lines.header, fields, strict=True))
        if values["row_type"] == TOTAL:
            continue  # totals are recomputed from the layer rows
        if values["row_type"] != LAYER:
            lines.bad.append((start, f"row_type {values['row_type']!r} is neither {LAYER!r} nor {TOTAL!r}"))
            continue
        problem = _row_problem(values, summed)
        if problem is None:
            identity = tuple(values[name] for name in IDENTITY)
            if identity in first_of:
                problem = f"a second row of {'/'.join(identity)} (the first is at line {first_of[identity]})"
            else:
                first_of[identity] = start
        if problem is not None:
            lines.bad.append((start, problem))
            continue
        lines.rows.append((start, fields))
    return lines


def _frame_of(lines: _Lines) -> pd.DataFrame:
    """The valid rows as pandas reads them (the same types as reading the whole file when all are valid)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(lines.header)
    writer.writerows(fields for _, fields in lines.rows)
    out.seek(0)
    return pd.read_csv(out, keep_default_na=True)


def _backup_name(path: Path) -> Path:
    """A new file next to `path` for its damaged original: ``results.csv.bad-20250101-120000``."""
    stem = f"{path.name}.bad-{time.strftime('%Y%m%d-%H%M%S')}"
    backup, n = path.with_name(stem), 1
    while backup.exists():
        n += 1
        backup = path.with_name(f"{stem}-{n}")
    return backup


class ResultStore:
    """The rows of one results CSV, by identity (module docstring).

    Opening it takes the file's lock (``results.csv.lock``) for this process until `close` (or until the
    store is garbage collected, or the process ends); use it as a context manager to release it early.
    """

    def __init__(self, path: str | Path, repair: bool = False) -> None:
        """Open `path` (its rows are the cache when it exists). Raises FileUseError when its folder is a file
        or cannot be created, InUseError when another running process has the file open, ResultsFileError
        when a line of it is not a result row; with `repair`, such lines are dropped instead, after the file
        is copied to a backup (`repaired` says what was done, also printed on stderr)."""
        self.path = Path(path)
        self.repaired = ""
        self._rows: dict[tuple, dict[str, object]] = {}
        folder = self.path.parent
        if self.path.is_dir():
            raise FileUseError(f"results file {self.path} is a folder")
        if folder.exists() and not folder.is_dir():
            raise FileUseError(f"results folder {folder} is a file, not a folder")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise FileUseError(f"cannot create the results folder {folder}: {err.strerror}") from None
        lock = FileLock(self.path.with_name(self.path.name + ".lock"), str(self.path))
        self._finalizer = weakref.finalize(self, lock.release)
        try:
            self._load(repair)
        except BaseException:
            self.close()
            raise

    def _load(self, repair: bool) -> None:
        """Read the rows of the file, checked (see `__init__`)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as err:
            raise FileUseError(f"cannot read the results file {self.path}: {err.strerror}") from None
        lines = _read_lines(self.path, data)
        if lines.bad and not repair:
            line, why = lines.bad[0]
            more = f" (and {len(lines.bad) - 1} more bad lines)" if len(lines.bad) > 1 else ""
            raise ResultsFileError(
                f"{self.path}:{line}: not a result row: {why}{more}; fix or delete the line, or run "
                f"`python -m stcsim.harness.results --repair {self.path}` (keeps the valid rows, backs the "
                "file up)")
        if not lines.header:
            return
        frame = _frame_of(lines) if lines.bad else pd.read_csv(io.BytesIO(data), keep_default_na=True)
        for record in frame[frame["row_type"] == LAYER].to_dict("records"):
            self._rows[self._identity(record)] = {k: v for k, v in record.items() if not _missing(v)}
        if lines.bad:
            backup = _backup_name(self.path)
            shutil.copy2(self.path, backup)
            self.write()
            shown = ", ".join(str(line) for line, _ in lines.bad[:10])
            shown += ", ..." if len(lines.bad) > 10 else ""
            self.repaired = (f"repaired {self.path}: kept its {len(self._rows)} valid layer rows, dropped "
                             f"{len(lines.bad)} bad lines ({shown}); the original is {backup}")
            print(f"note: {self.repaired}", file=sys.stderr)

    def close(self) -> None:
        """Release the file's lock (the store can still be read; idempotent)."""
        self._finalizer()

    def __enter__(self) -> ResultStore:
        """The store itself; its lock is released on leaving the block."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Release the lock."""
        self.close()

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


def repair(path: str | Path) -> str:
    """Keep the valid rows of the results file `path`, drop its bad lines (the original goes to a backup
    next to it); what was done, or that nothing was wrong."""
    with ResultStore(path, repair=True) as store:
        return store.repaired or f"{store.path}: every row is valid ({len(store._rows)} layer rows)"


def main(argv: list[str] | None = None) -> int:
    """``python -m stcsim.harness.results --repair FILE``: repair a results file. Exit status 0, or 2 with a
    one-line error."""
    ap = argparse.ArgumentParser(prog="python -m stcsim.harness.results", description=repair.__doc__)
    ap.add_argument("--repair", metavar="FILE", required=True, help="results file to repair (results.csv)")
    a = ap.parse_args(argv)
    try:
        print(repair(a.repair))
    except FileUseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

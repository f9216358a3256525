"""The H100's measured L2 slice map: from the device probe's output to the committed CSV and engine table.

``reference`` turns the output of benchmarks/calibration/run_slice_map.sh (slice_map.csv,
histogram_offsets.csv, slice_pairs.csv) into the committed files under results/reference/ (one header of
date, GPU, driver, clock and source; no per-row copies). ``resolve`` reads the slice of every 256-byte
unit of the four measured pages from the committed map: where a unit's reading was ambiguous (no single
match, or its only match at the partial-contention level below 49.5 us: two slices that share something,
not one slice) and its partner unit u ^ 2 (512 bytes away, always on the same slice: 99 % of the units
read so directly) read cleanly, the partner's slice is taken. ``buddies`` reads each slice's buddy from
the slice-pair levels (two units on buddy slices contend partly: 37-39 us where two free slices read 28
and one slice 50-51).
``table`` writes engine/timing/l2_slice_map_h100.inc and l2_slice_buddies_h100.inc, the arrays the
engine's ``l2.slice_map: h100`` looks up; ``--check`` fails when a committed table differs from the CSVs.

    python -m benchmarks.calibration.slice_map_table reference --device-out $OUT
    python -m benchmarks.calibration.slice_map_table table [--check]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "results" / "reference"
MAP_CSV = REFERENCE / "h100_l2_slice_map.csv"
HIST_CSV = REFERENCE / "h100_l2_slice_histogram_offsets.csv"
PAIRS_CSV = REFERENCE / "h100_l2_slice_pairs.csv"
LEVELS_CSV = REFERENCE / "h100_l2_slice_pair_levels.csv"
TABLE = ROOT / "engine" / "timing" / "l2_slice_map_h100.inc"
BUDDY_TABLE = ROOT / "engine" / "timing" / "l2_slice_buddies_h100.inc"
BUDDY_US = (33.0, 45.0)  # two free slices read 28 us, one slice 50-51 us; buddies 37-39 us
PAGES, UNITS, SLICES = 4, 8192, 80
AMBIGUOUS_US = 49.5  # one slice reads 50-51 us (or ~60); partial contention between two slices 37-48 us
META = ("date", "gpu", "driver", "sm_clock_mhz", "max_sm_clock_mhz")


def _header(meta: pd.Series, what: str) -> str:
    return (f"# date: {meta.date}\n# gpu: {meta.gpu}\n# driver: {meta.driver}\n"
            f"# sm clock: {meta.sm_clock_mhz} MHz when queried before the probe (idle), max "
            f"{meta.max_sm_clock_mhz} MHz\n# source: OUT=... bash benchmarks/calibration/run_slice_map.sh "
            f"(benchmarks/calibration/slice_map_probe.py, slice_probe.cu); {what}\n")


def _write(df: pd.DataFrame, path: Path, header: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(header + df.to_csv(index=False, float_format="%.4g"))
    tmp.replace(path)


def reference(device_out: Path) -> None:
    """Writes the committed map, histogram-offset and threshold CSVs from one device run's output."""
    d = pd.read_csv(device_out / "slices" / "slice_map.csv")
    meta = d.iloc[0]
    _write(d[["page", "unit", "slice", "matches", "same_us"]], MAP_CSV, _header(
        meta, "slice of every 256-byte unit of four consecutive 2 MiB pages of one buffer (slice numbers in "
        "order of discovery; matches = representatives above the threshold; same_us = the fastest of those)"))
    h = pd.read_csv(device_out / "slices" / "histogram_offsets.csv")
    _write(h[["offset", "ms", "counts_ok"]], HIST_CSV, _header(
        meta, "histogram_atomic (kernels/atomics.ptx, 4096 bins, n = 1M, 528 x 256 threads) with its bins "
        "at byte offset `offset` of page 0; CUDA-event median of 5 launches"))
    matrix = device_out / "slices" / "pair_matrix.npy"
    if matrix.exists():
        _write(pair_levels(np.load(matrix), resolve()[0]), LEVELS_CSV,
               _header(meta, "median launch time over the unit pairs of each pair of slices (the pair "
                       "matrix of the first units of page 0, pair_matrix.npy; slices as in "
                       "h100_l2_slice_map.csv)"))
    p = pd.read_csv(device_out / "slices" / "slice_pairs.csv")
    _write(p[["kind", "us"]], PAIRS_CSV, _header(
        meta, "pair_red launch times: both groups on one word (same_unit) and on units 0 and 1 (two slices)"))


def pair_levels(matrix: np.ndarray, slices: np.ndarray) -> pd.DataFrame:
    """Median time over every pair of units i < j of the matrix, by the (sorted) pair of their slices.

    Column 0 of the matrix is each batch's first launch (no warm-up launch when it was taken): row 0 stands
    in for it."""
    m = matrix.astype(float)
    m[:, 0] = m[0, :]
    m = np.minimum(m, m.T)
    n = len(m)
    i, j = np.triu_indices(n, 1)
    a, b = np.minimum(slices[i], slices[j]), np.maximum(slices[i], slices[j])
    df = pd.DataFrame({"slice_a": a, "slice_b": b, "us": m[i, j]})
    return (df.groupby(["slice_a", "slice_b"]).us.agg(median_us="median", unit_pairs="size")
            .reset_index())


def buddies(path: Path = LEVELS_CSV) -> np.ndarray:
    """Each slice's buddy: the one other slice it contends with partly (median in BUDDY_US)."""
    d = pd.read_csv(path, comment="#")
    d = d[(d.slice_a != d.slice_b) & d.median_us.between(*BUDDY_US)]
    out = np.full(SLICES, -1, np.int64)
    for a, b in zip(d.slice_a, d.slice_b, strict=True):
        if out[a] >= 0 or out[b] >= 0:
            raise ValueError(f"{path}: slice {a} or {b} has more than one buddy")
        out[a], out[b] = b, a
    if (out < 0).any():
        raise ValueError(f"{path}: slices without a buddy: {np.flatnonzero(out < 0).tolist()}")
    return out


def resolve(path: Path = MAP_CSV) -> np.ndarray:
    """Slice of each unit, shape (pages, units), ambiguous readings taken from their partner unit u ^ 2."""
    d = pd.read_csv(path, comment="#")
    out = np.zeros((PAGES, UNITS), np.int64)
    u = np.arange(UNITS)
    for page in range(PAGES):
        q = d[d.page == page].sort_values("unit")
        if len(q) != UNITS or not (q.unit.to_numpy() == u).all():
            raise ValueError(f"{path}: page {page} does not list units 0-{UNITS - 1}")
        s = q.slice.to_numpy().copy()
        m, same = q.matches.to_numpy(), q.same_us.to_numpy()
        ambiguous = (m >= 2) | ((m == 1) & (same < AMBIGUOUS_US))
        for i in np.flatnonzero((s != s[u ^ 2]) & ((u & 2) == 0)):
            j = i ^ 2
            if ambiguous[i] and not ambiguous[j]:
                s[i] = s[j]
            elif ambiguous[j] and not ambiguous[i]:
                s[j] = s[i]
        out[page] = s
    if out.min() < 0 or out.max() >= SLICES:
        raise ValueError(f"{path}: slice numbers outside 0-{SLICES - 1}")
    return out


def buddy_source(buddy: np.ndarray) -> str:
    """The C++ initializer of the engine's buddy table (generated; see this module)."""
    return ("// Generated by `python -m benchmarks.calibration.slice_map_table table` from\n"
            "// results/reference/h100_l2_slice_pair_levels.csv (silicon): each L2 slice's buddy, the one\n"
            "// slice it contends with partly. Do not edit.\n{"
            + ",".join(str(int(b)) for b in buddy) + "}\n")


def table_source(slices: np.ndarray) -> str:
    """The C++ initializer of the engine's table (generated; see this module)."""
    lines = ["// Generated by `python -m benchmarks.calibration.slice_map_table table` from",
             "// results/reference/h100_l2_slice_map.csv (silicon): the L2 slice of each 256-byte unit",
             "// of four measured 2 MiB pages. Do not edit.", "{"]
    for page in slices:
        lines.append("  {")
        for row in range(0, UNITS, 32):
            lines.append("    " + ",".join(str(int(v)) for v in page[row:row + 32]) + ",")
        lines.append("  },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """reference: device output -> committed CSVs; table: committed map -> engine table (or --check it)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reference")
    r.add_argument("--device-out", type=Path, required=True)
    t = sub.add_parser("table")
    t.add_argument("--check", action="store_true", help="fail if the committed table differs")
    a = ap.parse_args(argv)
    if a.cmd == "reference":
        reference(a.device_out)
        return 0
    files = {TABLE: table_source(resolve()), BUDDY_TABLE: buddy_source(buddies())}
    if a.check:
        stale = [str(f) for f, text in files.items() if not f.exists() or f.read_text() != text]
        if stale:
            print(f"{', '.join(stale)} differ from results/reference; run "
                  "`python -m benchmarks.calibration.slice_map_table table`")
        return 1 if stale else 0
    for f, text in files.items():
        f.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Per-pattern summary of one matrix shape and sparsity: kept fraction, format bytes, compression ratio.

The weights are seeded standard-normal float32; bytes count fp16 values (2 bytes) plus each format's
metadata, and the compression ratio is dense fp16 bytes over format bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stcsim.sparsity import registry
from stcsim.sparsity.base import FP16_BYTES, check_sparsity

DEFAULT_PATTERNS = (
    "dense",
    "unstructured",
    "vw:L=16,K=4",
    "shflbw:V=64",
    "tvw:G=64",
    "tw:G=64",
    "tew:G=64,delta=0.015",
    "nm:N=2,M=4",
    "bw:B=16",
    "channel",
    "extensor:maxL=64",
)
COLUMNS = ("pattern", "kept_fraction", "bytes", "compression_ratio", "note")


def report_rows(
    shape: tuple[int, int], sparsity: float, seed: int = 0, patterns: Sequence[str] = DEFAULT_PATTERNS
) -> list[dict]:
    """One dict per pattern spec: spec, target, kept fraction, bytes, byte breakdown, ratio, note.

    A pattern that cannot reach ``sparsity`` (e.g. 2:4 below 0.5) gives a row with NaN numbers and the
    reason in ``note``; a sparsity outside ``[0, 1)`` or an unknown spec raises ValueError.
    """
    check_sparsity(sparsity)
    weights = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    dense_bytes = weights.size * FP16_BYTES
    rows = []
    for spec in patterns:
        pattern = registry.get(spec)
        row = {"pattern": pattern.spec(), "target_sparsity": sparsity, "dense_bytes": dense_bytes, "note": ""}
        try:
            mask = pattern.prune(weights, sparsity)
        except ValueError as err:
            nan = float("nan")
            row.update(kept_fraction=nan, bytes=nan, compression_ratio=nan, breakdown={}, note=str(err))
        else:
            fmt = pattern.encode(weights, mask)
            nbytes = fmt.nbytes(FP16_BYTES)
            row.update(kept_fraction=float(mask.mean()), bytes=nbytes, compression_ratio=dense_bytes / nbytes)
            row["breakdown"] = fmt.byte_breakdown(FP16_BYTES)
        rows.append(row)
    return rows


def format_table(rows: list[dict]) -> str:
    """Plain-text table of the report rows (columns: pattern, kept fraction, bytes, ratio, note)."""

    def cell(row: dict, col: str) -> str:
        value = row[col]
        if isinstance(value, float) and np.isnan(value):
            return "-"
        if col == "kept_fraction":
            return f"{value:.4f}"
        if col == "compression_ratio":
            return f"{value:.3f}x"
        return str(value)

    table = [list(COLUMNS)] + [[cell(r, c) for c in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)

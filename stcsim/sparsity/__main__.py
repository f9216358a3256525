"""Command line: ``python -m stcsim.sparsity report --shape 512x2304 --sparsity 0.75 [--seed 0]``."""

from __future__ import annotations

import argparse
import sys

from stcsim.sparsity.report import DEFAULT_PATTERNS, format_table, report_rows


def parse_shape(text: str) -> tuple[int, int]:
    """Parse ``MxK`` (e.g. ``512x2304``) into a shape tuple."""
    try:
        rows, cols = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must look like 512x2304, got {text!r}") from None
    if rows < 1 or cols < 1:
        raise argparse.ArgumentTypeError(f"shape dimensions must be >= 1, got {text!r}")
    return rows, cols


def main(argv: list[str] | None = None) -> int:
    """Run the ``report`` command and print the table."""
    parser = argparse.ArgumentParser(prog="python -m stcsim.sparsity", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    report = sub.add_parser("report", help="kept fraction, bytes and compression ratio of every pattern")
    report.add_argument("--shape", type=parse_shape, required=True, help="weight shape MxK, K = reduction")
    report.add_argument("--sparsity", type=float, required=True, help="target sparsity in [0, 1)")
    report.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    report.add_argument("--patterns", nargs="+", default=list(DEFAULT_PATTERNS), help="pattern specs")
    args = parser.parse_args(argv)
    try:
        rows = report_rows(args.shape, args.sparsity, args.seed, args.patterns)
    except ValueError as err:
        parser.error(str(err))
    print(
        f"shape {args.shape[0]}x{args.shape[1]}, target sparsity {args.sparsity}, seed {args.seed}, "
        "fp16 values (2 bytes) + metadata, ratio = dense fp16 bytes / format bytes"
    )
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

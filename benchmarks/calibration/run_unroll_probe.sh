#!/usr/bin/env bash
# One device call (seconds; no kernel runs): the SASS loops of the unroll probe and of every shipped PTX
# file (benchmarks/calibration/unroll_probe.py). Writes $OUT/meta.txt and $OUT/unroll_sass.csv.
set -euo pipefail
source "$(dirname "$0")/device_meta.sh"
ptxas --version | tail -1 >> "$OUT/meta.txt"
python3 -m benchmarks.calibration.unroll_probe emit --out "$OUT/ptx"
python3 -m benchmarks.calibration.unroll_probe sass --ptx "$OUT/ptx" --out "$OUT/unroll_sass.csv"

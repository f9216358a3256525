#!/usr/bin/env bash
# One device call (under a minute on an H100): the global-store probe of benchmarks/calibration/store_probe.py.
# Writes $OUT/meta.txt and $OUT/stores.csv; then, on any machine with the engine:
#   python -m benchmarks.calibration.store_probe simulate --silicon $OUT/stores.csv --out FILE
set -euo pipefail
source "$(dirname "$0")/device_meta.sh"
timeout 200 python3 -m benchmarks.calibration.store_probe run --out "$OUT"
cat "$OUT/stores.csv"

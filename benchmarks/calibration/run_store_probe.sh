#!/usr/bin/env bash
# One device call (under a minute on an H100): the global-store probe of benchmarks/calibration/store_probe.py.
# Writes $OUT/meta.txt and $OUT/stores.csv; then, on any machine with the engine:
#   python -m benchmarks.calibration.store_probe simulate --silicon $OUT/stores.csv --out FILE
set -euo pipefail
OUT=${OUT:-results/gpu}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv | tee "$OUT/meta.txt"
timeout 200 python3 -m benchmarks.calibration.store_probe run --out "$OUT"
cat "$OUT/stores.csv"

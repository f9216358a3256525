#!/usr/bin/env bash
# One device call (about 2-3 min on an H100, most of it building the engine): the clock64 timelines of
# benchmarks/calibration/timeline.py on the GPU. Writes $OUT/meta.txt and $OUT/timeline_gpu.csv; then, on any
# machine: python -m benchmarks.calibration.timeline compare $OUT/timeline_gpu.csv --out timeline.csv
set -euo pipefail
source "$(dirname "$0")/device_meta.sh"
CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
timeout 300 python3 -m benchmarks.calibration.timeline run --out "$OUT"

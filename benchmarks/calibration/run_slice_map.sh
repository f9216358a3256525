#!/usr/bin/env bash
# One device call (about 5-8 min on an H100): the L2 slice map of benchmarks/calibration/slice_map_probe.py.
# Writes $OUT/meta.txt and $OUT/slices/{slice_map,slice_pairs,histogram_offsets}.csv. From the repo root:
#   OUT=/some/dir bash benchmarks/calibration/run_slice_map.sh
set -euo pipefail
source "$(dirname "$0")/device_meta.sh"
timeout 560 python3 -m benchmarks.calibration.slice_map_probe --out "$OUT/slices" 2>&1 | tee "$OUT/slices_stdout.txt"

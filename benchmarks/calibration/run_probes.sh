#!/usr/bin/env bash
# One device call (about 1-2 min on an H100): the silicon probes of benchmarks/calibration/silicon_probes.py
# (atomics, scattered vs streamed L2 reads, wmma.load from global, FMA chains). No engine build needed.
# Writes $OUT/meta.txt and $OUT/probes/{atomics,l2_read,wmma_load,fma}.csv + sass.txt. Run from the repo root:
#   OUT=/some/dir bash benchmarks/calibration/run_probes.sh
set -euo pipefail
source "$(dirname "$0")/device_meta.sh"
timeout 400 python3 -m benchmarks.calibration.silicon_probes --out "$OUT/probes" 2>&1 | tee "$OUT/probes_stdout.txt"

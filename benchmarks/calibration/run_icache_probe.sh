#!/usr/bin/env bash
# One device call (about 1-2 min on an H100): the instruction-fetch probe of
# benchmarks/calibration/icache_probe.py, once without a profiler (code left in L2 by the warm-up launch) and
# once under ncu with its default cache flush before every launch (as the calibration suite is measured).
# Writes $OUT/meta.txt, $OUT/plain/{clocks,order}.csv, $OUT/ncu/{clocks,order,icache}.csv, $OUT/ncu.csv and
# $OUT/sass_64.txt (cuobjdump of the smallest kernel). Run from the repo root:
#   OUT=/some/dir bash benchmarks/calibration/run_icache_probe.sh
set -euo pipefail
source "$(dirname "$0")/device_meta.sh"
python3 -m benchmarks.calibration.icache_probe ptx --n 64 > "$OUT/icache_64.ptx"
ptxas -arch=sm_90 -O3 "$OUT/icache_64.ptx" -o "$OUT/icache_64.cubin" && cuobjdump -sass "$OUT/icache_64.cubin" > "$OUT/sass_64.txt" || true
timeout 200 python3 -m benchmarks.calibration.icache_probe run --out "$OUT/plain"
timeout 300 ncu --clock-control none --metrics gpc__cycles_elapsed.max --csv --log-file "$OUT/ncu.csv" \
  python3 -m benchmarks.calibration.icache_probe run --out "$OUT/ncu" > "$OUT/ncu_stdout.txt" 2>&1 || tail -20 "$OUT/ncu_stdout.txt"
echo "then: python -m benchmarks.calibration.icache_probe collect --dir OUT/ncu --ncu OUT/ncu.csv --meta date=... --meta gpu=... (needs the engine)"
python3 - "$OUT" <<'PY'
import sys, pandas as pd
for mode in ("plain", "ncu"):
    c = pd.read_csv(f"{sys.argv[1]}/{mode}/clocks.csv")
    print(mode); print(c.groupby(["n", "ctas", "threads"])[["pass1", "pass2", "pass4"]].median().to_string())
PY

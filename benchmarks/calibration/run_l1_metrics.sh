#!/usr/bin/env bash
# One device call (about 2-4 min on an H100) for issue 43: what the L1TEX does with the global loads of the
# whole calibration suite (base and tc-styles groups) under Nsight Compute: requests, sectors and tag hits,
# data-stage wavefronts, L2 fills, LSU writeback (calibrate.L1_METRICS, those this ncu knows). Writes
# $OUT/l1_metrics.tgz holding meta.txt, l1_metrics.csv (per case, with measured_cycles), the raw ncu CSV and
# the run's stdout. GROUP (default all): the suite group to measure (base, tc-styles).
set -euo pipefail
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start ))s] $*"; }
W=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$W/meta.txt" 2>&1 || true
nvcc --version | tail -1 >> "$W/meta.txt" 2>&1 || true
CMAKE_BUILD_PARALLEL_LEVEL=16 SKBUILD_CMAKE_DEFINE=STCSIM_PGO=OFF python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
stamp "engine built"
ncu --query-metrics > "$W/ncu_query.txt" 2>&1 || true
METRICS=$(python3 - "$W/ncu_query.txt" <<'PY'
import sys
from stcsim.experiments.calibrate import L1_METRICS, METRICS
known = {line.split()[0] for line in open(sys.argv[1]) if line.strip()}
print(",".join([*METRICS, *(m for m in L1_METRICS if m.split(".")[0] in known)]))
PY
)
echo "metrics: $METRICS"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
DRV=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
timeout "${NCU_TIMEOUT:-400}" ncu --clock-control none --metrics "$METRICS" --csv --log-file "$W/ncu_l1.csv" \
  python3 -m stcsim.experiments.calibrate run-suite --group "${GROUP:-all}" --order "$W/order_l1.csv" > "$W/l1_stdout.txt" 2>&1 \
  || { echo "ncu failed or timed out:"; tail -20 "$W/l1_stdout.txt"; }
stamp "ncu done"
python3 -m stcsim.experiments.calibrate collect --ncu "$W/ncu_l1.csv" --order "$W/order_l1.csv" --out "$W/l1_metrics.csv" \
  --meta "date: $(date -u +%Y-%m-%d)" --meta "gpu: $GPU" --meta "driver: $DRV" \
  --meta "ncu: --clock-control none (L1TEX metrics pass)" || echo "collect failed"
tar -czf "$OUT/l1_metrics.tgz" -C "$W" .
stamp done

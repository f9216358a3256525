#!/usr/bin/env bash
# One device call (about 5-7 min on an H100) for issue 43: the Tensor Core styles of the calibration suite
# (stcsim.experiments.tc_style_cases) under Nsight Compute, twice. Writes under $OUT:
#   meta.txt                        nvidia-smi name, driver, clocks, temperature, power; nvcc version
#   tc_explain.csv                  pass 1: per case measured_cycles (gpc__cycles_elapsed.max of the second
#                                   launch, cold caches), inst_executed, and what explains the time: the
#                                   warp-state stall breakdown (warps stalled per issued instruction, by
#                                   reason), SASS instructions per pipe and memory class, achieved occupancy
#                                   (calibrate.EXPLAIN_METRICS, those this ncu knows)
#   tc_cycles.csv                   pass 2: the cycle metrics alone (run-to-run spread)
#   tc_styles.sass, tc_wgmma.sass   cuobjdump -sass of ptxas -arch=sm_90(a) -O3 of the suite's PTX (what the PTX
#                                   becomes on the H100: SASS per PTX instruction, registers)
#   chain_silicon.csv               benchmarks/calibration/tc_chain.py: the chain's parts, cycles per step
#   library.csv                     benchmarks/gpu/library_baselines.py (issue 44), LIBRARY_BUDGET seconds
#   ncu_*.csv, order_*.csv, *_stdout.txt   the raw material
# ENGINE_SNAPSHOT (optional): a folder holding an engine/ tree to build instead of the working tree's (the
# GPU runs need the package importable, not a particular engine).
set -euo pipefail
KERNEL_ARGS=""  # KERNELS (optional): space-separated kernel names, only their cases are measured
for k in ${KERNELS:-}; do KERNEL_ARGS+=" --kernel $k"; done
source "$(dirname "$0")/device_meta.sh"
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start ))s] $*"; }
if [ -n "${ENGINE_SNAPSHOT:-}" ]; then rm -rf engine && cp -r "$ENGINE_SNAPSHOT/engine" engine; fi
CMAKE_BUILD_PARALLEL_LEVEL=16 SKBUILD_CMAKE_DEFINE=STCSIM_PGO=OFF python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
stamp "engine built"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
DRV=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
CLK=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader | head -1)
BASE=$(python3 -c "from stcsim.experiments.calibrate import METRICS; print(','.join(METRICS))")
ncu --query-metrics > "$OUT/ncu_query.txt" 2>&1 || true
EXPLAIN=$(python3 - "$OUT/ncu_query.txt" <<'PY'
import sys
from stcsim.experiments.calibrate import EXPLAIN_METRICS
known = {line.split()[0] for line in open(sys.argv[1]) if line.strip()}
print(",".join(m for m in EXPLAIN_METRICS if m.split(".")[0] in known))
PY
)
echo "explain metrics: $EXPLAIN"
measure() {  # $1: name, $2: metrics, $3: seconds
  local name=$1 metrics=$2 limit=$3
  timeout "$limit" ncu --clock-control none --metrics "$metrics" --csv --log-file "$OUT/ncu_$name.csv" \
    python3 -m stcsim.experiments.calibrate run-suite --group tc-styles --order "$OUT/order_$name.csv" $KERNEL_ARGS \
    > "$OUT/${name}_stdout.txt" 2>&1 || { echo "ncu $name failed or timed out:"; tail -20 "$OUT/${name}_stdout.txt"; }
  python3 -m stcsim.experiments.calibrate collect --ncu "$OUT/ncu_$name.csv" --order "$OUT/order_$name.csv" \
    --out "$OUT/tc_$name.csv" --meta "date: $(date -u +%Y-%m-%d)" --meta "gpu: $GPU" \
    --meta "driver: $DRV" --meta "max sm clock: $CLK" --meta "ncu: --clock-control none ($name pass)" \
    --meta "metric: measured_cycles = gpc__cycles_elapsed.max (second launch of each case)" \
    || echo "collect of $name failed"
  stamp "ncu $name collected"
}
for mod in tc_styles:sm_90 tc_wgmma:sm_90a; do
  ptxas -arch=${mod#*:} -O3 -v benchmarks/calibration/kernels/${mod%:*}.ptx -o /tmp/${mod%:*}.cubin \
    > "$OUT/${mod%:*}_ptxas.txt" 2>&1 && cuobjdump -sass /tmp/${mod%:*}.cubin > "$OUT/${mod%:*}.sass" \
    || echo "SASS dump of ${mod%:*} failed"
done
timeout 60 python3 -m benchmarks.calibration.tc_chain silicon --out "$OUT/chain_silicon.csv" \
  > "$OUT/chain_stdout.txt" 2>&1 || { echo "tc_chain failed:"; tail -5 "$OUT/chain_stdout.txt"; }
stamp "chain probes done"
measure explain "$BASE${EXPLAIN:+,$EXPLAIN}" "${EXPLAIN_TIMEOUT:-300}"
if [ "${LIBRARY_BUDGET:-0}" -gt 0 ]; then
  timeout $(( LIBRARY_BUDGET + 60 )) python3 -m benchmarks.gpu.library_baselines --out "$OUT/library.csv" \
    --budget "$LIBRARY_BUDGET" > "$OUT/library_stdout.txt" 2>&1 || { echo "library failed:"; tail -5 "$OUT/library_stdout.txt"; }
  stamp "library baselines done"
fi
left=$(( ${BUDGET:-560} - ($(date +%s) - start) ))
if [ "$left" -gt 40 ]; then measure cycles "$BASE" $(( left < ${CYCLES_TIMEOUT:-150} ? left : ${CYCLES_TIMEOUT:-150} )); fi
cat "$OUT/chain_silicon.csv" 2>/dev/null || true
grep -h "failed\|Error" "$OUT"/*_stdout.txt | head -20 || true
python3 - "$OUT/tc_explain.csv" <<'PY' || true
import sys, pandas as pd
d = pd.read_csv(sys.argv[1], comment="#")
cols = [c for c in d.columns if c in ("kernel", "shape", "measured_cycles", "check")]
cols += [c for c in d.columns if "long_scoreboard" in c or "mio_throttle" in c or "math_pipe" in c][:3]
print(d[cols].to_string(index=False))
PY
stamp done

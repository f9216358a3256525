#!/usr/bin/env bash
# One device call (about 6-8 min on an H100): build the engine, measure the calibration suite (GEMMs and the
# kernels of benchmarks/calibration/kernels, stcsim.experiments.calibrate) under Nsight Compute twice, and run the
# silicon microbenchmarks behind the misses (benchmarks/calibration/silicon_memory.py). Writes under $OUT:
#   meta.txt                      nvidia-smi name, driver, clocks, temperature, power; nvcc version
#   calibration_run{1,2}.csv      one row per case: kernel, shape, measured_cycles (gpc__cycles_elapsed.max of
#                                 the second launch, cold caches: ncu flushes before every profiled launch),
#                                 sm_cycles_active_avg, gpu_time_ns, inst_executed (SASS warp instructions)
#   ncu_run{1,2}.csv, order_run{1,2}.csv, ncu_stdout_run{1,2}.txt   the raw material of those
#   silicon_memory/{bandwidth,mlp,sass}.csv                          see silicon_memory.py
#   ncu_empty.csv, silicon.csv    only with OLD_MICRO=1 (empty kernel and the PTX microbenchmarks, already
#                                 committed under results/reference/)
# The first ncu pass may take PASS_TIMEOUT seconds (default 240), silicon_memory 120, the second pass what is
# left of BUDGET seconds (default 450, counted from the start) so that what finished comes back in time.
# Run from the repository root on a machine with an NVIDIA GPU, CuPy, nvcc and ncu:
#   OUT=/some/dir bash benchmarks/calibration/run_on_gpu.sh
set -euo pipefail
source "$(dirname "$0")/device_meta.sh"
PASS_TIMEOUT=${PASS_TIMEOUT:-240}
BUDGET=${BUDGET:-450}
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start ))s] $*"; }
CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
stamp "engine built"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
DRV=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
CLK=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader | head -1)
METRICS=gpc__cycles_elapsed.max,sm__cycles_active.avg,gpu__time_duration.sum,smsp__inst_executed.sum

measure() {  # $1: pass number, $2: seconds it may take
  local run=$1 limit=$2
  if [ "$limit" -lt 30 ]; then echo "no time left for ncu pass $run"; return 0; fi
  timeout "$limit" ncu --clock-control none --metrics "$METRICS" --csv --log-file "$OUT/ncu_run$run.csv" \
    python3 -m stcsim.experiments.calibrate run-suite --order "$OUT/order_run$run.csv" > "$OUT/ncu_stdout_run$run.txt" 2>&1 || {
    echo "ncu pass $run failed or timed out:"; tail -20 "$OUT/ncu_stdout_run$run.txt"; return 0; }
  python3 -m stcsim.experiments.calibrate collect --ncu "$OUT/ncu_run$run.csv" --order "$OUT/order_run$run.csv" \
    --out "$OUT/calibration_run$run.csv" --meta "date: $(date -u +%Y-%m-%d)" --meta "gpu: $GPU" \
    --meta "driver: $DRV" --meta "max sm clock: $CLK" --meta "ncu: --clock-control none (pass $run)" \
    --meta "metric: measured_cycles = gpc__cycles_elapsed.max (second launch of each case)" \
    || echo "collect of pass $run failed"
  stamp "ncu pass $run collected"
}

measure 1 "$PASS_TIMEOUT"
timeout 120 python3 -m benchmarks.calibration.silicon_memory --out "$OUT/silicon_memory" \
  > "$OUT/silicon_memory_stdout.txt" 2>&1 || { echo "silicon_memory failed:"; tail -20 "$OUT/silicon_memory_stdout.txt"; }
stamp "silicon_memory done"
left=$(( BUDGET - ($(date +%s) - start) ))
measure 2 $(( left < PASS_TIMEOUT ? left : PASS_TIMEOUT ))
if [ "${OLD_MICRO:-0}" = 1 ]; then
  ncu --clock-control none --metrics "$METRICS" --csv --log-file "$OUT/ncu_empty.csv" \
    python3 -m benchmarks.calibration.empty_kernel > /dev/null 2>&1 || echo "empty-kernel ncu run failed"
  python3 -m benchmarks.micro.silicon --out "$OUT/silicon.csv" --config h100
fi
stamp "done"
cat "$OUT/calibration_run1.csv" 2>/dev/null || true

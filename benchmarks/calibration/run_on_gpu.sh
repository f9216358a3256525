#!/usr/bin/env bash
# One device call: build the engine, measure the GEMM calibration suite under Nsight Compute and the silicon
# microbenchmarks, and write everything under $OUT (meta.txt, ncu.csv, order.csv, h100_calibration.csv,
# silicon.csv). Run from the repository root on a machine with an NVIDIA GPU, CuPy and ncu.
set -euo pipefail
OUT=${OUT:-results/gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv | tee "$OUT/meta.txt"
nvcc --version | tail -1 >> "$OUT/meta.txt"
CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
METRICS=gpc__cycles_elapsed.max,sm__cycles_active.avg,gpu__time_duration.sum,smsp__inst_executed.sum
ncu --clock-control none --metrics "$METRICS" --csv --log-file "$OUT/ncu.csv" \
  python3 -m stcsim.gpu.calibrate run-suite --order "$OUT/order.csv" > "$OUT/ncu_stdout.txt" 2>&1 || {
  tail -20 "$OUT/ncu_stdout.txt"; exit 1; }
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
DRV=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
CLK=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader | head -1)
python3 -m stcsim.gpu.calibrate collect --ncu "$OUT/ncu.csv" --order "$OUT/order.csv" \
  --out "$OUT/h100_calibration.csv" --meta "date: $(date -u +%Y-%m-%d)" --meta "gpu: $GPU" \
  --meta "driver: $DRV" --meta "max sm clock: $CLK" --meta "ncu: --clock-control none" \
  --meta "metric: measured_cycles = gpc__cycles_elapsed.max (second launch of each case)"
ncu --clock-control none --metrics "$METRICS" --csv --log-file "$OUT/ncu_empty.csv" \
  python3 -m benchmarks.calibration.empty_kernel > /dev/null 2>&1 || echo "empty-kernel ncu run failed"
grep -E "gpc__cycles_elapsed.max|gpu__time_duration" "$OUT/ncu_empty.csv" | cut -d, -f5,8,13,15 || true
python3 -m benchmarks.micro.silicon --out "$OUT/silicon.csv" --config h100
cat "$OUT/h100_calibration.csv"

#!/usr/bin/env bash
# One device call (about 2-4 min on an H100) for issue 43: the L1's capacity against the kernel's shared
# memory (benchmarks/calibration/l1_carveout_probe.py), timed plainly and under Nsight Compute (L1 tag hits
# and misses of global loads, the shared-memory configuration the driver chose per launch), and the
# driver's choice for every case of the calibration suite (ncu's launch__ metrics only: no replay).
# Writes $OUT/l1_carveout.tgz holding meta.txt, plain/l1_carveout.csv, ncu_probe.csv, ncu_suite.csv,
# order_suite.csv and the runs' stdout.
set -euo pipefail
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start ))s] $*"; }
W=$(mktemp -d)
OUT_FINAL=${OUT:-results/gpu}
OUT=$W source "$(dirname "$0")/device_meta.sh"
CMAKE_BUILD_PARALLEL_LEVEL=16 SKBUILD_CMAKE_DEFINE=STCSIM_PGO=OFF python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
stamp "engine built"
timeout 120 python3 -m benchmarks.calibration.l1_carveout_probe run --out "$W/plain" > "$W/plain_stdout.txt" 2>&1 \
  || { echo "plain probe failed:"; tail -20 "$W/plain_stdout.txt"; }
stamp "plain probe done"
PROBE_METRICS=l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum
LAUNCH_METRICS=launch__shared_mem_config_size,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__occupancy_limit_blocks,launch__occupancy_limit_warps,launch__registers_per_thread
timeout 300 ncu --clock-control none --metrics "$PROBE_METRICS,$LAUNCH_METRICS" --csv --log-file "$W/ncu_probe.csv" \
  python3 -m benchmarks.calibration.l1_carveout_probe run --out "$W/ncu" > "$W/ncu_probe_stdout.txt" 2>&1 \
  || { echo "ncu probe failed:"; tail -20 "$W/ncu_probe_stdout.txt"; }
stamp "ncu probe done"
if [ "${SUITE:-1}" = 1 ]; then  # SUITE=0: the probe only
  timeout 300 ncu --clock-control none --metrics "$LAUNCH_METRICS" --csv --log-file "$W/ncu_suite.csv" \
    python3 -m stcsim.experiments.calibrate run-suite --group all --order "$W/order_suite.csv" > "$W/suite_stdout.txt" 2>&1 \
    || { echo "ncu suite failed:"; tail -20 "$W/suite_stdout.txt"; }
  stamp "ncu suite done"
fi
mkdir -p "$OUT_FINAL"
tar -czf "$OUT_FINAL/l1_carveout.tgz" -C "$W" .
stamp done

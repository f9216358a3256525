#!/usr/bin/env bash
# One device call (about 9 min on an H100) for the silicon work of issues 43 and 44 that has not run yet,
# highest priority first, each step's output tarred under $OUT as soon as it ends (a budget kill keeps what
# finished):
#   1. the shfl microbenchmarks (latency idx/bfly, issue interval) -> $OUT/shfl_micro.csv
#   2. TEW's explaining ncu metrics (benchmarks/calibration/run_tew_explain.sh) -> $OUT/tew_explain.tgz
#   3. kernel-only library times under ncu (benchmarks/gpu/library_kernels.py) -> $OUT/library_kernels.tgz
#   4. the library table's shapes after START (benchmarks/gpu/library_baselines.py) -> $OUT/library_rest.csv
# Run from the repository root after the engine is installed.
set -uo pipefail
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
timeout 60 python3 -m benchmarks.micro.silicon --out $OUT/shfl_micro.csv \
  --only lat.shfl.sync.idx.b32,lat.shfl.sync.bfly.b32,ii.shfl.sync.idx.b32 2>&1 | tail -5
KERNELS='gemm_tew*' LIMIT=${TEW_LIMIT:-80} timeout 150 bash benchmarks/calibration/run_tew_explain.sh 2>&1 | tail -4
W=$(mktemp -d)
timeout ${LIB_LIMIT:-200} ncu --metrics gpu__time_duration.sum --csv --log-file $W/ncu.csv \
  python3 -m benchmarks.gpu.library_kernels run --order $W/order.csv --budget ${LIB_BUDGET:-140} > $W/run.txt 2>&1
tail -2 $W/run.txt
python3 -m benchmarks.gpu.library_kernels collect --ncu $W/ncu.csv --order $W/order.csv --out $W/kernels.csv \
  2>&1 | tail -2
tar -czf $OUT/library_kernels.tgz -C $W .
timeout ${REST_LIMIT:-150} python3 -m benchmarks.gpu.library_baselines --out $OUT/library_rest.csv \
  --start ${START:-18} --budget ${REST_BUDGET:-120} 2>&1 | tail -3
date -u

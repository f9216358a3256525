#!/usr/bin/env bash
# One device call (2-4 min on an H100) for issue 43: why the TEW kernels (tile-wise GEMM plus the element-wise
# remainder on CUDA cores) take 1.4x the simulated time on every layer of the sparse silicon table. ncu's
# explaining metrics (stcsim.experiments.calibrate.EXPLAIN_METRICS that this ncu knows: warp-state stalls per issued
# instruction, pipes, SASS instruction classes incl. global reductions, occupancy, hit rates) beside
# gpc__cycles_elapsed.max on the TEW and TW kernels of the BERT-base layers at 75% (NETWORK sets another).
# KERNELS (space-separated globs) and LIMIT (seconds per glob) are optional.
# Writes $OUT/tew_explain.tgz (ncu CSVs and launch orders).
set -euo pipefail
set -f  # the kernel globs are ncu-side patterns, never file names
W=$(mktemp -d)
ncu --query-metrics > $W/q.txt 2>&1 || true
M=$(python3 - $W/q.txt <<'PY'
import sys
from stcsim.experiments.calibrate import EXPLAIN_METRICS
known = {line.split()[0] for line in open(sys.argv[1]) if line.strip()}
print(",".join(["gpc__cycles_elapsed.max", "smsp__inst_executed.sum",
                *(m for m in EXPLAIN_METRICS if m.split(".")[0] in known)]))
PY
)
echo "$M"
for K in ${KERNELS:-'gemm_tew*' 'gemm_tilewise*'}; do
  n=$(echo "$K" | tr -dc 'a-z0-9_')
  timeout ${LIMIT:-150} ncu --clock-control none --metrics "$M" --csv --log-file $W/ncu_$n.csv \
    python3 -m stcsim.experiments.sparse_silicon measure --order $W/order_$n.csv --sparsity 0.75 --kernel "$K" --problems layers --network "${NETWORK:-bert_base}" > $W/out_$n.txt 2>&1 || tail -3 $W/out_$n.txt
done
rm -f $W/q.txt
tar -czf $OUT/tew_explain.tgz -C $W .
ls -la $W

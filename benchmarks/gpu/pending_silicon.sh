#!/usr/bin/env bash
# One device call (about 4 min on an H100) for the silicon work that has not run yet, highest priority first,
# each step's output under $OUT as soon as it ends (a budget kill keeps what finished):
#   1. conditional branches (benchmarks/gpu/branch_probe.py): a warp-uniform taken / not-taken `@p bra` over
#      2-16 instructions per step, with SASS counts and listings -> $OUT/branch/ (issue 43: TEW's branch
#      resolving stalls; the engine's units.branch 4 / 2 is unmeasured)
#   2. the branch.taken microbenchmark beside branch and lat.add.s32 -> $OUT/branch_micro.csv
#   3. the Hopper GEMMs' 8-wide tile against numpy on the GPU (tests/gpu/test_gpu_hopper_gemm.py)
# Run from the repository root after the engine is installed.
# (The steps of 2026-12-07 02:33 UTC, shfl, TEW's stall reasons and the library tables, ran: results/reference/.)
set -uo pipefail
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
timeout 240 python3 -m benchmarks.gpu.branch_probe --out $OUT/branch 2>&1 | tail -16
timeout 60 python3 -m benchmarks.micro.silicon --out $OUT/branch_micro.csv \
  --only branch.taken,branch,lat.add.s32 2>&1 | tail -4
timeout 150 python3 -m pytest -q tests/gpu/test_gpu_hopper_gemm.py -k tile128x8 2>&1 | tail -3
date -u

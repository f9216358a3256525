#!/usr/bin/env bash
# One device call on the H100: build the engine, run the Hopper silicon microbenchmarks
# (benchmarks/micro/hopper.py: wgmma interval/latency per N dense and sparse, whole-GPU wgmma TFLOP/s, TMA
# latency per box size, cuBLAS fp16 4096^3 through torch) and the Hopper tests on the GPU (gpu-marked
# ones included: the driver tensor map, the Hopper GEMM vs numpy and its TFLOP/s at 4096^3). Results and
# the GPU/driver/clock go to $OUT. Run from the repository root on an sm_90 machine with CuPy.
set -uo pipefail
OUT=${OUT:-results/gpu/hopper}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv | tee "$OUT/meta.txt"
date -u +%Y-%m-%dT%H:%MZ >> "$OUT/meta.txt"
CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
python3 -m benchmarks.micro.hopper --out "$OUT/hopper_micro.csv" 2>&1 | tee "$OUT/hopper_micro.log"
STCSIM_TEST_BACKEND=gpu python3 -m pytest -q -s -p no:cacheprovider -rs tests/ext/test_hopper_wgmma.py \
  tests/ext/test_hopper_tma.py tests/kernels/descriptors/test_gemm_wgmma.py 2>&1 | tee "$OUT/hopper_tests.log" | tail -25

#!/usr/bin/env bash
# One device call on an H100 (~6 min): build the engine; the Hopper GEMMs' tests (the gpu-marked numpy checks
# at ragged shapes, and the engine tests); their TFLOP/s at 4096^3 and 8192^3 next to torch's cuBLAS and
# cuSPARSELt (benchmarks/gpu/hopper_gemm.py -> h100_hopper_gemm.csv); then the sparse silicon table of the
# Hopper GEMMs on the ResNet-50 / BERT layer shapes (measured under ncu and simulated on h100, with the dense
# mma.sync GEMMs: h100_hopper_silicon*.csv) and the PyTorch comparison on the same shapes plus the squares
# (torch_sparse.csv). Run from the repository root on an sm_90 machine with CuPy, torch and ncu.
set -uo pipefail
OUT=${OUT:-results/gpu/hopper_gemm}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_hopper_gemm.py 2>&1 \
  | tee "$OUT/gpu_tests.log" | tail -4
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/descriptors/test_gemm_wgmma.py 2>&1 | tail -2
timeout 120 python3 -m benchmarks.gpu.hopper_gemm --out "$OUT/h100_hopper_gemm.csv" 2>&1 | tail -12
NAME=h100_hopper_silicon KERNELS='gemm_wgmma*' SQUARE=4096,8192 JOBS=16 OUT="$OUT" \
  timeout 420 bash benchmarks/gpu/sparse_silicon.sh 2>&1 | tail -12

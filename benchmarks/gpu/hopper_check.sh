#!/usr/bin/env bash
# One device call on the H100 (< 4 min): build the engine, run the Hopper tests on the GPU
# (STCSIM_TEST_BACKEND=gpu: the numeric wgmma/TMA/GEMM tests against numpy, the gpu-marked ones included:
# the driver tensor map, the Hopper GEMM vs numpy and its TFLOP/s at 4096^3, printed with -s), then the TMA
# probe (benchmarks/gpu/tma_probe.py: which box starts and row strides the TMA accepts, one process each),
# and the simulator's TMA error tests (sim_only: skipped on the GPU backend) in processes of their own with
# faulthandler, plain and after CuPy has initialised the GPU (a segfault there was the engine's exported static
# libstdc++ meeting torch's shared one; fixed by CMakeLists' --exclude-libs, kept as a regression check).
# Logs and the GPU/driver/clock go to $OUT. Run from the repository root on an sm_90 machine with CuPy.
set -uo pipefail
OUT=${OUT:-results/gpu/hopper_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv | tee "$OUT/meta.txt"
date -u +%Y-%m-%dT%H:%MZ >> "$OUT/meta.txt"
python3 --version >> "$OUT/meta.txt"
CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
# Every test of the Hopper files on the GPU backend (gpu-marked ones run where CuPy is importable).
STCSIM_TEST_BACKEND=gpu timeout 120 python3 -m pytest -q -s -p no:cacheprovider -rs tests/ext/test_hopper_*.py \
  2>&1 | tee "$OUT/hopper_tests.log" | tail -30
# The gpu-marked tests alone, in a process of their own (a sticky CUDA error above cannot hide them).
STCSIM_TEST_BACKEND=gpu timeout 45 python3 -m pytest -q -s -p no:cacheprovider -rs -m gpu \
  tests/ext/test_hopper_*.py 2>&1 | tee "$OUT/hopper_gpu_marked.log" | tail -15
grep -h "TFLOP/s" "$OUT/hopper_tests.log" "$OUT/hopper_gpu_marked.log" | tee "$OUT/tflops.txt"
timeout 60 python3 -m benchmarks.gpu.tma_probe 2>&1 | tee "$OUT/tma_probe.log"
timeout 30 python3 -X faulthandler -m pytest -q -p no:cacheprovider -m sim_only tests/ext/test_hopper_tma.py \
  2>&1 | tee "$OUT/tma_sim_faults.log" | tail -5
timeout 45 python3 -X faulthandler -c 'import sys, cupy, pytest; cupy.zeros(1).sum(); cupy.cuda.runtime.deviceSynchronize()
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-m", "sim_only", "tests/ext/test_hopper_tma.py"]))' \
  2>&1 | tee "$OUT/tma_sim_faults_after_cupy.log" | tail -5

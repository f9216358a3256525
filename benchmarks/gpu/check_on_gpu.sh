#!/usr/bin/env bash
# One device call: build the engine, then run every GPU-only test (pytest -m gpu) and the functional-core
# tests with the real GPU as the backend (STCSIM_TEST_BACKEND=gpu: the numpy references and the hardware
# facts the tests assume, checked against silicon). Logs and a summary go to $OUT. Run from the repository
# root on a machine with an NVIDIA GPU and CuPy.
set -uo pipefail
OUT=${OUT:-results/gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$OUT/meta.txt"
date -u +%Y-%m-%d >> "$OUT/meta.txt"
CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
python3 -c "import cupy, stcsim._engine; print('cupy', cupy.__version__)" | tee -a "$OUT/meta.txt"
python3 -m pytest -q -m gpu -p no:cacheprovider -rs ${GPU_TESTS:-tests} 2>&1 | tee "$OUT/gpu_marked.log" | tail -25
STCSIM_TEST_BACKEND=gpu python3 -m pytest -q -p no:cacheprovider ${BACKEND_TESTS:-tests/sim} 2>&1 \
  | tee "$OUT/backend_gpu.log" | tail -25

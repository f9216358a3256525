#!/usr/bin/env bash
# One device call: the sparse silicon table (stcsim.experiments.sparse_silicon). Builds the engine, measures every
# sparse kernel that runs on silicon and the dense mma.sync GEMMs on the ResNet-50 and BERT-base layer shapes
# under Nsight Compute (gpc__cycles_elapsed.max; every case also checked against numpy), PyTorch's 2:4 GEMM
# (cuSPARSELt / CUTLASS) on the same shapes where torch is installed, then simulates every case on h100.
# Writes under $OUT: meta.txt, order.csv, ncu.csv, h100_sparse_silicon_measured.csv, h100_sparse_silicon.csv
# (both cycle counts, error, speedups over dense), h100_sparse_silicon_summary.csv, torch_sparse.csv.
# Run from the repository root on a machine with an NVIDIA GPU, CuPy and ncu. SPARSITY (default 0.75),
# KERNELS (comma-separated globs of sparse kernel names, !glob excludes; default *) and JOBS (simulation processes, default 14) are optional.
# PROBLEMS=sparsert measures SparseRT's 20 problems instead (generated kernel, CSR, dense SIMT; set
# SPARSITY=0.9 as in the paper): their modules are compiled ahead by the driver in 16 processes (`warm`, into
# the JIT cache) and the files are named h100_sparsert_silicon* (NAME sets another prefix, e.g. for
# KERNELS='gemm_wgmma*', the Hopper GEMMs dense and sparse). TORCH=0 skips the PyTorch comparison;
# SQUARE (e.g. 4096,8192) adds square GEMMs to it.
# The simulation step is last (the measurements are on disk before it starts): the Tensor Core cases take
# about a minute at JOBS=14, the fp32 CUDA-core sparse kernels (CSR, channel, VW SIMT) up to ~90 s each per
# case on one core, so about 8 minutes in all; SIMULATE=0 skips it, and `invoke calibrate --sparse
# --measured $OUT/h100_sparse_silicon_measured.csv --jobs N` runs it on any machine later.
set -euo pipefail
OUT=${OUT:-results/gpu}
SPARSITY=${SPARSITY:-0.75}
KERNELS=${KERNELS:-*}
PROBLEMS=${PROBLEMS:-layers}
if [ "$PROBLEMS" = sparsert ]; then NAME=${NAME:-h100_sparsert_silicon}; fi
NAME=${NAME:-h100_sparse_silicon}
export CUDA_CACHE_MAXSIZE=4294967296  # the driver's JIT cache: room for the generated SparseRT modules
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/meta.txt"
CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
if [ "$PROBLEMS" = sparsert ]; then
  python3 -m stcsim.experiments.sparse_silicon warm --problems sparsert --sparsity "$SPARSITY" --jobs 16 \
    > "$OUT/warm.txt" 2>&1 || { tail -20 "$OUT/warm.txt"; exit 1; }
  sort -rn -k2 "$OUT/warm.txt" | head -3
fi
METRICS=gpc__cycles_elapsed.max,sm__cycles_active.avg,gpu__time_duration.sum,smsp__inst_executed.sum
ncu --clock-control none --metrics "$METRICS" --csv --log-file "$OUT/ncu.csv" \
  python3 -m stcsim.experiments.sparse_silicon measure --order "$OUT/order.csv" --sparsity "$SPARSITY" \
  --kernel "$KERNELS" --problems "$PROBLEMS" > "$OUT/measure_stdout.txt" 2>&1 || { tail -20 "$OUT/measure_stdout.txt"; exit 1; }
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
DRV=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
CLK=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader | head -1)
python3 -m stcsim.experiments.sparse_silicon collect --ncu "$OUT/ncu.csv" --order "$OUT/order.csv" \
  --out "$OUT/${NAME}_measured.csv" --meta "date: $(date -u +%Y-%m-%d)" --meta "gpu: $GPU" \
  --meta "driver: $DRV" --meta "max sm clock: $CLK" --meta "ncu: --clock-control none" \
  --meta "metric: measured_cycles = gpc__cycles_elapsed.max (second launch of each case)" \
  --meta "sparsity: $SPARSITY"
if [ "${TORCH:-1}" != 0 ]; then
  python3 -m benchmarks.gpu.torch_sparse --out "$OUT/torch_sparse.csv" --square "${SQUARE:-}" \
    || echo "torch comparison failed"
fi
if [ "${SIMULATE:-1}" != 0 ]; then
  python3 -m stcsim.experiments.sparse_silicon table "$OUT/${NAME}_measured.csv" \
    --out "$OUT/$NAME.csv" --summary "$OUT/${NAME}_summary.csv" --jobs "${JOBS:-14}"
fi

# Sourced by the run_*.sh device scripts: OUT (default results/gpu) created, Python unbuffered, and
# $OUT/meta.txt recording the GPU as the run found it (nvidia-smi name, driver, clocks, temperature, power;
# the nvcc version), which every committed silicon CSV cites.
OUT=${OUT:-results/gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv | tee "$OUT/meta.txt"
nvcc --version | tail -1 >> "$OUT/meta.txt"

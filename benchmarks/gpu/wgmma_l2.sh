#!/usr/bin/env bash
# One device call (~5 min on an H100): the Hopper GEMMs' memory-system evidence (benchmarks/gpu/wgmma_l2.py)
# under Nsight Compute at the clock the card runs (--clock-control none): Speed Of Light, memory workload and
# warp-state sections plus L2 / DRAM bytes and elapsed cycles, as a raw CSV (ncu_raw.csv: one row per launch)
# beside the launch order (order.csv). Run from the repository root on an sm_90 machine with CuPy, torch, ncu.
set -uo pipefail
OUT=${OUT:-results/gpu/wgmma_l2}
source "$(dirname "$0")/../calibration/device_meta.sh"  # $OUT, unbuffered Python, $OUT/meta.txt
CMAKE_BUILD_PARALLEL_LEVEL=16 SKBUILD_CMAKE_DEFINE=STCSIM_PGO=OFF \
  python3 -m pip install -q --no-build-isolation --no-deps -e . > "$OUT/install.log" 2>&1 || tail -5 "$OUT/install.log"
ncu --query-metrics --chip gh100 2>/dev/null | grep -Ei "^(lts__t_(bytes|sectors)|dram__bytes|sm__pipe_tensor|lts__throughput|l1tex__m_)" \
  > "$OUT/metric_names.txt"
METRICS=gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second,gpu__time_duration.sum,lts__t_bytes.sum
METRICS=$METRICS,lts__t_sectors.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__cycles_active.avg
METRICS=$METRICS,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
timeout 500 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section ComputeWorkloadAnalysis --metrics "$METRICS" \
  --kernel-name regex:'gemm|sm90|sparse|cutlass|xmma' --page raw --csv --log-file "$OUT/ncu_raw.csv" \
  python3 -m benchmarks.gpu.wgmma_l2 --order "$OUT/order.csv" --sizes "${SIZES:-4096,8192}" \
  > "$OUT/run.txt" 2>&1 || tail -20 "$OUT/run.txt"
tail -12 "$OUT/run.txt"
python3 - "$OUT/ncu_raw.csv" <<'PY'
import sys, pandas as pd
df = pd.read_csv(sys.argv[1], skiprows=lambda i: False, low_memory=False)
df = df[pd.to_numeric(df.get("ID"), errors="coerce").notna()]
cols = [c for c in ("Kernel Name", "gpc__cycles_elapsed.max", "gpc__cycles_elapsed.avg.per_second",
        "lts__t_bytes.sum", "dram__bytes_read.sum", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed") if c in df.columns]
pd.set_option("display.width", 250); pd.set_option("display.max_colwidth", 40)
print(df[cols].to_string())
PY

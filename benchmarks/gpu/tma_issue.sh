#!/usr/bin/env bash
# One device call (~3 min on an H100): is one CTA's TMA stream limited by its issuing thread or by the copy
# engine? The SASS of the TMA stream kernel's loop (two rem.u32, or masks), the one-CTA queue cases of
# benchmarks/micro/tma_stream.py beside the same loop with masks and a one-copy launch (the event timing's
# overhead), CUDA-event timed (tma_issue.csv), then a few of them under Nsight Compute (ncu_raw.csv:
# cycles, instructions, warp stall reasons).
# Run from the repository root on an sm_90 machine with CuPy and ncu.
set -uo pipefail
OUT=${OUT:-results/gpu/tma_issue}
source "$(dirname "$0")/../calibration/device_meta.sh"  # $OUT, unbuffered Python, $OUT/meta.txt
CMAKE_BUILD_PARALLEL_LEVEL=16 SKBUILD_CMAKE_DEFINE=STCSIM_PGO=OFF \
  python3 -m pip install -q --no-build-isolation --no-deps -e . > "$OUT/install.log" 2>&1 || tail -5 "$OUT/install.log"
for cheap in 0 1; do
  python3 -c "from benchmarks.micro import tma_stream as t; print(t.ptx(4, 64, bool($cheap)))" > /tmp/tma_$cheap.ptx
  ptxas -arch=sm_90a /tmp/tma_$cheap.ptx -o /tmp/tma_$cheap.cubin
  { echo "=== stages 4, 8 KiB boxes, cheap_index=$cheap"; cuobjdump -sass /tmp/tma_$cheap.cubin; } >> "$OUT/sass.txt"
done
CASES=queue_0x,issue,launch,queue_1x_s4,queue_1x_s1,queue_4x_s1
python3 -m benchmarks.micro.tma_stream --out "$OUT/tma_issue.csv" --cases "$CASES" --repeats 9 2>&1 | tail -3
METRICS=gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second,gpu__time_duration.sum,smsp__inst_executed.sum
METRICS=$METRICS,lts__t_bytes.sum,dram__bytes_read.sum,lts__cycles_elapsed.avg.per_second
timeout 240 ncu --clock-control none --section WarpStateStats --section SchedulerStats --metrics "$METRICS" \
  --kernel-name tmastream --page raw --csv --log-file "$OUT/ncu_raw.csv" \
  python3 -m benchmarks.micro.tma_stream --out "$OUT/tma_issue_under_ncu.csv" --repeats 1 \
  --cases queue_0x_s1_b8k,queue_0x_s4_b8k,issue_s1,issue_s4,launch > "$OUT/ncu_run.txt" 2>&1 || tail -20 "$OUT/ncu_run.txt"
grep -c tmastream "$OUT/ncu_raw.csv"

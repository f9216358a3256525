#!/usr/bin/env bash
# One device call (~4 min on an H100): the TMA streaming microbenchmark (benchmarks/micro/tma_stream.py) on
# silicon, CUDA-event timed (tma_stream.csv), then again under Nsight Compute at the clock the card runs with
# its caches flushed before each launch, as the engine starts (ncu_raw.csv, two launches per case but the
# queue cases of 2 and 4 CTAs per SM, which 300 s of ncu do not hold: cycles, clock, L2 and DRAM bytes
# and throughput; the capacity cases' DRAM reads, the queue cases' copy overlap).
# Run from the repository root on an sm_90 machine with CuPy and ncu.
set -uo pipefail
OUT=${OUT:-results/gpu/tma_stream}
source "$(dirname "$0")/../calibration/device_meta.sh"  # $OUT, unbuffered Python, $OUT/meta.txt
CMAKE_BUILD_PARALLEL_LEVEL=16 SKBUILD_CMAKE_DEFINE=STCSIM_PGO=OFF \
  python3 -m pip install -q --no-build-isolation --no-deps -e . > "$OUT/install.log" 2>&1 || tail -5 "$OUT/install.log"
python3 -m benchmarks.micro.tma_stream --out "$OUT/tma_stream.csv" 2>&1 | tail -8
METRICS=gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second,gpu__time_duration.sum,lts__t_bytes.sum
METRICS=$METRICS,lts__t_sectors.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct
METRICS=$METRICS,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
METRICS=$METRICS,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__d_sectors.avg.pct_of_peak_sustained_elapsed
METRICS=$METRICS,lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__cycles_elapsed.avg.per_second
METRICS=$METRICS,l1tex__m_xbar2l1tex_read_sectors.avg.pct_of_peak_sustained_elapsed
timeout 300 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --metrics "$METRICS" \
  --kernel-name tmastream --page raw --csv --log-file "$OUT/ncu_raw.csv" \
  python3 -m benchmarks.micro.tma_stream --out "$OUT/tma_stream_under_ncu.csv" --repeats 1 \
  --cases one_cta,sms,4x_sms,capacity,strided,queue_0x,queue_1x > "$OUT/ncu_run.txt" 2>&1 \
  || tail -20 "$OUT/ncu_run.txt"
grep -c tmastream "$OUT/ncu_raw.csv"

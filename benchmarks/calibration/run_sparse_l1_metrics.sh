#!/usr/bin/env bash
# One device call (2-4 min on an H100) for issue 43: the L1 data-stage counters of the sparse silicon table's
# CUDA-core kernels (VectorSparse SIMT K=8 and K=4, channel SIMT) on the ResNet-50 / BERT-base layers: ncu's
# data-pipe wavefronts (all, shared loads and stores), shared bank conflicts, global load requests, shared
# instructions, beside gpc__cycles_elapsed.max. Writes $OUT/vw_l1.tgz (ncu CSVs and launch orders).
set -euo pipefail
W=$(mktemp -d)
CMAKE_BUILD_PARALLEL_LEVEL=16 SKBUILD_CMAKE_DEFINE=STCSIM_PGO=OFF python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -1
ncu --query-metrics > $W/q.txt 2>&1 || true
M=gpc__cycles_elapsed.max,smsp__inst_executed.sum
for m in l1tex__data_pipe_lsu_wavefronts l1tex__data_pipe_lsu_wavefronts_mem_shared l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st l1tex__data_bank_conflicts_pipe_lsu_mem_shared l1tex__t_requests_pipe_lsu_mem_global_op_ld smsp__sass_inst_executed_op_shared_ld smsp__sass_inst_executed_op_shared_st; do
  grep -q "^$m " $W/q.txt && M="$M,$m.sum"
done
echo "$M"
for K in 'gemm_simt_vw_l16k8*' 'gemm_simt_vw_l16k4*' 'gemm_simt_channel*'; do
  n=$(echo "$K" | tr -dc 'a-z0-9_')
  timeout 150 ncu --clock-control none --metrics "$M" --csv --log-file $W/ncu_$n.csv \
    python3 -m stcsim.experiments.sparse_silicon measure --order $W/order_$n.csv --sparsity 0.75 --kernel "$K" --problems layers > $W/out_$n.txt 2>&1 || tail -3 $W/out_$n.txt
done
rm -f $W/q.txt
tar -czf $OUT/vw_l1.tgz -C $W .
ls -la $W

"""Where the Hopper GEMMs' time goes on silicon: our wgmma kernels (dense and 2:4) and PyTorch's cuBLAS /
cuSPARSELt at square sizes, each launched twice (a warm-up and a measured launch), meant to run under Nsight
Compute (benchmarks/gpu/wgmma_l2.sh) so that the L2 and DRAM traffic, the throughput of each unit as a share
of its peak, the warp stall reasons and the elapsed cycles at the clock the card ran (``--clock-control
none``) are recorded per launch. The question it answers (docs/calibration.md): is a multi-wave wgmma GEMM
bound by the L2's bandwidth on the H100, which the h100 model does not charge TMA copies to.

    python -m benchmarks.gpu.wgmma_l2 --order order.csv [--sizes 4096,8192]
"""

from __future__ import annotations

import argparse
import csv

import numpy as np

from stcsim.kernels.descriptors.gemm_wgmma import WGMMA_KERNELS
from stcsim.kernels.run import launch
from stcsim.sparsity import get

KERNELS = tuple(k for k in WGMMA_KERNELS if k.block_n >= 128)


def run_ours(size: int, writer: csv.writer, rng: np.random.Generator) -> None:
    """Our 128-wide and 256-wide wgmma GEMMs at size^3: a warm-up and a measured launch each."""
    from stcsim.gpu.runner import GpuEngine

    engine = GpuEngine(repeats=1)
    w = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    x = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    for kernel in KERNELS:
        pattern = get("nm:N=2,M=4" if kernel.sparse else "dense")
        operands = kernel.prepare(w, x, pattern, 0.5 if kernel.sparse else 0.0)
        _, stats = launch(kernel, engine, operands)
        writer.writerow([size, kernel.procedural_name, 2, f"{stats['gpu_time_ms']:.5f}"])
        print(f"{size}^3 {kernel.procedural_name}: {stats['gpu_time_ms']:.4f} ms", flush=True)


def run_torch(size: int, writer: csv.writer) -> None:
    """torch.mm dense (cuBLAS) and on a 2:4 semi-structured weight (cuSPARSELt), two calls each."""
    try:
        import torch
        from torch.sparse import SparseSemiStructuredTensor, to_sparse_semi_structured
    except ImportError:
        return
    from stcsim.sparsity.nm import NM

    rng = np.random.default_rng(1)
    w = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    w = np.where(NM(2, 4).prune(w, 0.5), w, 0).astype(np.float16)
    wt = torch.from_numpy(w).cuda()
    x = torch.from_numpy(rng.uniform(-1, 1, (size, size)).astype(np.float16)).cuda()
    cases = [("torch_cublas_f16", lambda: torch.mm(wt, x))]
    SparseSemiStructuredTensor._FORCE_CUTLASS = False
    try:
        ws = to_sparse_semi_structured(wt)
        cases.append(("torch_cusparselt_2to4", lambda: torch.mm(ws, x)))
    except (RuntimeError, ValueError, NotImplementedError) as exc:
        print(f"cuSPARSELt refused: {str(exc).splitlines()[0][:200]}", flush=True)
    for name, call in cases:
        torch.cuda.synchronize()
        for _ in range(2):
            call()
        torch.cuda.synchronize()
        writer.writerow([size, name, 2, ""])
        print(f"{size}^3 {name}: 2 calls", flush=True)


def main(argv: list[str] | None = None) -> int:
    """CLI: every size, ours then torch's; the launch order to --order."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--order", required=True, help="CSV of what ran, in order")
    ap.add_argument("--sizes", default="4096,8192")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    with open(a.order, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["size", "kernel", "launches", "event_ms"])
        for size in (int(s) for s in a.sizes.split(",")):
            run_ours(size, writer, rng)
            run_torch(size, writer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

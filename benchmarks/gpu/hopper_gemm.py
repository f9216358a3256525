"""The Hopper GEMMs of the kernel set (stcsim.kernels.descriptors.gemm_wgmma) on an sm_90 GPU next to
PyTorch's cuBLAS (dense fp16) and cuSPARSELt (``to_sparse_semi_structured``, 2:4) on the same square shapes.

    python -m benchmarks.gpu.hopper_gemm --out hopper_gemm.csv [--sizes 4096,8192] [--repeats 20]

Our kernels run through the CuPy runner (stcsim.gpu.GpuEngine: a warm-up launch, then the median of
``--repeats`` event-timed launches; the driver encodes the tensor maps), fp16 weights and activations drawn
uniformly, the sparse ones pruned 2:4; correctness is the gpu-marked tests' job (tests/gpu/
test_gpu_hopper_gemm.py), here only timing. PyTorch's times come from benchmarks.gpu.torch_sparse.time_ms (a
CUDA graph of the calls: kernels only). TFLOP/s count the dense work 2 M N K for every kernel, so a sparse
kernel's figure is its effective rate. Without torch, only our kernels are timed.
"""

from __future__ import annotations

import argparse
import csv
from typing import Any

import numpy as np

from stcsim.kernels.descriptors.gemm_wgmma import WGMMA_KERNELS
from stcsim.kernels.run import launch
from stcsim.sparsity import get


def time_ours(engine: Any, size: int, rng: np.random.Generator) -> list[dict[str, object]]:
    """One row per Hopper kernel at size^3."""
    w = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    x = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    rows = []
    for kernel in WGMMA_KERNELS:
        pattern = get("nm:N=2,M=4" if kernel.sparse else "dense")
        operands = kernel.prepare(w, x, pattern, 0.5 if kernel.sparse else 0.0)
        _, stats = launch(kernel, engine, operands)
        ms = float(stats["gpu_time_ms"])
        rows.append({"size": size, "kernel": kernel.procedural_name, "ms": ms,
                     "tflops": 2 * size**3 / ms / 1e9})
        print(f"{size}^3 {kernel.procedural_name}: {ms:.4f} ms, {rows[-1]['tflops']:.1f} TFLOP/s", flush=True)
    return rows


def time_torch(size: int, repeats: int) -> list[dict[str, object]]:
    """cuBLAS dense and cuSPARSELt 2:4 at size^3 (rows with the error instead where a backend refuses)."""
    try:
        import torch
        from torch.sparse import SparseSemiStructuredTensor, to_sparse_semi_structured
    except ImportError:
        return []
    from benchmarks.gpu.torch_sparse import time_ms
    from stcsim.sparsity.nm import NM

    rng = np.random.default_rng(1)
    w = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    w = np.where(NM(2, 4).prune(w, 0.5), w, 0).astype(np.float16)
    wt = torch.from_numpy(w).cuda()
    x = torch.from_numpy(rng.uniform(-1, 1, (size, size)).astype(np.float16)).cuda()
    rows = []
    ms, how = time_ms(torch, lambda: torch.mm(wt, x), repeats)
    rows.append({"size": size, "kernel": "torch_cublas_f16", "ms": ms, "tflops": 2 * size**3 / ms / 1e9,
                 "timing": how})
    SparseSemiStructuredTensor._FORCE_CUTLASS = False
    try:
        ws = to_sparse_semi_structured(wt)
        ms, how = time_ms(torch, lambda: torch.mm(ws, x), repeats)
        rows.append({"size": size, "kernel": "torch_cusparselt_2to4", "ms": ms,
                     "tflops": 2 * size**3 / ms / 1e9, "timing": how})
    except (RuntimeError, ValueError, NotImplementedError) as exc:
        rows.append({"size": size, "kernel": "torch_cusparselt_2to4",
                     "error": str(exc).splitlines()[0][:200]})
    for row in rows[-2:]:
        print(f"{size}^3 {row['kernel']}: {row.get('ms', row.get('error'))}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """CLI: time every size, write the CSV."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args(argv)
    from stcsim.gpu import GpuEngine

    engine = GpuEngine(repeats=a.repeats)
    rng = np.random.default_rng(0)
    rows: list[dict[str, object]] = []
    for size in (int(s) for s in a.sizes.split(",")):
        rows += time_ours(engine, size, rng)
        rows += time_torch(size, a.repeats)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with open(a.out, "w", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

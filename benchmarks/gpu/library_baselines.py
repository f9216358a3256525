"""Our kernels next to the libraries on one GPU (issue 44): how strong each bar's kernel is.

On the unique GEMM shapes of paper 001's Fig. 16 networks (batch 1; ResNet-50 also at batch 32), every
shape runs, timed with CUDA events (median of `--repeats` after a warm-up), through

* the libraries: cuBLAS SGEMM (fp32, TF32 off) and HGEMM (fp16 in and out, fp32 compute), cuSPARSE SpMM
  (CSR fp32 weights at 96% unstructured sparsity, dense fp32 activations), cuBLAS SGEMM on the channel-
  pruned work (half the output channels, the same N and K);
* the project's kernels (the PTX a simulation runs, launched by stcsim.gpu.runner): the SIMT SGEMM, the
  dense WMMA and mma.sync GEMMs, the CSR SpMM and the per-column (csrmv, library-class) SpMMs at 96%, the
  channel-pruned (50%) and vector-wise (L=16, K=4) SIMT GEMMs.

One CSV row per (network, layer, batch, M, N, K, kernel): median and fastest milliseconds, the relative error
of the result against numpy where the shape is small enough to check on the host (`--check-flop`), and the
ratio of the library's time to ours is left to the reader (benchmarks/gpu/library_table.py tabulates it).

    python -m benchmarks.gpu.library_baselines --out lib.csv       # on a GPU machine with CuPy
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from typing import Any

import numpy as np

from stcsim.kernels import GemmProblem, get_kernel, random_operands, relative_error
from stcsim.kernels.run import launch
from stcsim.sparsity import get
from stcsim.workloads import get_network, unique_gemm_shapes

FIG16 = ("alexnet:variant=tf-slim", "vgg16", "resnet50", "resnext50_32x4d", "show_and_tell:layers=lstm",
         "nmt_wmt16")
CSR_SPARSITY = 0.96
"""The sparsity of the CSR cases (cuSPARSE's and ours): paper 001's Generic bar."""
OURS = (  # (label, kernel, pattern spec, sparsity)
    ("ours_simt_sgemm", "gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", "dense", 0.0),
    ("ours_wmma", "gemm_wmma_f16_f32_tile64x64x32_warp32x32", "dense", 0.0),
    ("ours_mma_stage2", "gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2", "dense", 0.0),
    ("ours_mma_stage3", "gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3", "dense", 0.0),
    ("ours_csr_spmm96", "spmm_csr_f32_f32_tile4x64_warp1x64", "unstructured", CSR_SPARSITY),
    ("ours_csrmv1_spmm96", "spmm_csrmv_f32_f32_tile4x1_warp1x1", "unstructured", CSR_SPARSITY),
    ("ours_csrmv8_spmm96", "spmm_csrmv_f32_f32_tile4x8_warp1x8", "unstructured", CSR_SPARSITY),
    ("ours_channel50", "gemm_simt_channel_f32_f32_tile64x64x8_warp32x16_thread4x4", "channel", 0.5),
    ("ours_vw75", "gemm_simt_vw_l16k4_f32_f32_tile64x64x8_warp32x16_thread4x4", "vw:L=16,K=4", 0.75),
)
COLUMNS = ("network", "layer", "batch", "m", "n", "k", "kernel", "ms_median", "ms_min", "rel_error")


def shapes(batch1: tuple[str, ...] = FIG16, batch32: tuple[str, ...] = ("resnet50",)) -> list[tuple]:
    """(network, first layer, batch, problem) of every unique GEMM shape of the networks."""
    out = []
    for batch, nets in ((1, batch1), (32, batch32)):
        for spec in nets:
            for s in unique_gemm_shapes(get_network(spec, batch=batch)):
                out.append((spec, s.layers[0], batch, GemmProblem(s.m, s.n, s.k)))
    return out


def _time(cp, fn, repeats: int) -> tuple[float, float]:
    fn()
    cp.cuda.runtime.deviceSynchronize()
    start, end, times = cp.cuda.Event(), cp.cuda.Event(), []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(float(cp.cuda.get_elapsed_time(start, end)))
    return float(np.median(times)), min(times)


def library_calls(cp, p: GemmProblem, rng: np.random.Generator) -> list[tuple[str, Any, Any]]:
    """The library cases of a shape as (label, left, right), each run as ``left @ right`` on the GPU: cuBLAS
    SGEMM and HGEMM, cuSPARSE SpMM at CSR_SPARSITY (CuPy's ``csr @ x``) and SGEMM on half the rows (the
    channel-pruned work)."""
    import cupyx.scipy.sparse as sparse

    a = cp.asarray(rng.uniform(-1, 1, (p.m, p.k)).astype(np.float32))
    b = cp.asarray(rng.uniform(-1, 1, (p.k, p.n)).astype(np.float32))
    a16, b16 = a.astype(cp.float16), b.astype(cp.float16)
    csr = sparse.csr_matrix(a * cp.asarray(rng.random((p.m, p.k)) >= CSR_SPARSITY))
    return [("cublas_sgemm", a, b), ("cublas_hgemm", a16, b16), ("cusparse_spmm96", csr, b),
            ("cublas_sgemm_channel50", a[: max(1, p.m // 2)], b)]


def library_rows(cp, p: GemmProblem, rng: np.random.Generator, repeats: int) -> list[tuple]:
    """Every library call of the shape, each (label, median, min) of CUDA-event times."""
    return [(label, *_time(cp, lambda x=left, y=right: x @ y, repeats))
            for label, left, right in library_calls(cp, p, rng)]


def ours_rows(engine, p: GemmProblem, rng: np.random.Generator, check_flop: float) -> list[tuple]:
    """The project's kernels on the problem: (label, median, min, relative error or nan)."""
    out = []
    for label, name, spec, sparsity in OURS:
        kernel, pattern = get_kernel(name), get(spec)
        ok, why = kernel.can_implement(p, pattern)
        if not ok:
            print(f"skip {label} at {p}: {why}", file=sys.stderr)
            continue
        a, b = random_operands(p, rng)
        operands = kernel.prepare(a, b, pattern, sparsity)
        c, stats = launch(kernel, engine, operands)
        err = (relative_error(c, kernel.reference(operands)) if 2.0 * p.m * p.n * p.k <= check_flop
               else float("nan"))
        out.append((label, stats["gpu_time_ms"], stats["gpu_time_ms_min"], err))
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: measure every shape and write the CSV."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--check-flop", type=float, default=4e9, help="check results on the host up to this")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds; shapes past it are left out")
    ap.add_argument("--start", type=int, default=0, help="skip the first START shapes (a run continued)")
    a = ap.parse_args(argv)
    import cupy as cp

    from stcsim.gpu.runner import GpuEngine

    engine = GpuEngine(repeats=a.repeats)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    todo = shapes()
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for i, (net, layer, batch, p) in enumerate(todo):
            if i < a.start:
                continue
            if time.perf_counter() - start > a.budget:
                print(f"budget spent: {len(todo) - i} shapes left out", file=sys.stderr)
                break
            for label, med, fastest, *err in [*library_rows(cp, p, rng, a.repeats),
                                              *ours_rows(engine, p, rng, a.check_flop)]:
                w.writerow([net, layer, batch, p.m, p.n, p.k, label, f"{med:.5f}", f"{fastest:.5f}",
                            f"{err[0]:.2e}" if err else ""])
            f.flush()
            elapsed = time.perf_counter() - start
            print(f"[{elapsed:6.1f}s] {net} {layer} b{batch} {p.m}x{p.n}x{p.k}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

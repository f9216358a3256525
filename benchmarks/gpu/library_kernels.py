"""Kernel-only GPU time of the libraries and of our kernels on paper 001's layer shapes, under Nsight Compute
(issue 44, the library table's second view).

benchmarks/gpu/library_baselines.py times each call with CUDA events, which also count the host's work
between the two events: CuPy's ``csr @ x`` creates cuSPARSE descriptors and a workspace on every call, which
on the H100 host is more than a batch-1 layer's whole cuBLAS SGEMM. Here every case runs once after a
warm-up under ncu (``gpu__time_duration.sum`` of every kernel it launches), right after a launch of an empty
marker kernel, so each kernel ncu reports belongs to the case whose marker precedes it, and only the GPU's
time counts (the sum over the case's kernels: cuSPARSE may launch more than one).

Cases per shape: cuBLAS SGEMM (fp32, TF32 off) and HGEMM (fp16 in and out, fp32 compute), cuSPARSE SpMM at
96% (CSR fp32, CuPy's ``csr @ x``), cuBLAS SGEMM on half the rows (the channel-pruned work), and the
project's kernels of benchmarks/gpu/library_baselines.OURS (the PTX a simulation runs): the fp32 CUDA-core
GEMMs and SpMMs, the channel-pruned and vector-wise SIMT GEMMs, the dense WMMA and mma.sync GEMMs.
``--only LABEL,...`` runs a subset of the cases.

    ncu --metrics gpu__time_duration.sum --csv --log-file ncu.csv \\
        python -m benchmarks.gpu.library_kernels run --order order.csv      # on the GPU, CuPy
    python -m benchmarks.gpu.library_kernels collect --ncu ncu.csv --order order.csv --out kernels.csv
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from benchmarks.gpu.library_baselines import OURS, library_calls, shapes
from stcsim.experiments.calibrate import read_ncu_csv
from stcsim.harness.files import write_csv_atomic
from stcsim.kernels import get_kernel
from stcsim.kernels.run import launch
from stcsim.sparsity import get

MARKER = "library_kernels_case_marker"
WARMUP = "library_kernels_warmup_marker"
"""Kernels after this marker (a library call's warm-up) belong to no case."""
ORDER_COLUMNS = ("case", "network", "layer", "batch", "m", "n", "k", "kernel")


def run(order_path: str, budget: float, only: frozenset[str] | None = None) -> int:
    """Launch every case (of the labels in `only`, if given) once after its marker (libraries warmed up
    first); write the launch order."""
    import cupy as cp

    from stcsim.gpu.runner import GpuEngine

    marker = cp.RawKernel(f'extern "C" __global__ void {MARKER}() {{}}', MARKER)
    warmup = cp.RawKernel(f'extern "C" __global__ void {WARMUP}() {{}}', WARMUP)
    engine = GpuEngine(repeats=0)
    warmup((1,), (1,), ())  # the kernels of the operands' set-up and the warm-ups belong to no case
    rng = np.random.default_rng(0)
    order, start = [], time.perf_counter()
    for net, layer, batch, p in shapes():
        if time.perf_counter() - start > budget:
            print(f"budget spent at {net} {layer} b{batch}", file=sys.stderr)
            break
        for label, left, right in library_calls(cp, p, rng):
            if only is not None and label not in only:
                continue
            left @ right  # warm-up: handles, plans and workspaces
            cp.cuda.runtime.deviceSynchronize()
            marker((1,), (1,), ())
            left @ right
            cp.cuda.runtime.deviceSynchronize()
            warmup((1,), (1,), ())  # what follows (operand set-up) belongs to no case
            order.append((len(order), net, layer, batch, p.m, p.n, p.k, label))
        for label, name, spec, sparsity in OURS:
            kernel, pattern = get_kernel(name), get(spec)
            if (only is not None and label not in only) or not kernel.can_implement(p, pattern)[0]:
                continue
            operands = kernel.prepare(rng.uniform(-1, 1, (p.m, p.k)), rng.uniform(-1, 1, (p.k, p.n)),
                                      pattern, sparsity)
            marker((1,), (1,), ())
            launch(kernel, engine, operands)
            cp.cuda.runtime.deviceSynchronize()
            warmup((1,), (1,), ())
            order.append((len(order), net, layer, batch, p.m, p.n, p.k, label))
        print(f"[{time.perf_counter() - start:6.1f}s] {net} {layer} b{batch} {p}", flush=True)
    write_csv_atomic(pd.DataFrame(order, columns=ORDER_COLUMNS), order_path)
    return 0


def collect(ncu_path: str, order_path: str) -> pd.DataFrame:
    """One row per case: the sum of gpu__time_duration over the kernels after its marker, their count and
    names (the markers themselves and the kernels after a warm-up marker left out)."""
    with open(ncu_path) as f:
        ncu = read_ncu_csv(f.read())
    order = pd.read_csv(order_path)
    rows, case = [], -1
    time_col = list(ncu.columns).index("gpu__time_duration.sum") + 1  # itertuples: index first
    per_case: dict[int, list[tuple[str, float]]] = {}
    counting = False
    for r in ncu.itertuples():
        if r.kernel_name in (MARKER, WARMUP):
            counting = r.kernel_name == MARKER
            case += counting
            continue
        if counting:
            per_case.setdefault(case, []).append((r.kernel_name, float(getattr(r, "_" + str(time_col)))))
    if case + 1 != len(order):
        raise ValueError(f"{ncu_path} has {case + 1} markers, {order_path} {len(order)} cases")
    for o in order.itertuples():
        kernels = per_case.get(o.case, [])
        rows.append({**{c: getattr(o, c) for c in ORDER_COLUMNS[1:]},
                     "us": sum(t for _, t in kernels) / 1e3, "launches": len(kernels),
                     "kernels": ";".join(sorted({n for n, _ in kernels}))})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """CLI: run (on the GPU, under ncu) or collect."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--order", required=True)
    r.add_argument("--budget", type=float, default=400.0, help="seconds; shapes past it are left out")
    r.add_argument("--only", default="", help="comma-separated case labels (default: all)")
    c = sub.add_parser("collect")
    c.add_argument("--ncu", required=True)
    c.add_argument("--order", required=True)
    c.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "run":
        return run(a.order, a.budget, frozenset(a.only.split(",")) if a.only else None)
    write_csv_atomic(collect(a.ncu, a.order), a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

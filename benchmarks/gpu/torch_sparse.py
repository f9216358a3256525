"""PyTorch's 2:4 GEMM (``to_sparse_semi_structured``: cuSPARSELt, or CUTLASS) vs its dense fp16 GEMM on the
shapes of the sparse silicon table (stcsim.gpu.sparse_silicon), on a GPU where torch is installed.

    python -m benchmarks.gpu.torch_sparse --out torch_sparse.csv [--network resnet50 ...]

Each shape W (M x K) @ X (K x N) runs as torch.mm on fp16 CUDA tensors, W pruned 2:4 (stcsim's nm pattern),
padded to the sizes the semi-structured layout accepts (M, K to multiples of 64, N to a multiple of 8);
times are medians of CUDA events over ``--repeats`` launches after a warm-up. A backend that refuses a shape
records the error instead. torch is not a dependency of stcsim: without it the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from typing import Any

import numpy as np

from stcsim.gpu.sparse_silicon import NETWORKS, layer_shapes
from stcsim.kernels.problem import round_up
from stcsim.sparsity.nm import NM

BACKENDS = ("cusparselt", "cutlass")


def time_ms(torch: Any, fn: Any, repeats: int) -> float:
    """Median CUDA-event time of `fn` in milliseconds after one warm-up call."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def measure_shape(torch: Any, m: int, n: int, k: int, repeats: int) -> dict[str, object]:
    """Dense and 2:4 times of one shape, per backend (or the backend's error)."""
    from torch.sparse import SparseSemiStructuredTensor, to_sparse_semi_structured

    mp, kp, np_ = round_up(m, 64), round_up(k, 64), round_up(n, 8)
    rng = np.random.default_rng(0)
    w = rng.uniform(-1, 1, (mp, kp)).astype(np.float16)
    w = np.where(NM(2, 4).prune(w, 0.5), w, 0).astype(np.float16)
    wt = torch.from_numpy(w).cuda()
    x = torch.from_numpy(rng.uniform(-1, 1, (kp, np_)).astype(np.float16)).cuda()
    row: dict[str, object] = {"m": m, "n": n, "k": k, "padded": f"{mp}x{np_}x{kp}"}
    row["dense_ms"] = time_ms(torch, lambda: torch.mm(wt, x), repeats)
    for backend in BACKENDS:
        SparseSemiStructuredTensor._FORCE_CUTLASS = backend == "cutlass"
        try:
            ws = to_sparse_semi_structured(wt)
            err = float((torch.mm(ws, x) - torch.mm(wt, x)).abs().max() / torch.mm(wt, x).abs().max())
            row[f"{backend}_ms"] = time_ms(torch, lambda ws=ws: torch.mm(ws, x), repeats)
            row[f"{backend}_speedup"] = row["dense_ms"] / row[f"{backend}_ms"]
            row[f"{backend}_rel_error"] = err
        except (RuntimeError, ValueError, NotImplementedError) as exc:
            row[f"{backend}_error"] = str(exc).splitlines()[0][:200]
    return row


def main(argv: list[str] | None = None) -> int:
    """CLI: time every table shape with torch's dense and 2:4 GEMMs and write a CSV."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--network", action="append")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch is not installed: no PyTorch comparison")
        return 0
    if not torch.cuda.is_available():
        print("torch sees no CUDA GPU: no PyTorch comparison")
        return 0
    shapes = {(p.m, p.n, p.k) for _, _, p in layer_shapes(a.network or NETWORKS, a.batch)}
    rows = [measure_shape(torch, m, n, k, a.repeats) for m, n, k in sorted(shapes)]
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with open(a.out, "w", newline="") as f:
        f.write(f"# torch: {torch.__version__}, gpu: {torch.cuda.get_device_name()}\n")
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {a.out} ({len(rows)} shapes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

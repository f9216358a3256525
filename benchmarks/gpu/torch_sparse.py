"""PyTorch's 2:4 GEMM (``to_sparse_semi_structured``: cuSPARSELt, or CUTLASS) vs its dense fp16 GEMM on the
shapes of the sparse silicon table (stcsim.experiments.sparse_silicon), on a GPU where torch is installed.

    python -m benchmarks.gpu.torch_sparse --out torch_sparse.csv [--network resnet50 ...]

Each shape W (M x K) @ X (K x N) runs as torch.mm on fp16 CUDA tensors, W pruned 2:4 (stcsim's nm pattern),
padded to the sizes the semi-structured layout accepts (M, K to multiples of 64, N to a multiple of 8);
times are GPU time per call from a CUDA graph of ``--repeats`` calls (`time_ms`), so per-call host setup is
left out; ``--square 4096,8192`` adds square GEMMs. A backend that refuses a shape
records the error instead. torch is not a dependency of stcsim: without it the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from typing import Any

import numpy as np

from stcsim.experiments.sparse_silicon import NETWORKS, layer_shapes
from stcsim.kernels.problem import round_up
from stcsim.sparsity.nm import NM

BACKENDS = ("cusparselt", "cutlass")


def time_ms(torch: Any, fn: Any, repeats: int) -> tuple[float, str]:
    """GPU milliseconds of one call of `fn` and how they were taken. 'graph': `repeats` calls captured in
    one CUDA graph, replayed five times, median replay / repeats: only the kernels run, so host work a call
    does (cuSPARSELt's per-call plan setup in torch) is not timed. 'events': where capture fails, CUDA events
    around `repeats` back-to-back calls (host gaps between launches included), median of five."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(repeats):
                fn()
        run, method = graph.replay, "graph"
    except RuntimeError:
        torch.cuda.synchronize()

        def run() -> None:
            for _ in range(repeats):
                fn()

        method = "events"
    times = []
    for _ in range(5):
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / repeats)
    return statistics.median(times), method


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
    row["dense_ms"], row["dense_timing"] = time_ms(torch, lambda: torch.mm(wt, x), repeats)
    for backend in BACKENDS:
        SparseSemiStructuredTensor._FORCE_CUTLASS = backend == "cutlass"
        try:
            ws = to_sparse_semi_structured(wt)
            err = float((torch.mm(ws, x) - torch.mm(wt, x)).abs().max() / torch.mm(wt, x).abs().max())
            row[f"{backend}_ms"], row[f"{backend}_timing"] = time_ms(torch, lambda ws=ws: torch.mm(ws, x),
                                                                      repeats)
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
    ap.add_argument("--repeats", type=int, default=20, help="calls per timed graph (or batch)")
    ap.add_argument("--square", default="", help="also these square sizes, e.g. 4096,8192")
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
    shapes |= {(int(s),) * 3 for s in a.square.split(",") if s}
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

"""Paper 000's kernels on silicon: the Shfl-BW SpMMs next to our dense Tensor Core GEMMs and cuBLAS HGEMM.

On the unique weight-layer shapes of the Transformer (batch 1, the network's default length), every shape
runs, timed with CUDA events (median of `--repeats` after a warm-up), through cuBLAS HGEMM (fp16 in and out,
fp32 compute; CuPy), our dense WMMA GEMM tiles and split-K variants (the family the V100 / T4 panels' dense
bars choose from), our dense mma.sync GEMMs (the A100 panel's), and both Shfl-BW SpMMs (the WMMA one of the
V100 / T4 panels, the mma.sync one of the A100's) on each tile at 75 % with V = 32 and 64. One CSV row per
(layer, M, N, K, kernel, pattern): median and fastest milliseconds of launches issued one at a time; the
milliseconds per launch of `--repeats` launches back to back in a CUDA graph (``ms_graph``: without the
host's launch latency, about 10 us a launch, which dominates these small shapes; cuBLAS's through PyTorch,
as CuPy cannot call cuBLAS during a capture); where the shape is small
enough to check on the host, the relative error against numpy (from a launch of its own: a split-K kernel
adds into a zeroed C, so the timed repeats leave a multiple of the product there). Per shape, the time of
zeroing the fp32 C (``memset_c_f32``), which a split-K launch needs before it and its rows leave out.
The speedups a figure draws (sparse over dense, each the fastest of its family) are then measured ratios on
this GPU, next to the simulator's on its config.

    python -m benchmarks.gpu.shflbw_silicon --out shflbw.csv      # on a GPU machine with CuPy
"""

from __future__ import annotations

import argparse
import csv
from functools import partial

import numpy as np

from benchmarks.gpu.library_baselines import _time
from stcsim.kernels import KERNEL_SET, GemmProblem, random_operands, relative_error
from stcsim.kernels.run import launch
from stcsim.sparsity import get
from stcsim.workloads import get_network, unique_gemm_shapes

NETWORK = "transformer_base"
FAMILIES = ("gemm_wmma_f16_f32", "gemm_mma_f16_f32", "spmm_shflbw_wmma_f16_f32", "spmm_shflbw_f16_f32")
PATTERNS = {"dense": (("dense", 0.0),), "shflbw": (("shflbw:V=32", 0.75), ("shflbw:V=64", 0.75))}
COLUMNS = ("layer", "m", "n", "k", "kernel", "pattern", "ms_median", "ms_min", "ms_graph", "rel_error")


def weight_shapes() -> list[tuple[str, GemmProblem]]:
    """(first layer, problem) of the Transformer's unique GEMM shapes that have weights."""
    net = get_network(NETWORK)
    return [(s.layers[0], GemmProblem(s.m, s.n, s.k)) for s in unique_gemm_shapes(net)
            if net.layer(s.layers[0]).has_weights]


def kernels() -> list:
    """Our kernels of the four families (dense WMMA and mma.sync with their tiles and splits, both SpMMs)."""
    return [k for k in KERNEL_SET if k.procedural_name.split("_tile")[0] in FAMILIES
            and not getattr(k, "batched", False)]


def torch_hgemm_graph_ms(p: GemmProblem, launches: int) -> float:
    """Milliseconds per launch of cuBLAS HGEMM on `p`, `launches` back to back in a CUDA graph, through
    PyTorch (CuPy cannot call cuBLAS during stream capture): median of GRAPH_REPLAYS replays."""
    import torch

    from stcsim.gpu.runner import GpuEngine

    a = torch.rand(p.m, p.k, device="cuda", dtype=torch.float16) * 2 - 1
    b = torch.rand(p.k, p.n, device="cuda", dtype=torch.float16) * 2 - 1
    c = torch.empty(p.m, p.n, device="cuda", dtype=torch.float16)
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            torch.matmul(a, b, out=c)
    graph.replay()
    torch.cuda.synchronize()
    start, end, times = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True), []
    for _ in range(GpuEngine.GRAPH_REPLAYS):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / launches)
    return float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    """CLI: measure every shape and write the CSV."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--check-flop", type=float, default=4e9, help="check results on the host up to this")
    a = ap.parse_args(argv)
    import cupy as cp

    from stcsim.gpu.runner import GpuEngine, graph_times

    engine, check_engine = GpuEngine(repeats=a.repeats), GpuEngine(repeats=0)
    graphed = GpuEngine(repeats=a.repeats, graph=True)

    def in_graph(fn) -> str:
        """Milliseconds per call of `fn`, --repeats calls back to back in a CUDA graph."""
        return f"{graph_times(cp, fn, a.repeats, GpuEngine.GRAPH_REPLAYS)['gpu_time_ms']:.5f}"

    rng = np.random.default_rng(0)
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for layer, p in weight_shapes():
            a16 = cp.asarray(rng.uniform(-1, 1, (p.m, p.k)).astype(np.float16))
            b16 = cp.asarray(rng.uniform(-1, 1, (p.k, p.n)).astype(np.float16))
            c16 = cp.empty((p.m, p.n), cp.float16)
            hgemm = partial(cp.matmul, a16, b16, out=c16)
            med, fastest = _time(cp, hgemm, a.repeats)
            w.writerow([layer, p.m, p.n, p.k, "cublas_hgemm", "dense", f"{med:.5f}", f"{fastest:.5f}",
                        f"{torch_hgemm_graph_ms(p, a.repeats):.5f}", ""])
            c32 = cp.empty((p.m, p.n), cp.float32)  # what a split-K launch adds into: zeroed first
            zero = partial(c32.fill, 0)
            med, fastest = _time(cp, zero, a.repeats)
            w.writerow([layer, p.m, p.n, p.k, "memset_c_f32", "dense", f"{med:.5f}", f"{fastest:.5f}",
                        in_graph(zero), ""])
            for kernel in kernels():
                for spec, sparsity in PATTERNS[kernel.pattern_name]:
                    pattern = get(spec)
                    if not kernel.supports(pattern)[0] or not kernel.can_implement(p, pattern)[0]:
                        continue
                    x, y = random_operands(p, rng)
                    operands = kernel.prepare(x, y, pattern, sparsity)
                    err = float("nan")
                    if 2.0 * p.m * p.n * p.k <= a.check_flop:  # one launch: split-K adds into its C
                        c, _ = launch(kernel, check_engine, operands)
                        err = relative_error(c, kernel.reference(operands))
                    _, stats = launch(kernel, engine, operands)
                    _, back_to_back = launch(kernel, graphed, operands)
                    ms = (f"{stats['gpu_time_ms']:.5f}", f"{stats['gpu_time_ms_min']:.5f}",
                          f"{back_to_back['gpu_time_ms']:.5f}")
                    w.writerow([layer, p.m, p.n, p.k, kernel.procedural_name, spec, *ms, f"{err:.2e}"])
            f.flush()
            print(f"{layer} {p.m}x{p.n}x{p.k}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

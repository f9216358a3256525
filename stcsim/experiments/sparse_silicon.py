"""The sparse silicon table: every sparse kernel a real GPU runs, measured on the H100 and simulated on h100.

Cases: each registered kernel that runs on silicon (``stcsim.kernels.registry.silicon_kernels``: no research
instruction in its PTX) and consumes a sparse pattern, on the prunable GEMM shapes of ResNet-50 and BERT-base
(``stcsim.workloads``), at one sparsity, plus the dense mma.sync GEMMs on the same shapes. A kernel runs
with the first pattern of its family it supports: the family's default instance, else one of EXAMPLE_SPECS.
Kernels merged later join by registration alone.

    python -m stcsim.experiments.sparse_silicon cases                                  # list them (anywhere)
    ncu --clock-control none --metrics <calibrate.METRICS> --csv --log-file ncu.csv \\
        python -m stcsim.experiments.sparse_silicon measure --order order.csv          # on the GPU, CuPy
    python -m stcsim.experiments.sparse_silicon collect --ncu ncu.csv --order order.csv --out measured.csv
    python -m stcsim.experiments.sparse_silicon table measured.csv --out table.csv  # simulated on h100

``--problems sparsert`` (cases, warm, measure) replaces the layer shapes by SparseRT's 20 problems (paper 003,
stcsim.experiments.sparsert_problems) with the generated kernel, the CSR SpMM and the dense fp32 SIMT GEMM
(the baseline of their speedups, as in the paper), at ``--sparsity`` (0.9 there). Their generated PTX runs to
hundreds of thousands of lines, which the driver's JIT compiles for tens of seconds each: ``warm --jobs N``
loads every case's module in N processes first, so the driver's JIT cache (CUDA_CACHE_MAXSIZE large enough)
holds them when ``measure`` runs.

``measure`` launches every case twice (warm-up, measured) through the CuPy runner, checks the result against
the kernel's numpy reference and records the launch order; ``collect`` joins ncu's ``gpc__cycles_elapsed.max``
(as stcsim.experiments.calibrate); ``table`` simulates every measured case with the same seeded operands and
writes per case both cycle counts, the error, and the speedup over the fastest dense mma.sync GEMM of the
shape on silicon and in simulation, with a per-kernel summary (benchmarks/gpu/sparse_silicon.sh runs it all).
"""

from __future__ import annotations

import argparse
import csv
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, fields
from fnmatch import fnmatchcase

import numpy as np
import pandas as pd

from stcsim.experiments.calibrate import read_ncu_csv
from stcsim.experiments.sparsert_problems import CSR, DENSE_SIMT, PROBLEMS
from stcsim.harness.files import write_csv_atomic
from stcsim.kernels import GemmProblem, Kernel, get_kernel, kernels_for, random_operands, relative_error
from stcsim.kernels.descriptors.spmm_sparsert import SparseRtKernel
from stcsim.kernels.protocol import ptx_for
from stcsim.kernels.registry import kernel_pattern, silicon_kernels
from stcsim.kernels.run import DeviceEngine, launch
from stcsim.sparsity import Pattern, get
from stcsim.workloads import get_network, unique_gemm_shapes

NETWORKS = ("resnet50", "bert_base")
SPARSITY = 0.75
"""Paper 002's headline sparsity; 2:4 reaches it with extra zeros (same work), TVW as TW 50 % + 2:4."""
DENSE_INSTRUCTION = "mma.sync"
DENSE = "dense"


@dataclass(frozen=True)
class Case:
    """One launch of the table: a kernel with its pattern on one layer shape of a network."""

    network: str
    layer: str
    kernel: str
    pattern: str
    sparsity: float
    m: int
    n: int
    k: int

    @property
    def problem(self) -> GemmProblem:
        """The GEMM of the case."""
        return GemmProblem(self.m, self.n, self.k)


CASE_COLUMNS = tuple(f.name for f in fields(Case))


def layer_shapes(networks: Iterable[str] = NETWORKS, batch: int = 1) -> list[tuple[str, str, GemmProblem]]:
    """(network, first layer name, problem) of every prunable unique GEMM shape of the networks."""
    out = []
    for name in networks:
        for shape in unique_gemm_shapes(get_network(name, batch=batch)):
            if shape.prunable:
                out.append((name, shape.layers[0], GemmProblem(shape.m, shape.n, shape.k)))
    return out


def dense_kernels() -> tuple[Kernel, ...]:
    """The dense mma.sync GEMMs (the baseline of every speedup)."""
    return tuple(k for k in kernels_for(DENSE) if getattr(k, "instruction", "").startswith(DENSE_INSTRUCTION))


def table_kernels(selector: str = "*") -> tuple[list[tuple[Kernel, Pattern]], list[str]]:
    """The sparse silicon kernels `selector` picks with their pattern, then the dense mma.sync GEMMs; and one
    line per sparse kernel skipped for want of a pattern. `selector`: comma-separated globs of kernel names,
    a glob with a leading '!' excludes (e.g. '*,!*sparsert*'); a dense kernel other than the mma.sync
    baselines joins when a glob other than '*' picks it (e.g. 'gemm_wgmma*': the Hopper GEMMs, dense and
    sparse; the speedups are then over the fastest dense kernel of the shape)."""
    globs = [g.strip() for g in selector.split(",") if g.strip()]
    include = [g for g in globs if not g.startswith("!")]
    exclude = [g[1:] for g in globs if g.startswith("!")]
    chosen, skipped = [], []
    baselines = dense_kernels()
    for kernel in silicon_kernels():
        name = kernel.procedural_name
        picked = any(fnmatchcase(name, g) for g in include) and not any(fnmatchcase(name, g) for g in exclude)
        if kernel.pattern_name == DENSE and picked and kernel not in baselines and "*" not in include:
            chosen.append((kernel, get(DENSE)))  # another dense GEMM, named by a glob of its own
        if kernel.pattern_name == DENSE or not picked:
            continue
        pattern = kernel_pattern(kernel)
        if pattern is None:
            skipped.append(f"{kernel.procedural_name}: no pattern of EXAMPLE_SPECS fits it")
        else:
            chosen.append((kernel, pattern))
    return chosen + [(k, get(DENSE)) for k in baselines], skipped


def pruning_refusal(pattern: Pattern, sparsity: float) -> str:
    """Why `pattern` cannot prune to `sparsity` (e.g. below what it keeps at most), '' when it can."""
    try:
        pattern.prune(np.random.default_rng(0).uniform(-1, 1, (64, 64)), sparsity)
    except ValueError as err:
        return str(err)
    return ""


def build_cases(
    shapes: Sequence[tuple[str, str, GemmProblem]], sparsity: float = SPARSITY, selector: str = "*"
) -> tuple[list[Case], list[str]]:
    """Every (kernel, shape) case the kernel can implement, and why the others are left out."""
    kernels, skipped = table_kernels(selector)
    cases = []
    for kernel, pattern in kernels:
        s = 0.0 if pattern.name == DENSE else sparsity
        refused = pruning_refusal(pattern, s)
        if refused:
            skipped.append(f"{kernel.procedural_name}: {refused}")
            continue
        for network, layer, p in shapes:
            ok, why = kernel.can_implement(p, pattern)
            if not ok:
                skipped.append(f"{kernel.procedural_name} at {p}: {why}")
                continue
            cases.append(Case(network, layer, kernel.procedural_name, pattern.spec(), s, p.m, p.n, p.k))
    return cases, skipped


def sparsert_cases(sparsity: float) -> list[Case]:
    """SparseRT's 20 problems (W is M x K, X is K x N): the generated kernel (default split), the CSR SpMM
    and the dense fp32 SIMT GEMM on each."""
    kernels = ((SparseRtKernel().procedural_name, "sparsert", sparsity), (CSR, "unstructured", sparsity),
               (DENSE_SIMT, DENSE, 0.0))
    return [Case("sparsert_problems", f"problem {number}", name, pattern, s, m, n, k)
            for number, (m, k, n) in PROBLEMS.items() for name, pattern, s in kernels]


def case_ptx(case: Case, seed: int) -> str:
    """The PTX file a launch of `case` loads (for a generated kernel, generated from the seeded operands)."""
    kernel = get_kernel(case.kernel)
    a, b = random_operands(case.problem, np.random.default_rng(seed))
    return str(ptx_for(kernel, kernel.prepare(a, b, get(case.pattern), case.sparsity)))


def jit_module(path: str) -> float:
    """Load one generated SparseRT module on the GPU (the driver compiles it and caches the result); the
    host seconds it took."""
    import time

    import cupy

    start = time.perf_counter()
    cupy.RawModule(path=path).get_function(SparseRtKernel.entry)
    return time.perf_counter() - start


def warm(cases: Sequence[Case], seed: int, jobs: int) -> None:
    """Compile the generated SparseRT module of every case on the GPU in `jobs` processes, largest first
    (the other kernels' modules are small)."""
    generated = [c for c in cases if c.pattern == "sparsert"]
    paths = sorted({case_ptx(c, seed) for c in generated}, key=lambda p: -os.path.getsize(p))
    with ProcessPoolExecutor(jobs) as pool:
        for path, seconds in zip(paths, pool.map(jit_module, paths), strict=True):
            print(f"jit {seconds:7.1f} s  {path}", flush=True)


def run_case(case: Case, engine: DeviceEngine, seed: int) -> tuple[float, object]:
    """Launch one case with operands drawn from `seed`: (relative error against numpy, engine stats)."""
    kernel = get_kernel(case.kernel)
    a, b = random_operands(case.problem, np.random.default_rng(seed))
    operands = kernel.prepare(a, b, get(case.pattern), case.sparsity)
    c, stats = launch(kernel, engine, operands)
    # a split-K kernel adds its slices into C (which starts at zero): after the CuPy runner's warm-up and
    # timed launches C holds that many products (every split-K variant failed its check on silicon as 1.0)
    launches = 1 + getattr(engine, "repeats", 0) if getattr(kernel, "splits", 1) > 1 else 1
    return relative_error(c / launches, kernel.reference(operands)), stats


def measure(cases: Sequence[Case], order_path: str, seed: int = 0) -> None:
    """On the GPU (under ncu): every case once through the CuPy runner (a warm-up launch and a measured one),
    its numpy check and CUDA-event time, in launch order. Needs CuPy."""
    from stcsim.gpu.runner import GpuEngine

    engine = GpuEngine(repeats=1)
    with open(order_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["launch", *CASE_COLUMNS, "role", "rel_error", "gpu_time_ms"])
        for i, case in enumerate(cases):
            err, stats = run_case(case, engine, seed)
            values = list(asdict(case).values())
            writer.writerow([2 * i, *values, "warmup", err, ""])
            writer.writerow([2 * i + 1, *values, "measured", err, stats["gpu_time_ms"]])
            print(f"{case.kernel} {case.problem}: error {err:.2e}, {stats['gpu_time_ms']:.4f} ms", flush=True)


def collect(ncu_csv: str, order_csv: str) -> pd.DataFrame:
    """ncu's cycles joined with the launch order, one row per measured case."""
    order = pd.read_csv(order_csv)
    order["entry"] = order["kernel"].map(lambda name: get_kernel(name).entry)  # a generated one's differs
    with open(ncu_csv) as f:
        ncu = read_ncu_csv(f.read())
    ncu = ncu[ncu["kernel_name"].isin(set(order["entry"]))].reset_index(drop=True)
    if len(ncu) != len(order):
        raise ValueError(f"ncu profiled {len(ncu)} table launches, the order has {len(order)}")
    both = pd.concat([order.reset_index(drop=True), ncu], axis=1)
    if (both["entry"] != both["kernel_name"]).any():
        bad = both[both["entry"] != both["kernel_name"]].iloc[0]
        raise ValueError(f"launch order mismatch at launch {int(bad['launch'])}")
    out = both[both["role"] == "measured"].rename(columns={"gpc__cycles_elapsed.max": "measured_cycles"})
    return out[[*CASE_COLUMNS, "measured_cycles", "rel_error", "gpu_time_ms"]].reset_index(drop=True)


def simulate_case(case: Case, config: str, seed: int, ptxas_facts: bool = True) -> float:
    """Simulated cycles (gpu_sim_cycle) of one case on `config`, its numpy check asserted (`ptxas_facts`:
    the engine's ptxas view, else the PTX-only one; stcsim.sim.ptxas_facts)."""
    from stcsim.sim import Engine

    err, stats = run_case(case, Engine(config, ptxas_facts=ptxas_facts), seed)
    kernel = get_kernel(case.kernel)
    if not err < kernel.tolerance:
        raise AssertionError(f"{case.kernel} at {case.problem} misses numpy on the engine: {err:.3e}")
    return float(stats["gpu_sim_cycle"])


def simulate(cases: Sequence[Case], config: str = "h100", seed: int = 0, jobs: int = 1,
             ptxas_facts: bool = True) -> list[float]:
    """Simulated cycles of every case (in parallel over `jobs` processes when jobs > 1)."""
    if jobs <= 1:
        return [simulate_case(c, config, seed, ptxas_facts) for c in cases]
    n = len(cases)
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(simulate_case, cases, [config] * n, [seed] * n, [ptxas_facts] * n))


def cases_of(frame: pd.DataFrame) -> list[Case]:
    """The cases of a measured frame (its CASE_COLUMNS)."""
    return [Case(**{c: getattr(r, c) for c in CASE_COLUMNS}) for r in frame.itertuples()]


def speedup_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Add the error of simulation against silicon and, per shape, the speedup over the fastest dense
    mma.sync GEMM on silicon and in simulation (frame: CASE_COLUMNS, measured_cycles, sim_cycles)."""
    out = frame.copy()
    out["sim_error"] = (out["sim_cycles"] - out["measured_cycles"]) / out["measured_cycles"]
    dense = out[out["pattern"] == DENSE].groupby(["m", "n", "k"])[["measured_cycles", "sim_cycles"]].min()
    dense = dense.add_prefix("dense_")
    out = out.join(dense, on=["m", "n", "k"])
    out["speedup_silicon"] = out["dense_measured_cycles"] / out["measured_cycles"]
    out["speedup_sim"] = out["dense_sim_cycles"] / out["sim_cycles"]
    return out


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per kernel: cases, mean absolute simulation error, and geometric-mean speedups on both sides."""

    def geomean(x: pd.Series) -> float:
        return float(np.exp(np.log(x).mean()))

    grouped = table.groupby(["kernel", "pattern"], sort=False)
    return pd.DataFrame({
        "cases": grouped.size(),
        "mean_abs_sim_error": grouped["sim_error"].apply(lambda e: float(e.abs().mean())),
        "speedup_silicon_geomean": grouped["speedup_silicon"].apply(geomean),
        "speedup_sim_geomean": grouped["speedup_sim"].apply(geomean),
    }).reset_index()


def write_csv(frame: pd.DataFrame, path: str, meta: Sequence[str] = ()) -> None:
    """`frame` as CSV under ``# key: value`` header lines (six significant digits), written atomically."""
    write_csv_atomic(frame, path, comments=meta, float_format="%.6g")


def read_meta(path: str) -> list[str]:
    """The ``# key: value`` header lines of a CSV written by `write_csv` (without the '# ')."""
    with open(path) as f:
        return [line[2:].rstrip("\n") for line in f if line.startswith("# ")]


def main(argv: list[str] | None = None) -> int:
    """CLI: cases | warm (GPU) | measure (GPU, under ncu) | collect | table."""
    prog = "python -m stcsim.experiments.sparse_silicon"
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("cases", "warm", "measure"):
        p = sub.add_parser(name)
        p.add_argument("--network", action="append", help=f"repeatable; default {', '.join(NETWORKS)}")
        p.add_argument("--batch", type=int, default=1)
        p.add_argument("--sparsity", type=float, default=SPARSITY)
        p.add_argument("--kernel", default="*", help="glob of sparse kernel names (dense ones always run)")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--problems", choices=("layers", "sparsert"), default="layers",
                       help="the networks' layer shapes, or SparseRT's 20 problems")
        if name == "warm":
            p.add_argument("--jobs", type=int, default=1)
        if name == "measure":
            p.add_argument("--order", required=True)
    p = sub.add_parser("collect")
    p.add_argument("--ncu", required=True)
    p.add_argument("--order", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--meta", action="append", default=[], help="a 'key: value' header line (repeatable)")
    p = sub.add_parser("table")
    p.add_argument("measured")
    p.add_argument("--out", required=True)
    p.add_argument("--summary", default="", help="also write the per-kernel summary CSV here")
    p.add_argument("--config", default="h100")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--no-ptxas-facts", action="store_true",
                   help="the PTX-only view: no ptxas registers or wgmma serialization")
    a = ap.parse_args(argv)
    if a.cmd in ("cases", "warm", "measure"):
        if a.problems == "sparsert":
            cases, skipped = sparsert_cases(a.sparsity), []
        else:
            cases, skipped = build_cases(layer_shapes(a.network or NETWORKS, a.batch), a.sparsity, a.kernel)
        for line in skipped:
            print(f"skipped: {line}")
        if a.cmd == "cases":
            print(pd.DataFrame([asdict(c) for c in cases]).to_string(index=False))
        elif a.cmd == "warm":
            warm(cases, a.seed, a.jobs)
        else:
            measure(cases, a.order, a.seed)
    elif a.cmd == "collect":
        write_csv(collect(a.ncu, a.order), a.out, a.meta)
    else:
        measured = pd.read_csv(a.measured, comment="#")
        measured["sim_cycles"] = simulate(cases_of(measured), a.config, a.seed, a.jobs, not a.no_ptxas_facts)
        table = speedup_table(measured)
        view = "PTX only" if a.no_ptxas_facts else "with ptxas facts"
        write_csv(table, a.out, [*read_meta(a.measured), f"simulated on: {a.config} ({view})"])
        print(summary(table).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        if a.summary:
            write_csv(summary(table), a.summary, [*read_meta(a.measured), f"simulated on: {a.config}"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Measure the sparse Tensor Core kernels on one layer: ``python -m stcsim.experiments.sparse_tc_measure``.

Prints two markdown tables (docs/kernels.md keeps the ResNet-50 256 x 196 x 2304 ones):

* paper 001: the dense WMMA GEMMs and the SHMMA vector-wise GEMM (K = 2, 4, 8) on ``v100``, ``v100+stc`` and
  ``v100+stc-pingpong``, with their speedup over the tiled dense WMMA GEMM on ``v100`` (a kernel a config
  cannot time, SHMMA on plain v100, is reported as refused);
* paper 004: the ExTensor chunk SpMM under its five schemes on ``titanv+extensor`` at each sparsity, with the
  speedup over the 16-only scheme, the Tensor Core's PhaseLat work and the plan's modelled critical slice.

Every kernel of one table multiplies the same seeded random weights and activations, checked against numpy
(relative error column). Host seconds are the CPU seconds of the simulation (prepare excluded; the engine
runs on one host core), so that a loaded machine does not inflate them.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np

from stcsim.kernels.descriptors.extensor_plans import scheme_plans
from stcsim.kernels.descriptors.extensor_spmm import EXTENSOR_KERNELS
from stcsim.kernels.descriptors.shmma import SHMMA_KERNELS
from stcsim.kernels.problem import GemmProblem
from stcsim.kernels.protocol import Kernel
from stcsim.kernels.registry import get_kernel
from stcsim.kernels.run import launch
from stcsim.kernels.verify import random_operands, relative_error
from stcsim.sim import Engine, LaunchError
from stcsim.sparsity import Pattern, get

DENSE_BASELINE = "gemm_wmma_f16_f32_tile64x64x32_warp32x32"
DENSE_KERNELS = (DENSE_BASELINE, "gemm_wmma_global_f16_f32_tile32x32x16_warp16x16")
STC_CONFIGS = ("v100", "v100+stc", "v100+stc-pingpong")
EXTENSOR_CONFIG = "titanv+extensor"
PAPER_004_DYNAMIC = {0.9: 1.36, 0.96: 1.37}


@dataclass(frozen=True)
class Measured:
    """One simulation: cycles (None when the config refuses the kernel), stats, error, host seconds."""

    cycles: float | None
    stats: dict
    rel_error: float
    host_seconds: float


def simulate(kernel: Kernel, config: str, w: np.ndarray, x: np.ndarray, pattern: Pattern,
             sparsity: float) -> Measured:
    """Prepare and launch `kernel` on `config`; a LaunchError from the timing model is a refusal."""
    operands = kernel.prepare(w, x, pattern, sparsity)
    start = time.process_time()
    try:
        d, stats = launch(kernel, Engine(config), operands)
    except LaunchError:
        return Measured(None, {}, float("nan"), time.process_time() - start)
    seconds = time.process_time() - start
    return Measured(stats["gpu_sim_cycle"], stats, relative_error(d, kernel.reference(operands)), seconds)


def stc_table(p: GemmProblem, seed: int) -> str:
    """Paper 001's Tensor Core configurations: dense WMMA and SHMMA (75 % is K = 4) on the three V100s."""
    w, x = random_operands(p, np.random.default_rng(seed))
    cases = [(get_kernel(name), get("dense"), 0.0) for name in DENSE_KERNELS]
    cases += [(k, get(f"vw:L=16,K={k.nnz}"), 1.0 - k.nnz / 16) for k in SHMMA_KERNELS]
    rows = ["| kernel | sparsity | config | cycles | speedup vs dense WMMA on v100 | rel. error | "
            "host CPU s |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    base = None
    for kernel, pattern, sparsity in cases:
        for config in STC_CONFIGS:
            m = simulate(kernel, config, w, x, pattern, sparsity)
            if kernel.procedural_name == DENSE_BASELINE and config == "v100":
                base = m.cycles
            if m.cycles is None:
                rows.append(f"| `{kernel.procedural_name}` | {sparsity:.1%} | {config} | refused | - | - | "
                            f"{m.host_seconds:.1f} |")
                continue
            speedup = f"{base / m.cycles:.2f}x" if base else "-"
            rows.append(f"| `{kernel.procedural_name}` | {sparsity:.1%} | {config} | {m.cycles:.0f} | "
                        f"{speedup} | {m.rel_error:.1e} | {m.host_seconds:.1f} |")
    return "\n".join(rows)


def extensor_table(p: GemmProblem, sparsities: tuple[float, ...], seed: int) -> str:
    """Paper 004's five schemes on titanv+extensor, each sparsity on one pruned weight matrix."""
    w, x = random_operands(p, np.random.default_rng(seed))
    pattern = get("extensor")
    rows = ["| sparsity | scheme | cycles | speedup vs l16 | wmma.smma | Tensor Core PhaseLat cycles | "
            "critical slice (model) | model speedup | rel. error | host CPU s |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for sparsity in sparsities:
        mask = pattern.prune(w, sparsity)
        base_cycles = base_model = None
        for kernel in EXTENSOR_KERNELS:
            critical = max(plan.latency for plan in scheme_plans(mask, kernel.scheme, pattern))
            m = simulate(kernel, EXTENSOR_CONFIG, w, x, pattern, sparsity)
            if kernel.scheme == "l16":
                base_cycles, base_model = m.cycles, critical
            paper = f" (paper 004: {PAPER_004_DYNAMIC[sparsity]:.2f}x)" if (
                kernel.scheme == "dynamic" and sparsity in PAPER_004_DYNAMIC) else ""
            rows.append(
                f"| {sparsity:.0%} | {kernel.scheme} | {m.cycles:.0f} | "
                f"{base_cycles / m.cycles:.2f}x{paper} | "
                f"{m.stats['extensor_smma_insts']:.0f} | {m.stats['extensor_smma_latency_cycles']:.0f} | "
                f"{critical} | {base_model / critical:.2f}x | {m.rel_error:.1e} | {m.host_seconds:.1f} |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Command line: the shape (M x N x K), the seed, which tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="256x196x2304", help="M x N x K (default: ResNet-50 conv4_x 3x3)")
    parser.add_argument("--seed", type=int, default=2019)
    parser.add_argument("--sparsities", default="0.9,0.96", help="ExTensor sparsities, comma separated")
    parser.add_argument("--table", choices=("stc", "extensor", "both"), default="both")
    opts = parser.parse_args(argv)
    try:
        m, n, k = (int(v) for v in opts.shape.lower().split("x"))
        sparsities = tuple(float(s) for s in opts.sparsities.split(","))
    except ValueError:
        parser.error(f"--shape must be MxNxK and --sparsities numbers: {opts.shape!r}, {opts.sparsities!r}")
    p = GemmProblem(m, n, k)
    if opts.table in ("stc", "both"):
        print(f"Paper 001, Tensor Core kernels, {p} (seed {opts.seed}):\n\n{stc_table(p, opts.seed)}\n")
    if opts.table in ("extensor", "both"):
        print(f"Paper 004, {EXTENSOR_CONFIG}, {p} (seed {opts.seed}):\n\n"
              f"{extensor_table(p, sparsities, opts.seed)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

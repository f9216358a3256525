"""SparseRT's 20 SpMM problems (paper 003, digest-003) and a side-by-side run on the engine: the generated
kernel vs the dense SIMT SGEMM and the CSR SpMM on the same pruned weights.

``python -m stcsim.experiments.sparsert_problems --problems 11,16 --config h100 [--sparsity 0.9] [--tune]``
prints, per problem, the simulated cycles (``gpu_sim_cycle``) of the three kernels, the speedups of the
generated one, its generation seconds, PTX lines and weight mode (``--tune``: the autotuner's best setting
over `sparsert_tune.candidates`; slow on the engine). ``--gpu`` runs the same on the local CUDA GPU (CuPy),
scored and tuned by measured milliseconds. Every result is checked against numpy.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stcsim.kernels.codegen.sparsert_plan import SplitParams
from stcsim.kernels.descriptors.sparsert_tune import Objective, autotune, engine_objective, gpu_objective
from stcsim.kernels.descriptors.spmm_sparsert import SparseRtKernel
from stcsim.kernels.operands import uniform_float32
from stcsim.kernels.problem import GemmProblem
from stcsim.kernels.protocol import Kernel
from stcsim.kernels.registry import get_kernel
from stcsim.kernels.run import DeviceEngine, launch
from stcsim.kernels.verify import relative_error
from stcsim.sim import Engine
from stcsim.sparsity import get

PROBLEMS: dict[int, tuple[int, int, int]] = {
    1: (64, 256, 3136), 2: (256, 64, 3136), 3: (128, 512, 784), 4: (512, 128, 784), 5: (256, 1024, 196),
    6: (1024, 256, 196), 7: (512, 2048, 49), 8: (2048, 512, 49), 9: (2048, 512, 256), 10: (512, 2048, 256),
    11: (512, 512, 256), 12: (64, 32, 12544), 13: (128, 64, 3136), 14: (128, 128, 3136), 15: (256, 128, 784),
    16: (256, 256, 784), 17: (512, 256, 196), 18: (512, 512, 196), 19: (1024, 512, 49), 20: (1024, 1024, 49),
}  # fmt: skip
"""Problem number: (M, K, N) of the paper's table (W is M x K, X is K x N)."""

DENSE_SIMT = "gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4"
CSR = "spmm_csr_f32_f32_tile4x64_warp1x64"
STAT = "gpu_sim_cycle"
GPU_STAT = "gpu_time_ms"


@dataclass(frozen=True)
class Comparison:
    """The stat (cycles or milliseconds) of the three kernels on one problem, and how the generated kernel
    was made."""

    number: int
    problem: GemmProblem
    dense: float
    csr: float
    sparsert: float
    params: SplitParams
    codegen_seconds: float
    ptx_lines: int
    weights: str

    def row(self) -> str:
        """One line of the printed table."""
        p = self.problem
        return (f"{self.number:>2} {p.m:>5} {p.k:>5} {p.n:>6} {self.dense:>10,.6g} {self.csr:>10,.6g} "
                f"{self.sparsert:>10,.6g} {self.dense / self.sparsert:>7.2f} "
                f"{self.csr / self.sparsert:>7.2f} {self.codegen_seconds:>7.2f} "
                f"{self.ptx_lines:>8,} {self.weights:>5} {self.params.tag}")


HEADER = (f"{'#':>2} {'M':>5} {'K':>5} {'N':>6} {'dense':>10} {'csr':>10} {'sparsert':>10} {'x dense':>7} "
          f"{'x csr':>7} {'gen s':>7} {'ptx ln':>8} {'wts':>5} setting")


@dataclass(frozen=True)
class Target:
    """Where the kernels run: an engine per launch, the stat that scores a launch, the tuning objective."""

    name: str
    engine: Callable[[], DeviceEngine]
    stat: str
    objective: Objective


def simulator(config: str) -> Target:
    """The engine on a GPU config, scored by simulated cycles."""
    return Target(config, lambda: Engine(config), STAT, engine_objective(config, STAT))


def real_gpu(repeats: int = 10) -> Target:
    """The local CUDA GPU (stcsim.gpu.GpuEngine over CuPy), scored by the median measured milliseconds."""
    from stcsim.gpu import GpuEngine

    gpu = GpuEngine(repeats=repeats)
    return Target("gpu", lambda: gpu, GPU_STAT, gpu_objective(gpu))


def _measure(kernel: Kernel, target: Target, w: np.ndarray, x: np.ndarray, pattern: str,
             sparsity: float) -> float:
    """The target's stat for one launch of `kernel`, checked against the kernel's reference."""
    operands = kernel.prepare(w, x, get(pattern), sparsity)
    result, stats = launch(kernel, target.engine(), operands)
    err = relative_error(result, kernel.reference(operands))
    if not err < kernel.tolerance:
        raise AssertionError(f"{kernel.procedural_name} at {operands.problem}: relative error {err:.3e}")
    return float(stats[target.stat])


def compare(number: int, target: Target, sparsity: float, tune: bool, seed: int = 0) -> Comparison:
    """Run problem `number` (seeded uniform weights and activations) on the three kernels."""
    m, k, n = PROBLEMS[number]
    rng = np.random.default_rng(seed)
    w = uniform_float32(rng, (m, k))
    x = uniform_float32(rng, (k, n))
    masked = np.where(get("sparsert").prune(w, sparsity), w, np.float32(0))
    dense = _measure(get_kernel(DENSE_SIMT), target, masked, x, "dense", 0.0)
    csr = _measure(get_kernel(CSR), target, w, x, "unstructured", sparsity)
    params = autotune(w, x, sparsity, target.objective).best if tune else SplitParams()
    kernel = SparseRtKernel(params)
    sparsert = _measure(kernel, target, w, x, "sparsert", sparsity)
    gen = kernel.generated(kernel.prepare(w, x, get("sparsert"), sparsity))
    return Comparison(number, GemmProblem(m, n, k), dense, csr, sparsert, params, gen.seconds, gen.lines,
                      gen.weights)


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default="11", help="comma-separated problem numbers 1..20")
    ap.add_argument("--config", default="h100", help="GPU config of the simulated run")
    ap.add_argument("--gpu", action="store_true", help="run on the local CUDA GPU instead (CuPy)")
    ap.add_argument("--sparsity", type=float, default=0.9)
    ap.add_argument("--tune", action="store_true", help="autotune the split first (slow on the engine)")
    a = ap.parse_args(argv)
    numbers = [int(s) for s in a.problems.split(",")]
    unknown = [i for i in numbers if i not in PROBLEMS]
    if unknown:
        ap.error(f"unknown problems {unknown}; the paper's are 1..20")
    target = real_gpu() if a.gpu else simulator(a.config)
    print(f"{target.name}, {a.sparsity:.0%} sparse, {target.stat}")
    print(HEADER)
    for number in numbers:
        print(compare(number, target, a.sparsity, a.tune).row(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""SparseRT's 20 SpMM problems (paper 003, digest-003) and a side-by-side run on the engine: the generated
kernel vs the dense SIMT SGEMM and the CSR SpMM on the same pruned weights.

``python -m stcsim.kernels.sparsert_problems --problems 11,16 --config h100 [--sparsity 0.9] [--tune]``
prints, per problem, the simulated cycles (``gpu_sim_cycle``) of the three kernels, the speedups of the
generated one, its generation seconds, PTX lines and weight mode (``--tune``: the autotuner's best setting
over `sparsert_tune.candidates`, scored by simulated cycles; slow). Every result is checked against numpy.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np

from stcsim.kernels.problem import GemmProblem
from stcsim.kernels.registry import get_kernel
from stcsim.kernels.run import launch
from stcsim.kernels.sparsert_plan import SplitParams
from stcsim.kernels.sparsert_tune import autotune, check_result, engine_objective
from stcsim.kernels.spmm_sparsert import SparseRtKernel
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


@dataclass(frozen=True)
class Comparison:
    """Simulated cycles of the three kernels on one problem, and how the generated kernel was made."""

    number: int
    problem: GemmProblem
    dense_cycles: int
    csr_cycles: int
    sparsert_cycles: int
    params: SplitParams
    codegen_seconds: float
    ptx_lines: int
    weights: str

    def row(self) -> str:
        """One line of the printed table."""
        p = self.problem
        return (f"{self.number:>2} {p.m:>5} {p.k:>5} {p.n:>6} {self.dense_cycles:>10,} "
                f"{self.csr_cycles:>10,} {self.sparsert_cycles:>10,} "
                f"{self.dense_cycles / self.sparsert_cycles:>7.2f} "
                f"{self.csr_cycles / self.sparsert_cycles:>7.2f} {self.codegen_seconds:>7.2f} "
                f"{self.ptx_lines:>8,} {self.weights:>5} {self.params.tag}")


HEADER = (f"{'#':>2} {'M':>5} {'K':>5} {'N':>6} {'dense':>10} {'csr':>10} {'sparsert':>10} {'x dense':>7} "
          f"{'x csr':>7} {'gen s':>7} {'ptx ln':>8} {'wts':>5} setting")


def _cycles(name: str, config: str, w: np.ndarray, x: np.ndarray, pattern: str, sparsity: float) -> int:
    """Simulated cycles of a registered kernel on fresh engine, checked against its reference."""
    kernel = get_kernel(name)
    operands = kernel.prepare(w, x, get(pattern), sparsity)
    result, stats = launch(kernel, Engine(config), operands)
    err = relative_error(result, kernel.reference(operands))
    if not err < kernel.tolerance:
        raise AssertionError(f"{name} at {operands.problem}: relative error {err:.3e}")
    return int(stats[STAT])


def compare(number: int, config: str, sparsity: float, tune: bool, seed: int = 0) -> Comparison:
    """Run problem `number` (seeded uniform weights and activations) on the three kernels."""
    m, k, n = PROBLEMS[number]
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float32)
    x = rng.uniform(-1.0, 1.0, (k, n)).astype(np.float32)
    sparse = get("sparsert")
    masked = np.where(sparse.prune(w, sparsity), w, np.float32(0))
    dense = _cycles(DENSE_SIMT, config, masked, x, "dense", 0.0)
    csr = _cycles(CSR, config, w, x, "unstructured", sparsity)
    params = autotune(w, x, sparsity, engine_objective(config, STAT)).best if tune else SplitParams()
    kernel = SparseRtKernel(params)
    operands = kernel.prepare(w, x, sparse, sparsity)
    start = time.perf_counter()
    gen = kernel.generated(operands)
    seconds = gen.seconds if not gen.cached else time.perf_counter() - start
    result, stats = launch(kernel, Engine(config), operands)
    check_result(kernel, operands, result)
    return Comparison(number, GemmProblem(m, n, k), dense, csr, int(stats[STAT]), params, seconds, gen.lines,
                      gen.weights)


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default="11", help="comma-separated problem numbers 1..20")
    ap.add_argument("--config", default="h100")
    ap.add_argument("--sparsity", type=float, default=0.9)
    ap.add_argument("--tune", action="store_true", help="autotune the split on the engine (slow)")
    a = ap.parse_args(argv)
    numbers = [int(s) for s in a.problems.split(",")]
    unknown = [i for i in numbers if i not in PROBLEMS]
    if unknown:
        ap.error(f"unknown problems {unknown}; the paper's are 1..20")
    print(f"{a.config}, {a.sparsity:.0%} sparse, simulated {STAT}")
    print(HEADER)
    for number in numbers:
        print(compare(number, a.config, a.sparsity, a.tune).row(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

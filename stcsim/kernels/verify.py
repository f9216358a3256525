"""Check a kernel against its numpy reference (through its pattern's decode) on fresh random operands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stcsim.kernels.operands import uniform_float32
from stcsim.kernels.problem import GemmProblem
from stcsim.kernels.protocol import Kernel, as_pattern
from stcsim.kernels.run import DeviceEngine, launch
from stcsim.sparsity.base import Pattern


def relative_error(c: np.ndarray, ref: np.ndarray) -> float:
    """max|C - ref| / max|ref| (inf when C holds NaN or inf, so unwritten elements fail every check)."""
    c64 = np.asarray(c, dtype=np.float64)
    if c64.shape != ref.shape or not np.all(np.isfinite(c64)):
        return float("inf")
    return float(np.max(np.abs(c64 - ref)) / max(float(np.max(np.abs(ref))), np.finfo(np.float64).tiny))


def random_operands(p: GemmProblem, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A (m x k) and B (k x n) uniform in [-1, 1) as float32: random, never all zeros; a batched problem's are
    (batch x m x k) and (batch x k x n)."""
    lead = (p.batch,) if p.batch > 1 else ()
    a = uniform_float32(rng, (*lead, p.m, p.k))
    b = uniform_float32(rng, (*lead, p.k, p.n))
    return a, b


@dataclass(frozen=True)
class GemmCheck:
    """Outcome of one verify_gemm: the error against numpy, the tolerance, and the engine's stats."""

    kernel: str
    problem: GemmProblem
    pattern: str
    seed: int
    rel_error: float
    tolerance: float
    stats: Any

    @property
    def ok(self) -> bool:
        """Whether the error is under the kernel's tolerance."""
        return self.rel_error < self.tolerance

    def __str__(self) -> str:
        verdict = "ok" if self.ok else "FAILED"
        return (
            f"{self.kernel} at {self.problem}, {self.pattern} (seed {self.seed}): max|C - ref| / max|ref| = "
            f"{self.rel_error:.3e} vs tolerance {self.tolerance:.0e}: {verdict}"
        )


def verify_gemm(
    kernel: Kernel,
    engine: DeviceEngine,
    p: GemmProblem,
    seed: int | None = None,
    *,
    pattern: Pattern | str = "dense",
    sparsity: float = 0.0,
) -> GemmCheck:
    """Run `kernel` on `engine` with random operands (fresh ones unless a seed is given), the weights
    pruned to `sparsity` in `pattern`, and compare with the kernel's float64 reference."""
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    a, b = random_operands(p, np.random.default_rng(seed))
    operands = kernel.prepare(a, b, as_pattern(pattern), sparsity)
    c, stats = launch(kernel, engine, operands)
    err = relative_error(c, kernel.reference(operands))
    return GemmCheck(kernel.procedural_name, p, operands.pattern.spec(), seed, err, kernel.tolerance, stats)

"""SparseRT's autotuner (paper 003, section 3.7): an exhaustive search over hand-picked split settings,
scored by a pluggable objective.

``autotune(weights, activations, sparsity, objective)`` generates the kernel of every candidate setting
(`candidates`: rows per block x columns per block x thread groups, the ones the problem and the GPU limits
allow), scores each with ``objective(kernel, operands)`` (lower is better) and returns the best with the
whole table. `engine_objective` scores with simulated cycles on the engine (and checks the result against
numpy); `gpu_objective` with measured time on a real GPU (stcsim.gpu.GpuEngine). A setting whose module an
engine refuses (e.g. ``weights=const`` past the 64 KiB constant bank) is kept in the table with its reason.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from stcsim.kernels.codegen.sparsert_plan import SplitParams
from stcsim.kernels.descriptors.spmm_sparsert import SparseRtKernel
from stcsim.kernels.operands import Operands
from stcsim.kernels.problem import GemmProblem
from stcsim.kernels.protocol import CannotImplement
from stcsim.kernels.run import DeviceEngine, launch
from stcsim.kernels.verify import relative_error
from stcsim.sim import Engine, LaunchError, PtxError
from stcsim.sparsity.unstructured import SparseRT

Objective = Callable[[SparseRtKernel, Operands], float]
"""Score of one generated kernel on prepared operands: lower is better."""

ROWS = (4, 8, 16, 32)
COLUMNS = (32, 64, 128)
GROUPS = (1, 2, 4)


class WrongResult(AssertionError):
    """A generated kernel disagreed with numpy during tuning."""


@dataclass(frozen=True)
class Trial:
    """One candidate: its setting, its score (inf when refused), the reason it was refused and the
    generation seconds."""

    params: SplitParams
    score: float
    refused: str
    codegen_seconds: float


@dataclass(frozen=True)
class TuneResult:
    """The best setting of a search and every trial in candidate order."""

    best: SplitParams
    best_score: float
    trials: tuple[Trial, ...]


def candidates(problem: GemmProblem, weights: str = "auto") -> list[SplitParams]:
    """The settings worth trying: every rows x columns x groups of ROWS x COLUMNS x GROUPS whose block is not
    wider than N needs (columns <= N rounded up to a warp, or the narrowest) and which the kernel can run."""
    widest = max(32, 32 * math.ceil(problem.n / 32))
    found = []
    for rows, cols, groups in itertools.product(ROWS, COLUMNS, GROUPS):
        if cols > widest and cols != COLUMNS[0]:
            continue
        if rows > problem.m and rows != ROWS[0]:
            continue
        params = SplitParams(rows, cols, groups, weights)
        if SparseRtKernel(params).can_implement(problem, SparseRT())[0]:
            found.append(params)
    return found


def engine_objective(config: str, stat: str = "gpu_sim_cycle") -> Objective:
    """Simulated `stat` of the launch on a fresh engine of `config`; WrongResult if the output is wrong."""

    def score(kernel: SparseRtKernel, operands: Operands) -> float:
        result, stats = launch(kernel, Engine(config), operands)
        check_result(kernel, operands, result)
        return float(stats[stat])

    return score


def gpu_objective(engine: DeviceEngine) -> Objective:
    """Median measured milliseconds on a real GPU engine (stcsim.gpu.GpuEngine); WrongResult if wrong."""

    def score(kernel: SparseRtKernel, operands: Operands) -> float:
        result, stats = launch(kernel, engine, operands)
        check_result(kernel, operands, result)
        return float(stats["gpu_time_ms"])

    return score


def check_result(kernel: SparseRtKernel, operands: Operands, result: np.ndarray) -> None:
    """WrongResult unless `result` matches the kernel's reference within its tolerance."""
    err = relative_error(result, kernel.reference(operands))
    if not err < kernel.tolerance:
        raise WrongResult(f"{kernel.procedural_name} at {operands.problem}: relative error {err:.3e}")


def autotune(
    weights: np.ndarray,
    activations: np.ndarray,
    sparsity: float,
    objective: Objective,
    settings: Sequence[SplitParams] | None = None,
) -> TuneResult:
    """The best of `settings` (default: `candidates` of the problem) for these weights pruned to `sparsity`
    (module docstring); ValueError when every setting is refused."""
    problem = GemmProblem.of(np.shape(weights), np.shape(activations))
    trials = []
    for params in candidates(problem) if settings is None else settings:
        kernel = SparseRtKernel(params)
        start = time.perf_counter()
        try:
            operands = kernel.prepare(weights, activations, SparseRT(), sparsity)
            seconds = kernel.generation_stats(operands)["codegen_seconds"]
            trials.append(Trial(params, objective(kernel, operands), "", float(seconds)))
        except (CannotImplement, PtxError, LaunchError) as err:
            trials.append(Trial(params, math.inf, str(err), time.perf_counter() - start))
    usable = [t for t in trials if not t.refused]
    if not usable:
        raise ValueError(f"no SparseRT setting runs {problem}: " + "; ".join(t.refused for t in trials))
    best = min(usable, key=lambda t: t.score)
    return TuneResult(best.params, best.score, tuple(trials))

"""What to do with a weight GEMM a pattern cannot take as it is: pad it, or run it dense. Never abort.

Every pattern can prune and encode any ``M x K`` matrix: it zero-pads to its ``shape_unit()`` (rows and
columns it needs whole: ``V`` rows for Shfl-BW, ``L`` or ``M`` reduction columns for vector-wise and
N:M, ``B x B`` blocks, 16 x 16 for ExTensor) and never keeps the padding. A shape that is not a multiple
of the unit is *unfit*: it either runs at the padded size or runs dense, as the policy says:

* ``unfit="pad"`` (default): prune and encode it; it runs at the padded shape. Unless it is *tiny*: when
  padding would multiply its size by more than ``max_pad_ratio`` (default 2; e.g. a ResNeXt 4 x 36 group
  conv under Shfl-BW V = 64, or GNMT's 1 x 1024 attention vector under 16 x 16 blocks) it runs dense.
* ``unfit="dense"``: every unfit GEMM runs dense.
* ``min_weights`` (default 0, off): GEMMs with fewer weights run dense whatever their shape (paper 002
  notes that BW "left some smaller layers (e.g., the first layer) without pruning").

The outcome of each GEMM is a :class:`PruneDecision` (what was done and why), data that a network run
writes to its CSV row. Layers that are not weight GEMMs (depthwise convs, attention score/context) are
decided by :mod:`stcsim.workloads.pruning`, which uses this module for every weight GEMM.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stcsim.sparsity.base import Pattern, SparseFormat, check_weights
from stcsim.sparsity.dense import Dense

UNFIT_ACTIONS = ("pad", "dense")
ACTIONS = ("as_is", "padded", "dense")


@dataclass(frozen=True)
class PrunePolicy:
    """How unfit and tiny GEMMs are treated (see module docstring); the defaults are the documented ones."""

    unfit: str = "pad"
    max_pad_ratio: float = 2.0
    min_weights: int = 0

    def __post_init__(self) -> None:
        """Validate the options, naming the bad one."""
        if self.unfit not in UNFIT_ACTIONS:
            raise ValueError(f"prune policy: unfit must be one of {UNFIT_ACTIONS}, got {self.unfit!r}")
        if not self.max_pad_ratio >= 1.0:
            raise ValueError(f"prune policy: max_pad_ratio must be >= 1, got {self.max_pad_ratio!r}")
        weights = self.min_weights
        if isinstance(weights, bool) or not isinstance(weights, int) or weights < 0:
            raise ValueError(f"prune policy: min_weights must be an integer >= 0, got {self.min_weights!r}")


@dataclass(frozen=True)
class PruneDecision:
    """What happens to one weight GEMM: ``action`` (as_is, padded, dense), why, and the shape it runs at."""

    pattern: str
    action: str
    reason: str
    shape: tuple[int, int]
    run_shape: tuple[int, int]

    def as_row(self) -> dict[str, object]:
        """Flat columns for a results CSV: ``prune_action``, ``prune_reason``, ``run_m``, ``run_k``."""
        return {"prune_action": self.action, "prune_reason": self.reason,
                "run_m": self.run_shape[0], "run_k": self.run_shape[1]}


@dataclass(frozen=True, eq=False)
class PrunedGemm:
    """A decided GEMM: the decision, the keep-mask (original shape) and the pattern's format.

    A dense GEMM has an all-True mask and ``fmt`` None (it runs as the plain dense matrix).
    """

    decision: PruneDecision
    mask: np.ndarray
    fmt: SparseFormat | None

    @property
    def density(self) -> float:
        """Kept fraction of the real (unpadded) weights."""
        return float(self.mask.mean())


DEFAULT_POLICY = PrunePolicy()


def padded_shape(shape: tuple[int, int], unit: tuple[int, int]) -> tuple[int, int]:
    """``shape`` rounded up to multiples of ``unit``."""
    return (-(-shape[0] // unit[0]) * unit[0], -(-shape[1] // unit[1]) * unit[1])


def _unfit_reason(pattern: Pattern, shape: tuple[int, int], unit: tuple[int, int]) -> str:
    dims = [f"{label}={size} is not a multiple of {step}"
            for label, size, step in (("M", shape[0], unit[0]), ("K", shape[1], unit[1])) if size % step]
    return f"{pattern.spec()} needs multiples of {unit[0]} x {unit[1]}: " + ", ".join(dims)


def decide(pattern: Pattern, shape: tuple[int, int], policy: PrunePolicy = DEFAULT_POLICY) -> PruneDecision:
    """The decision for an ``M x K`` weight GEMM under ``pattern`` and ``policy`` (shape only, no weights)."""
    m, k = shape
    if m < 1 or k < 1:
        raise ValueError(f"a weight GEMM needs M, K >= 1, got {shape}")
    spec = pattern.spec()
    if isinstance(pattern, Dense):
        return PruneDecision(spec, "dense", "dense pattern: nothing is pruned", shape, shape)
    if m * k < policy.min_weights:
        reason = f"tiny: {m * k} weights < min_weights={policy.min_weights}"
        return PruneDecision(spec, "dense", reason, shape, shape)
    unit = pattern.shape_unit()
    run = padded_shape(shape, unit)
    if run == shape:
        return PruneDecision(spec, "as_is", f"{m} x {k} is a multiple of {unit[0]} x {unit[1]}", shape, shape)
    unfit = _unfit_reason(pattern, shape, unit)
    if policy.unfit == "dense":
        return PruneDecision(spec, "dense", f"{unfit}; policy unfit=dense", shape, shape)
    ratio = run[0] * run[1] / (m * k)
    if ratio > policy.max_pad_ratio:
        reason = (f"tiny: {unfit}; padding to {run[0]} x {run[1]} multiplies the work by {ratio:.3g} "
                  f"> max_pad_ratio={policy.max_pad_ratio:g}")
        return PruneDecision(spec, "dense", reason, shape, shape)
    return PruneDecision(spec, "padded", f"{unfit}; zero-padded to {run[0]} x {run[1]}", shape, run)


def prune_gemm(
    weights: np.ndarray,
    pattern: Pattern,
    sparsity: float,
    policy: PrunePolicy = DEFAULT_POLICY,
    gradients: np.ndarray | None = None,
    encode: bool = True,
) -> PrunedGemm:
    """Decide, then prune (and, with ``encode``, encode) one ``M x K`` weight GEMM; never refuses a shape.

    ``gradients`` go to patterns that rank by a Taylor score (``pattern.accepts_gradients``); for any other
    pattern they are a ValueError. A sparsity the pattern cannot reach at all (2:4 below 0.5) is the
    caller's configuration error, not a shape problem: it raises ValueError at the first GEMM pruned.
    """
    w = check_weights(weights)
    if gradients is not None and not pattern.accepts_gradients:
        raise ValueError(f"{pattern.spec()} ranks by magnitude and takes no gradients")
    decision = decide(pattern, w.shape, policy)
    if decision.action == "dense":
        return PrunedGemm(decision, np.ones(w.shape, dtype=bool), None)
    extra = {} if gradients is None else {"gradients": gradients}
    mask = pattern.prune(w, sparsity, **extra)
    return PrunedGemm(decision, mask, pattern.encode(w, mask) if encode else None)

"""The progressive VectorSparse schedule of paper 001 (Algorithm 1), as an iterator of masks.

Starting from the dense matrix, step ``n`` prunes the ``n`` smallest-magnitude weights of every ``L``-vector
(so ``L - n`` stay), hands the pruned weights to a user callback that fine-tunes them and returns the
validation error, and stops once the relative error increase ``(E - E0) / E0`` exceeds ``e_delta``.
Vectors follow the orientation of :mod:`stcsim.sparsity.vectorwise` (``axis="row"``: along the reduction
dimension ``K`` of ``W``). Pruned weights stay pruned: the mask of step ``n`` is applied again after the
callback, and the next step prunes from the fine-tuned weights.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from stcsim.sparsity.base import check_weights
from stcsim.sparsity.vectorwise import VectorWise, top_k_per_vector

FineTuneEvaluate = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, float]]
"""Callback ``(weights, mask) -> (fine_tuned_weights, validation_error)``."""


@dataclass(frozen=True, eq=False)
class ScheduleStep:
    """One step of the schedule: ``n_zero`` pruned per vector, the mask, tuned weights and error."""

    n_zero: int
    kept_per_vector: int
    mask: np.ndarray
    weights: np.ndarray
    error: float
    relative_increase: float
    accepted: bool


def relative_increase(error: float, base_error: float) -> float:
    """``(E - E0) / E0``; with ``E0 == 0`` it is 0 if ``E == 0`` and infinite otherwise."""
    if base_error == 0.0:
        return 0.0 if error == 0.0 else float("inf")
    return (error - base_error) / base_error


def vectorsparse_schedule(
    weights: np.ndarray,
    L: int,
    e_delta: float,
    fine_tune_evaluate: FineTuneEvaluate,
    axis: str = "row",
) -> Iterator[ScheduleStep]:
    """Yield the steps of Algorithm 1 (paper 001) until the error bound is crossed.

    The callback is first called on the dense weights with an all-True mask to get ``E0``. Each yielded step
    has ``accepted`` True while ``(E - E0) / E0 <= e_delta``; the first step that exceeds the bound is
    yielded with ``accepted=False`` and ends the iteration (the caller keeps the last accepted step).
    The iteration also ends after ``n_zero = L - 1`` (one weight left per vector).
    """
    VectorWise(L=L, axis=axis)  # validates L and axis
    if e_delta < 0:
        raise ValueError(f"e_delta must be >= 0, got {e_delta}")
    current = check_weights(weights)
    current, base_error = fine_tune_evaluate(current.copy(), np.ones(current.shape, dtype=bool))
    for n_zero in range(1, L):
        mask = top_k_per_vector(current, L, L - n_zero, axis)
        tuned, error = fine_tune_evaluate(np.where(mask, current, 0).astype(current.dtype), mask.copy())
        current = np.where(mask, tuned, 0).astype(tuned.dtype)
        rel = relative_increase(error, base_error)
        accepted = rel <= e_delta
        yield ScheduleStep(n_zero, L - n_zero, mask, current, error, rel, accepted)
        if not accepted:
            return

"""The progressive VectorSparse schedule of paper 001 (Algorithm 1), as an iterator of masks.

Starting from the dense matrix, step ``n`` prunes the ``n`` smallest-magnitude weights of every ``L``-vector
(so ``L - n`` stay), hands the pruned weights to a user callback that fine-tunes them and returns the
validation error, and stops once the relative error increase ``(E - E0) / E0`` exceeds ``e_delta``.
Vectors follow the orientation of :mod:`stcsim.sparsity.vectorwise` (``axis="row"``: along the reduction
dimension ``K`` of ``W``). Pruned weights stay pruned: the mask of step ``n`` is applied again after the
callback, and the next step prunes from the fine-tuned weights.

Two choices the listing and the text of paper 001 leave open are options (docs/sparsity.md quotes the lines):

* ``bound``: whether a step whose increase equals ``e_delta`` exactly is accepted. ``inclusive``
  (default) accepts it, reading ``E_delta`` as the text does, the "maximum accuracy drop" that is
  "acceptable"; ``strict`` is the listing's loop test ``while (E - E0) / E0 < E_delta``.
* which step is the result (:func:`final_step`): ``last_accepted`` (default) keeps the last step within
  the bound; ``last`` returns the last step taken, the one that crossed the bound, as the listing's
  ``Ws = W`` after the loop does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from stcsim.sparsity.base import check_weights
from stcsim.sparsity.vectorwise import VectorWise, top_k_per_vector

BOUNDS = ("inclusive", "strict")
RESULTS = ("last_accepted", "last")

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
    bound: str = "inclusive",
) -> Iterator[ScheduleStep]:
    """Yield the steps of Algorithm 1 (paper 001) until the error bound is crossed.

    The callback is first called on the dense weights with an all-True mask to get ``E0``. Each yielded step
    has ``accepted`` True while ``(E - E0) / E0 <= e_delta`` (``bound="strict"``: ``< e_delta``); the first
    step outside the bound is yielded with ``accepted=False`` and ends the iteration (:func:`final_step`
    picks the result). The iteration also ends after ``n_zero = L - 1`` (one weight left per vector).
    """
    VectorWise(L=L, axis=axis)  # validates L and axis
    if e_delta < 0:
        raise ValueError(f"e_delta must be >= 0, got {e_delta}")
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
    current = check_weights(weights)
    current, base_error = fine_tune_evaluate(current.copy(), np.ones(current.shape, dtype=bool))
    for n_zero in range(1, L):
        mask = top_k_per_vector(current, L, L - n_zero, axis)
        tuned, error = fine_tune_evaluate(np.where(mask, current, 0).astype(current.dtype), mask.copy())
        current = np.where(mask, tuned, 0).astype(tuned.dtype)
        rel = relative_increase(error, base_error)
        accepted = rel <= e_delta if bound == "inclusive" else rel < e_delta
        yield ScheduleStep(n_zero, L - n_zero, mask, current, error, rel, accepted)
        if not accepted:
            return


def final_step(steps: Iterable[ScheduleStep], result: str = "last_accepted") -> ScheduleStep | None:
    """The schedule's result: the last accepted step (default) or the last step taken (``result="last"``).

    Returns None when ``last_accepted`` finds no accepted step (the first step already crossed the bound:
    the dense weights are the result) or when there are no steps.
    """
    if result not in RESULTS:
        raise ValueError(f"result must be one of {RESULTS}, got {result!r}")
    chosen = None
    for step in steps:
        if result == "last" or step.accepted:
            chosen = step
    return chosen

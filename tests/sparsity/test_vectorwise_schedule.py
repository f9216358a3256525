"""Tests of the progressive VectorSparse schedule (paper 001, Algorithm 1)."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sparsity.vectorwise import to_vectors
from stcsim.sparsity.vectorwise_schedule import final_step, relative_increase, vectorsparse_schedule


def pruned_fraction_error(weights: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, float]:
    """Fake fine-tune/evaluate: weights unchanged, error 1 + 10 * pruned fraction."""
    return weights, 1.0 + 10.0 * (1.0 - mask.mean())


def test_steps_until_error_bound_is_crossed() -> None:
    """L=8: errors 2.25, 3.5, 4.75 -> relative 1.25, 2.5, 3.75; e_delta=3 stops at the third step."""
    w = np.random.default_rng(0).standard_normal((6, 16))
    steps = list(vectorsparse_schedule(w, L=8, e_delta=3.0, fine_tune_evaluate=pruned_fraction_error))
    assert [s.n_zero for s in steps] == [1, 2, 3]
    assert [s.accepted for s in steps] == [True, True, False]
    assert [s.relative_increase for s in steps] == pytest.approx([1.25, 2.5, 3.75])
    for prev, step in zip(steps, steps[1:], strict=False):
        assert not (step.mask & ~prev.mask).any()  # pruned weights stay pruned
    vec_w, vec_m = to_vectors(np.abs(w), 8, "row"), to_vectors(steps[0].mask, 8, "row")
    assert (np.where(vec_m, vec_w, np.inf).min(-1) >= np.where(vec_m, -np.inf, vec_w).max(-1)).all()
    for step in steps:
        assert (to_vectors(step.mask, 8, "row").sum(axis=-1) == 8 - step.n_zero).all()


def test_fine_tuned_weights_drive_the_next_step() -> None:
    """The next step prunes from the callback's weights; the schedule ends at one weight per vector."""

    def boost_last(weights: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, float]:
        tuned = weights.copy()
        tuned[:, -1] = 100.0 * np.where(mask[:, -1], 1, 0)  # fine-tuning makes the last weight important
        return tuned, 1.0

    w = np.tile(np.arange(1.0, 5.0)[::-1], (2, 1))  # descending: the last weight is the smallest
    steps = list(vectorsparse_schedule(w, L=4, e_delta=0.0, fine_tune_evaluate=boost_last))
    assert [s.n_zero for s in steps] == [1, 2, 3] and all(s.accepted for s in steps)
    assert steps[-1].mask.tolist() == [[False, False, False, True]] * 2
    assert steps[-1].weights[0, -1] == 100.0


def test_relative_increase_with_zero_base_error() -> None:
    """E0 = 0: no increase is 0, any increase is infinite."""
    assert relative_increase(0.0, 0.0) == 0.0 and relative_increase(0.1, 0.0) == float("inf")
    with pytest.raises(ValueError, match="e_delta"):
        next(vectorsparse_schedule(np.ones((1, 4)), 4, -1.0, pruned_fraction_error))


def test_bound_and_result_readings() -> None:
    """A step exactly at the bound: inclusive accepts it, strict (the listing's '<') stops there.

    L=8, errors 1 + 10 * pruned fraction: relative increases 1.25, 2.5, 3.75. With e_delta = 2.5 the second
    step sits on the bound. final_step gives the last accepted step or, as the listing's Ws = W, the last one.
    """
    w = np.random.default_rng().standard_normal((5, 16))
    inclusive = list(vectorsparse_schedule(w, 8, 2.5, pruned_fraction_error))
    strict = list(vectorsparse_schedule(w, 8, 2.5, pruned_fraction_error, bound="strict"))
    assert [s.accepted for s in inclusive] == [True, True, False]
    assert [s.accepted for s in strict] == [True, False]
    assert final_step(inclusive).n_zero == 2 and final_step(inclusive, "last").n_zero == 3
    assert final_step(strict).n_zero == 1 and final_step(strict, "last").n_zero == 2
    assert final_step(list(vectorsparse_schedule(w, 8, 0.5, pruned_fraction_error))) is None
    with pytest.raises(ValueError, match="bound must be one of"):
        next(vectorsparse_schedule(w, 8, 1.0, pruned_fraction_error, bound="loose"))
    with pytest.raises(ValueError, match="result must be one of"):
        final_step(inclusive, "first")

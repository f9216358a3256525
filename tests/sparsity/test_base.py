"""Tests of the shared helpers in stcsim.sparsity.base."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sparsity.base import (
    bits_to_bytes,
    check_mask,
    check_sparsity,
    index_bits,
    keep_count,
    pad_to,
    ranges,
    run_ranks,
)


def test_bit_helpers() -> None:
    """Bit widths are ceil(log2 n); bytes round bits up."""
    assert [index_bits(n) for n in (1, 2, 4, 5, 16, 17, 48, 64)] == [0, 1, 2, 3, 4, 5, 6, 6]
    assert [bits_to_bytes(b) for b in (0, 1, 8, 9)] == [0, 1, 1, 2]


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, float("nan")])
def test_sparsity_outside_unit_interval_is_rejected(bad: float) -> None:
    """Sparsity must be in [0, 1); the error says so."""
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        check_sparsity(bad)


def test_keep_count_and_padding() -> None:
    """keep_count rounds half up; pad_to zero-pads bottom/right."""
    assert keep_count(10, 0.75) == 3 and keep_count(4, 0.5) == 2 and keep_count(3, 0.5) == 2
    padded = pad_to(np.ones((3, 5)), 4, 4)
    assert padded.shape == (4, 8) and padded.sum() == 15


def test_mask_checks() -> None:
    """Masks must be boolean and shaped like the weights; weights must be 2-D floats."""
    w = np.ones((2, 3))
    with pytest.raises(ValueError, match="boolean"):
        check_mask(w, np.ones((2, 3), dtype=int))
    with pytest.raises(ValueError, match="shape"):
        check_mask(w, np.ones((3, 2), dtype=bool))
    with pytest.raises(ValueError, match="floating"):
        check_mask(np.ones((2, 3), dtype=int), np.ones((2, 3), dtype=bool))
    with pytest.raises(ValueError, match="2-D"):
        check_mask(np.ones(3), np.ones(3, dtype=bool))


def test_ranges_and_run_ranks() -> None:
    """Places within groups laid out one after another, and within runs of equal consecutive keys."""
    assert ranges(np.array([2, 0, 3])).tolist() == [0, 1, 0, 1, 2]
    assert run_ranks(np.array([5, 5, 1, 5, 5, 5])).tolist() == [0, 1, 0, 0, 1, 2]
    assert run_ranks(np.array([], dtype=int)).tolist() == []

"""The PhaseLat plan bound of paper 004 (benchmarks/papers/extensor_plan_bound.py) on masks worked by hand."""

import numpy as np
import pytest

from benchmarks.papers.extensor_plan_bound import plan_bound


def test_one_nonzero_per_row_and_block_merges_into_one_phase():
    # Every row has one non-zero in each of the 4 blocks. smma.16: 4 chunks of one phase, each
    # 16 rows x max(1, 2) + 2 = 34 cycles (136). One 64-wide chunk: one phase of 4 non-zeros per row over
    # 4 blocks, 16 x 4 x 2 + 2 = 130 (phase_skip and literal: every block is used; row_skip the same here).
    mask = np.zeros((16, 64), dtype=bool)
    mask[:, [3, 20, 37, 50]] = True
    table = plan_bound(mask).set_index("reading")
    for reading in ("literal", "row_skip", "phase_skip"):
        assert table.loc[reading, "exact optimum (dp)"] == pytest.approx(136 / 130)
        assert table.loc[reading, "smma.64 only"] == pytest.approx(136 / 130)
        assert table.loc[reading, "Alg. 1 instructions / smma.16's"] == pytest.approx(0.25)


def test_the_exact_optimum_bounds_alg1_on_random_masks():
    mask = np.random.default_rng(7).random((64, 512)) >= 0.9
    table = plan_bound(mask)
    assert (table["exact optimum (dp)"] >= table["Alg. 1 (greedy)"] - 1e-12).all()
    assert (table["exact optimum (dp)"] >= table["smma.32 only"] - 1e-12).all()

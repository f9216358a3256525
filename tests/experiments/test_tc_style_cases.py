"""Issue 43's Tensor Core styles (benchmarks/calibration/kernels/tc_styles.cu) on the simulator vs numpy."""

import numpy as np
import pytest

from stcsim.experiments.calibrate import halves, suite
from stcsim.experiments.calibration_cases import run_case
from stcsim.experiments.tc_style_cases import TC_CASES, TC_SMOKE, metadata_words, prune_2_4
from stcsim.sim import Engine
from stcsim.sparsity.mma_sp import lane_metadata, tile_metadata_words


@pytest.mark.parametrize("case", TC_SMOKE, ids=[f"{c.kernel}-{c.shape}" for c in TC_SMOKE])
def test_style_matches_numpy_on_the_simulator(case):
    stats = run_case(case, Engine("h100"), np.random.default_rng())
    assert stats["gpu_sim_cycle"] > 0


def test_every_style_has_a_smoke_case_a_half_and_enough_launches():
    kernels = {c.kernel for c in TC_CASES}
    assert kernels == {c.kernel for c in TC_SMOKE}
    declared = halves().set_index("kernel")
    assert kernels <= set(declared.index)
    # whole families per half, both halves used, at least 40 launches (issue 43)
    assert set(declared.loc[sorted(kernels), "half"]) == {"tuning", "validation"}
    assert len(suite("tc-styles")) == len(TC_CASES) >= 40
    assert all(c.ptx.is_file() and c.ptx.with_suffix(".cu").is_file() for c in TC_CASES)


def test_metadata_words_agree_with_the_pruning_library():
    """The suite's own metadata packing (written from the PTX ISA) and stcsim.sparsity.mma_sp agree."""
    _, _, idx = prune_2_4(np.random.default_rng(3), 32, 64)
    words = metadata_words(idx)  # [16-row block][k32 step][lane]
    for block in range(2):
        for step in range(2):
            tile = idx[16 * block:16 * block + 16, 8 * step:8 * step + 8]
            assert (words[block, step] == lane_metadata(tile_metadata_words(tile), 0)).all()


def test_a_wrong_metadata_word_fails_the_check():
    case = next(c for c in TC_SMOKE if c.kernel == "tcs_mmasp_gmem")
    plan = case.plan

    def broken(rng):
        p = plan(rng)
        p.buffers[2][:] = 0  # every chunk keeps its first two columns
        return p

    with pytest.raises(AssertionError):
        run_case(type(case)(case.kernel, case.module, case.shape, broken), Engine(), np.random.default_rng(1))

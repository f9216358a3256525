"""The calibration kernels of benchmarks/calibration/kernels on the simulator, checked against numpy."""

import numpy as np
import pytest

from stcsim.experiments.calibration_cases import CASES, SMOKE, CaseCheckError, Plan, run_case
from stcsim.sim import Engine


@pytest.mark.parametrize("case", SMOKE, ids=[c.kernel for c in SMOKE])
def test_kernel_matches_numpy_on_the_simulator(case):
    stats = run_case(case, Engine("h100"), np.random.default_rng())
    assert stats["gpu_sim_cycle"] > 0


def test_every_suite_kernel_has_a_smoke_case():
    assert {c.kernel for c in CASES} == {c.kernel for c in SMOKE}
    assert all(c.ptx.is_file() and c.ptx.with_suffix(".cu").is_file() for c in CASES)


def test_accumulating_kernels_are_checked_against_the_launch_count():
    case = next(c for c in SMOKE if c.kernel == "histogram_atomic")
    with pytest.raises(CaseCheckError, match="histogram_atomic"):
        run_case(case, Engine(), np.random.default_rng(), launches=2)  # ran once: half the counts


def test_a_wrong_output_is_reported():
    case = next(c for c in SMOKE if c.kernel == "stream_copy")

    def wrong(rng):
        p = case.plan(rng)
        return Plan(p.buffers, p.args, p.grid, p.block, p.out, lambda n: p.expected(n) + 1.0)

    broken = type(case)(case.kernel, case.module, case.shape, wrong)
    with pytest.raises(CaseCheckError, match="stream_copy 64KiB: element"):
        run_case(broken, Engine(), np.random.default_rng())

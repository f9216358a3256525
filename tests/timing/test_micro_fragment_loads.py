"""Matrix-fragment loads on the h100 config (issue 43): an ldmatrix / wmma.load from shared memory (one SASS
LDSM) takes smem.matrix_extra_latency beyond an ld.shared of its wavefronts, and a wmma.load of a B .row
(or A .col) fragment from global memory waits tensor.movm_latency more for the MOVM.16.MT88 transposes ptxas
adds after its LDGs; a B .col fragment from global needs none. Pinned with the chain probes of
benchmarks/calibration/tc_chain.py (cycles per dependent step, the same PTX silicon ran)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.calibration import tc_chain
from stcsim.config import load_config
from stcsim.sim import Engine


def _per_step(config: str, probe: str) -> float:
    table = tc_chain.measure(lambda: Engine(config), probes=(probe,), ctas=(1,))
    return float(table["cycles_per_step"].iloc[0])


@pytest.fixture(scope="module")
def without(tmp_path_factory: pytest.TempPathFactory) -> str:
    """h100 with both fragment keys at 0 (the model before them)."""
    overlay = Path(tmp_path_factory.mktemp("cfg")) / "no_fragment_keys.yaml"
    overlay.write_text("smem:\n  matrix_extra_latency: 0  # cycles; test\n"
                       "tensor:\n  movm_latency: 0  # cycles; test\n")
    return f"h100+{overlay}"


def test_ldmatrix_takes_the_matrix_extra_latency(without):
    extra = load_config("h100").flat()["smem.matrix_extra_latency"]
    assert extra > 0
    assert _per_step("h100", "ldsm_chain") - _per_step(without, "ldsm_chain") == pytest.approx(extra)


def test_a_row_major_b_fragment_from_global_waits_for_its_movm(without):
    movm = load_config("h100").flat()["tensor.movm_latency"]
    assert movm > 0
    # the wmma chain loads B .row from global (MOVM) and A .row (none): one MOVM latency per step
    assert _per_step("h100", "wmma_ldg_chain") - _per_step(without, "wmma_ldg_chain") == pytest.approx(movm)
    # plain global loads and the mma chains do not move
    for probe in ("ldg_chain_rows8", "hmma_acc_chain"):
        assert _per_step("h100", probe) == _per_step(without, probe)


def test_other_configs_keep_the_keys_at_zero():
    for config in ("v100", "a100", "titanv"):
        flat = load_config(config).flat()
        assert flat["smem.matrix_extra_latency"] == 0 and flat["tensor.movm_latency"] == 0

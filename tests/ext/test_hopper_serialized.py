"""ptxas's wgmma serialization (advisory C7515) in the timing model: where ptxas reports it for a kernel
(stcsim.sim.ptxas_facts), each wgmma.mma_async waits for the warp's earlier wgmma to complete, so a chain
of them costs its math plus hopper.wgmma_latency per instruction instead of its pipe occupancy."""

from __future__ import annotations

import pytest

from benchmarks.micro.hopper_sim import wgmma_clock
from stcsim.config import load_config
from stcsim.sim import ptxas_facts

C7515 = ("ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized "
         "due to non wgmma instructions defining accumulator registers of a wgmma between start and end "
         "of the pipeline stage in the function 'chain'\n")


def _clock(monkeypatch: pytest.MonkeyPatch, serialized: bool, n: int, count: int, sparse: bool) -> int:
    found = ptxas_facts.parse_facts(C7515 if serialized else "")
    monkeypatch.setattr(ptxas_facts, "facts", lambda ptx, sm_version: found)
    return wgmma_clock("h100", n, count, sparse)


def test_parse_facts_reads_serialization_registers_and_spills():
    text = (C7515 + "ptxas info    : Compiling entry function 'chain' for 'sm_90a'\n"
            "ptxas info    : Function properties for chain\n"
            "    0 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
            "ptxas info    : Used 90 registers, used 1 barriers\n")
    found = ptxas_facts.parse_facts(text)
    assert found.wgmma_serialized == {"chain"} and found.registers == {"chain": 90}
    assert found.spill_bytes == {"chain": 20}
    assert ptxas_facts.parse_facts("").wgmma_serialized == frozenset()


@pytest.mark.parametrize("sparse", [False, True])
def test_a_serialized_chain_pays_math_plus_latency_per_wgmma(monkeypatch, sparse):
    k = load_config("h100").flat()
    n = 64
    math = -(-16 * n * 16 // (k["hopper.wgmma_fma_per_cycle"] // 4))
    if sparse:
        math = -(-2 * math * 100 // k["hopper.wgmma_sparse_speedup_pct"])
    latency = k["hopper.wgmma_sp_latency" if sparse else "hopper.wgmma_latency"]
    free = _clock(monkeypatch, False, n, 8, sparse) - _clock(monkeypatch, False, n, 4, sparse)
    serial = _clock(monkeypatch, True, n, 8, sparse) - _clock(monkeypatch, True, n, 4, sparse)
    assert free < serial  # pipelined: the pipe occupancy per wgmma, below math + latency
    assert 4 * (math + latency) <= serial <= 4 * (math + latency + 2)  # + the warpgroup's rendezvous
    # one wgmma alone does not change: nothing earlier to wait for
    assert _clock(monkeypatch, True, n, 1, sparse) == _clock(monkeypatch, False, n, 1, sparse)

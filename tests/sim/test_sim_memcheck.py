"""Memcheck mode: red zones around allocations turn an overrun that lands in a neighbouring allocation
(silent by default, as on a GPU) into a SimFault naming the thread, the address and the allocation."""

from __future__ import annotations

import re

import numpy as np
import pytest
from simkit import CUDA_DIR

from stcsim.sim import Engine, SimFault

pytestmark = pytest.mark.sim_only

FAULTS = CUDA_DIR / "faults.ptx"
DEFAULT_DISTANCE = 512  # bytes from a 128-byte allocation to the next one without memcheck (256-byte gap)


def engine(memcheck: bool) -> Engine:
    e = Engine(memcheck=memcheck)
    e.load_ptx(FAULTS)
    return e


def neighbours(e: Engine, rng: np.random.Generator) -> tuple[int, int, np.ndarray]:
    """Allocates `a` (32 zero floats), then `b` (64 random floats); returns both addresses and b's data."""
    a = e.malloc(32 * 4)
    b = e.malloc(64 * 4)
    data = rng.standard_normal(64).astype(np.float32)
    e.copy_to(b, data)
    return a, b, data


def test_an_overrun_into_the_next_allocation_is_silent_without_memcheck(rng):
    e = engine(memcheck=False)
    a, b, data = neighbours(e, rng)
    j = int(rng.integers(0, 64))
    assert b - a == DEFAULT_DISTANCE
    idx = (b - a) // 4 + j  # oob_write: thread 5 stores 1.0 to a[idx] = b[j]
    e.launch("oob_write", 1, 32, [a, idx])
    want = data.copy()
    want[j] = 1.0
    assert np.array_equal(e.copy_from(b, 64, np.float32), want)
    got_a = e.copy_from(a, 32, np.float32)
    assert np.array_equal(got_a, np.where(np.arange(32) == 5, 0, 1).astype(np.float32))


def test_memcheck_reports_the_same_overrun(rng):
    e = engine(memcheck=True)
    assert e.memcheck
    a, b, data = neighbours(e, rng)
    j = int(rng.integers(0, 64))
    idx = DEFAULT_DISTANCE // 4 + j  # where b[j] lies without memcheck: now a red zone
    with pytest.raises(SimFault) as err:
        e.launch("oob_write", 1, 32, [a, idx])
    msg = str(err.value)
    addr = a + 4 * idx
    assert msg.startswith("memory fault in kernel 'oob_write': out-of-bounds global write"), msg
    assert f"of 4 bytes at address 0x{addr:x} by thread (5,0,0) of block (0,0,0) [warp 0, lane 5]" in msg
    near = f"nearest allocation [0x{a:x}, 0x{a + 128:x}) of 128 bytes: starts {4 * idx - 128} bytes past its"
    assert near in msg, msg
    assert re.search(rf"instruction {re.escape(str(FAULTS))}:\d+ `st\.global\.", msg), msg
    assert np.array_equal(e.copy_from(b, 64, np.float32), data)  # the neighbour is untouched


def test_memcheck_reports_an_underrun_into_the_previous_allocation(rng):
    e = engine(memcheck=True)
    a, b, _ = neighbours(e, rng)
    with pytest.raises(SimFault, match=r"out-of-bounds global write .*nearest allocation \[0x[0-9a-f]+, "
                                       r"0x[0-9a-f]+\) of 256 bytes: starts \d+ bytes before it"):
        e.launch("oob_write", 1, 32, [b, -DEFAULT_DISTANCE // 4])  # b[-128]: a[0] without memcheck
    assert a < b


def test_memcheck_leaves_correct_kernels_unchanged(rng):
    results = []
    for memcheck in (False, True):
        e = engine(memcheck)
        a = rng.standard_normal(64).astype(np.float32) if not results else results[0][0]
        pa, pout = e.malloc(a.nbytes), e.malloc(a.nbytes)
        e.copy_to(pa, a)
        stats = e.launch("oob_read", 2, 32, [pa, pout, 37])  # in bounds: out[t] = a[t]
        results.append((a, e.copy_from(pout, 64, np.float32), stats["warp_insts"]))
    (a, plain, n0), (_, checked, n1) = results
    assert np.array_equal(plain, a) and np.array_equal(checked, a) and n0 == n1

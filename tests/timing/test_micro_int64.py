"""64-bit integer ALU instructions issue as SASS pairs (sm_70+ has a 32-bit integer datapath): a dependent
chain of N add.s64 costs N x (units.int.latency + 1), an independent stream N x 2 issue intervals, and a
64-bit mul.lo three intervals; 32-bit adds and mul.wide stay single. Results are checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.config import load_config
from stcsim.sim import Engine


def kernel(op: str, ty: str, n: int, dependent: bool) -> str:
    """PTX: one thread adds (or multiplies) n times, chained through one register or into 8 independent ones;
    stores the sum of the 8 registers."""
    regs = "\n".join(f"  mov.{ty} %v{i}, %x;" for i in range(8))
    body = []
    for j in range(n):
        d = 0 if dependent else j % 8
        body.append(f"  {op}.{ty} %v{d}, %v{d}, %x;")
    total = "\n".join(f"  add.{ty} %v0, %v0, %v{i};" for i in range(1, 8))
    return f"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .{ty} x)
{{
  .reg .{ty} %x, %v<8>;
  .reg .u64 %p;
  ld.param.u64 %p, [out];
  cvta.to.global.u64 %p, %p;
  ld.param.{ty} %x, [x];
{regs}
{chr(10).join(body)}
{total}
  st.global.{ty} [%p], %v0;
  ret;
}}
"""


def cycles(op: str, ty: str, n: int, dependent: bool, x: int) -> tuple[float, int]:
    """Kernel cycles of one thread running the kernel on h100, and the value it stored."""
    eng = Engine("h100+warm-icache")  # the units apart from instruction fetch
    eng.load_ptx(kernel(op, ty, n, dependent))
    out = eng.malloc(8)
    st = eng.launch("k", 1, 1, [out, x])
    dtype = np.uint64 if ty.endswith("64") else np.uint32
    return float(st["kernel_cycles"]), int(eng.copy_from(out, 1, dtype)[0])


def per_op(op: str, ty: str, dependent: bool, rng: np.random.Generator) -> float:
    """Cycles per instruction from 64 vs 128 of them, after checking the result against numpy."""
    x = int(rng.integers(3, 1 << 30))
    res = {}
    for n in (64, 128):
        c, got = cycles(op, ty, n, dependent, x)
        mask = (1 << (64 if ty.endswith("64") else 32)) - 1
        v = [x] * 8
        for j in range(n):
            d = 0 if dependent else j % 8
            v[d] = (v[d] + x) & mask if op == "add" else (v[d] * x) & mask
        assert got == sum(v) & mask
        res[n] = c
    return (res[128] - res[64]) / 64


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


@pytest.fixture
def units() -> tuple[float, float]:
    flat = load_config("h100").flat()
    return float(flat["units.int.latency"]), float(flat["units.int.issue_interval"])


def test_a_dependent_64_bit_add_waits_for_both_halves(units, rng: np.random.Generator) -> None:
    latency, _ = units
    assert per_op("add", "s32", True, rng) == latency
    assert per_op("add", "s64", True, rng) == latency + 1


def test_independent_64_bit_adds_take_two_issue_intervals(units, rng: np.random.Generator) -> None:
    _, interval = units
    assert per_op("add", "s32", False, rng) == interval
    assert per_op("add", "s64", False, rng) == 2 * interval
    assert per_op("mul.lo", "u64", False, rng) == 3 * interval

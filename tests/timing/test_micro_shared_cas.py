"""Shared-memory atomics that ptxas lowers to a load + compare-and-swap loop (add of u64/s64/f32/f64 on
sm_70+, ATOMS.CAST.SPIN in SASS): every update holds its address for one loop round trip (2 x smem.latency +
2 x units.int.latency + units.branch.latency) and updates of one address take turns (two round trips for an
update that finds another warp's updates of the address in flight: it fails once); each loop iteration takes
the SM's shared pipe for smem.cas_iteration_cycles + smem.cas_address_cycles per address it updates.
Native shared atomics (u32 add) stay one shared access. Every sum is checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.config import load_config
from stcsim.sim import Engine


def kernel(ty: str, n: int, spread: bool) -> str:
    """PTX: each thread adds its value to shared word 0 (or to word tid when `spread`) n times; thread 0
    (every thread when `spread`) stores the word(s) out."""
    size = 8 if ty.endswith("64") else 4
    adds = "\n".join(f"  atom.shared.add.{ty} %old, [%a], %v;" for _ in range(n))
    return f"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 vals)
{{
  .shared .align 8 .b8 buf[{64 * size}];
  .reg .u32 %t, %off;
  .reg .u64 %p, %q, %a, %w;
  .reg .{ty} %v, %old, %s;
  .reg .pred %z;
  ld.param.u64 %p, [out];
  cvta.to.global.u64 %p, %p;
  ld.param.u64 %q, [vals];
  cvta.to.global.u64 %q, %q;
  mov.u32 %t, %tid.x;
  mul.wide.u32 %w, %t, {size};
  add.u64 %q, %q, %w;
  ld.global.{ty} %v, [%q];
  mov.u64 %a, buf;
  {"add.u64 %a, %a, %w;" if spread else ""}
  st.shared.{ty} [%a], {"0f00000000" if ty == "f32" else "0"};
  bar.sync 0;
{adds}
  bar.sync 0;
  ld.shared.{ty} %s, [%a];
  setp.eq.u32 %z, %t, 0;
  {"add.u64 %p, %p, %w;" if spread else ""}
  {"" if spread else "@%z "}st.global.{ty} [%p], %s;
  ret;
}}
"""


def run(ty: str, n: int, spread: bool, rng: np.random.Generator) -> float:
    """Kernel cycles of one 64-thread CTA on h100, after checking the sums against numpy."""
    dtype = {"u64": np.uint64, "u32": np.uint32, "f32": np.float32}[ty]
    vals = rng.integers(1, 1 << 20, 64).astype(dtype)  # integers: exact sums in f32 too
    eng = Engine("h100")
    eng.load_ptx(kernel(ty, n, spread))
    out, pv = eng.malloc(64 * 8), eng.malloc(vals.nbytes)
    eng.copy_to(pv, vals)
    st = eng.launch("k", 1, 64, [out, pv])
    if spread:
        np.testing.assert_array_equal(eng.copy_from(out, 64, dtype), vals * n)
    else:
        assert int(eng.copy_from(out, 1, dtype)[0]) == int(vals.sum()) * n
    return float(st["kernel_cycles"])


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


def round_trip() -> float:
    flat = load_config("h100").flat()
    keys = ("smem.latency", "units.int.latency", "units.branch.latency")
    smem, alu, branch = (float(flat[k]) for k in keys)
    return 2 * smem + 2 * alu + branch


def test_updates_of_one_address_take_turns(rng: np.random.Generator) -> None:
    # 64 lanes of 2 warps on one address: each further atom of every thread costs 64 updates, and each warp
    # finds the other's updates in flight, so each of its updates fails once first (2 round trips: the
    # one-word shared probes on silicon, results/reference/h100_probe_atomics_run2.csv, run at half the rate
    # of turns without failures)
    per_atom = (run("u64", 3, False, rng) - run("u64", 1, False, rng)) / 2
    assert per_atom == pytest.approx(2 * 64 * round_trip(), rel=0.02)


def test_one_warp_alone_on_an_address_does_not_fail(rng: np.random.Generator) -> None:
    # one warp's own lanes take turns without failing: 32 round trips per atom
    vals = rng.integers(1, 1 << 20, 32).astype(np.uint64)
    cycles = []
    for n in (1, 3):
        eng = Engine("h100")
        eng.load_ptx(kernel("u64", n, False))
        out, pv = eng.malloc(64 * 8), eng.malloc(vals.nbytes)
        eng.copy_to(pv, vals)
        st = eng.launch("k", 1, 32, [out, pv])
        assert int(eng.copy_from(out, 1, np.uint64)[0]) == int(vals.sum()) * n
        cycles.append(float(st["kernel_cycles"]))
    assert (cycles[1] - cycles[0]) / 2 == pytest.approx(32 * round_trip(), rel=0.02)


def test_distinct_addresses_take_the_pipe_not_turns(rng: np.random.Generator) -> None:
    # 2 warps x 32 distinct addresses: one iteration each, 32 addresses on the pipe per warp
    flat = load_config("h100").flat()
    pipe = 2 * (float(flat["smem.cas_iteration_cycles"]) + 32 * float(flat["smem.cas_address_cycles"]))
    per_atom = (run("u64", 3, True, rng) - run("u64", 1, True, rng)) / 2
    assert pipe > round_trip()
    assert per_atom == pytest.approx(pipe, rel=0.05)


def test_a_32_bit_loop_takes_the_pipe_at_its_own_rate(rng: np.random.Generator) -> None:
    # an f32 add is the loop on 32-bit words (ATOMS.CAST.SPIN), cheaper per iteration than the 64-bit one
    flat = {k: float(v) for k, v in load_config("h100").flat().items() if k.startswith("smem.cas_")}
    pipe = 2 * (flat["smem.cas_iteration_cycles_b32"] + 32 * flat["smem.cas_address_cycles_b32"])
    per_atom = (run("f32", 3, True, rng) - run("f32", 1, True, rng)) / 2
    assert pipe < 2 * (flat["smem.cas_iteration_cycles"] + 32 * flat["smem.cas_address_cycles"])
    assert per_atom == pytest.approx(pipe, rel=0.05)


def test_a_native_shared_atomic_is_one_access(rng: np.random.Generator) -> None:
    per_atom = (run("u32", 3, False, rng) - run("u32", 1, False, rng)) / 2
    assert per_atom < round_trip()

"""Occupancy registers from ptxas: parsed from `ptxas -v`, cached by PTX hash, the estimate kept where ptxas
rejects the PTX or is absent, and an explicit launch value always wins."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sim import Engine, ptxas_facts

PTX = """
.version 7.0
.target sm_70
.address_size 64
.visible .entry {name}(.param .u64 in, .param .u64 out)
{{
  .reg .u32 %r<2>;
  .reg .u64 %rd<6>;
  .reg .f32 %f<{regs}>;
  ld.param.u64 %rd1, [in];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  cvt.rn.f32.u32 %f1, %r1;
{body}
  ld.param.u64 %rd4, [out];
  cvta.to.global.u64 %rd4, %rd4;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd4, %rd3;
  st.global.f32 [%rd4], %f{last};
  ret;
}}
"""


def live_values_ptx(name: str, live: int) -> str:
    """A kernel that loads `live` floats (volatile: in order, all before the sum) and adds them to its thread
    index: ptxas needs more registers the more values are live."""
    body = [f"  ld.volatile.global.f32 %f{i + 2}, [%rd1+{4 * i}];" for i in range(live)]
    body += [f"  add.f32 %f{live + 2 + i}, %f{live + 1 + i if i else 1}, %f{i + 2};" for i in range(live)]
    return PTX.format(name=name, regs=2 * live + 4, body="\n".join(body), last=2 * live + 1)


def live_values_reference(values: np.ndarray, n: int) -> np.ndarray:
    """The live_values_ptx kernel in numpy (float32, same order of additions)."""
    acc = np.arange(n, dtype=np.float32)
    for v in values.astype(np.float32):
        acc = acc + v
    return acc


needs_ptxas = pytest.mark.skipif(ptxas_facts.ptxas_path() is None, reason="ptxas not installed")


def test_parse_verbose_reads_every_entry():
    text = ("ptxas info    : Compiling entry function 'k1' for 'sm_90'\n"
            "ptxas info    : Function properties for k1\nptxas info    : Used 37 registers, used 0 barriers\n"
            "ptxas info    : Compiling entry function 'k2' for 'sm_90'\nptxas info    : Used 8 registers\n")
    assert ptxas_facts.parse_verbose(text) == {"k1": 37, "k2": 8}


def test_arch_follows_config_and_arch_specific_target():
    assert ptxas_facts.ptxas_arch(".target sm_80\n", 90) == "sm_90"
    assert ptxas_facts.ptxas_arch(".target sm_90a\n", 90) == "sm_90a"


@needs_ptxas
def test_counts_grow_with_live_values_and_are_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("STCSIM_CACHE", str(tmp_path))
    small, big = (live_values_ptx("k", n) for n in (4, 40))
    few, many = ptxas_facts.register_counts(small, 90)["k"], ptxas_facts.register_counts(big, 90)["k"]
    assert few < many and many > 20
    assert len(list((tmp_path / "ptxas").glob("*.json"))) == 2
    ptxas_facts._memory.clear()
    monkeypatch.setattr(ptxas_facts, "_compile", lambda *a: pytest.fail("not read from the disk cache"))
    assert ptxas_facts.register_counts(big, 90)["k"] == many


@needs_ptxas
def test_rejected_ptx_keeps_the_estimate(tmp_path, monkeypatch):
    monkeypatch.setenv("STCSIM_CACHE", str(tmp_path))
    bad = live_values_ptx("k", 4).replace("ret;", "ret;\n  bra.uni NOWHERE;")
    assert ptxas_facts.register_counts(bad, 90) == {}


@needs_ptxas
def test_timing_launch_uses_ptxas_unless_disabled_or_explicit(tmp_path, monkeypatch):
    monkeypatch.setenv("STCSIM_CACHE", str(tmp_path))
    ptx = live_values_ptx("live", 40)
    want = ptxas_facts.register_counts(ptx, 90)["live"]
    rng = np.random.default_rng()
    n = int(rng.integers(64, 256))
    got = {}
    for label, kwargs, regs in (("ptxas", {}, 0), ("estimate", {"ptxas_facts": False}, 0),
                                ("launch", {}, 200)):
        eng = Engine("h100", **kwargs)
        eng.load_ptx(ptx)
        values = rng.uniform(-1, 1, 40).astype(np.float32)
        src, out = eng.malloc(values.nbytes), eng.malloc(4 * n)
        eng.copy_to(src, values)
        stats = eng.launch("live", 1, n, [src, out], regs_per_thread=regs)
        np.testing.assert_array_equal(eng.copy_from(out, n, np.float32), live_values_reference(values, n))
        assert stats["regs_source"] == label
        got[label] = stats["regs_per_thread"]
    assert got["ptxas"] == want and got["launch"] == 200

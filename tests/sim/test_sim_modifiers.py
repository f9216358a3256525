"""The modifier sweep: every opcode x modifier x type combination of tests/sim/modsweep.py is either run as
the PTX ISA says (numeric kernels against sweep_oracle on fresh random inputs) or refused with a PtxError,
and the engine refuses exactly what ptxas refuses.

ptxas's verdicts are recorded in data/ptxas_modifier_sweep.json, so that CI without CUDA still checks the
engine against them. With ptxas installed, a sample of the recorded verdicts is checked against ptxas
(``STCSIM_PTXAS_FULL=1``: all of them); ``STCSIM_UPDATE_PTXAS=1`` records them anew (a few minutes).
The numeric test runs unchanged on a GPU with ``STCSIM_TEST_BACKEND=gpu``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import modsweep as ms
import numpy as np
import pytest
import sweep_oracle as so
from ptxas_oracle import CRASHED, check_lines, find_ptxas
from simkit import BACKEND, Kernels

DATA = Path(__file__).resolve().parent / "data" / "ptxas_modifier_sweep.json"
# (target, .version) pairs at which every combination ptxas accepts at the first is tried again: the forms
# that need a newer target or PTX ISA.
GATES = (("sm_90", "8.0"), ("sm_80", "8.0"), ("sm_86", "7.1"), ("sm_90", "7.8"), ("sm_80", "7.0"))

# Forms ptxas accepts that the engine refuses as outside its subset (docs/isa.md, "Not supported").
OUTSIDE_SUBSET: dict[str, Callable[[ms.Combo], bool]] = {
    "testp without a class (ptxas accepts it; the ISA requires one)": lambda c: (
        c.op == "testp" and not c.mods
    ),
    "thread-block clusters (.cluster, .shared::cluster)": lambda c: bool(
        {"cluster", "shared::cluster"} & set(c.mods)
    ),
    "cvta.param (generic addresses of kernel parameters)": lambda c: c.op == "cvta" and "param" in c.mods,
}


def outside_subset(c: ms.Combo) -> str | None:
    """Why the engine refuses a form ptxas accepts, or None."""
    return next((why for why, test in OUTSIDE_SUBSET.items() if test(c)), None)


def digest(combos: list[ms.Combo]) -> str:
    """The SHA-1 of the combination list (the recorded verdicts belong to one list)."""
    return hashlib.sha1("\n".join(c.line() for c in combos).encode()).hexdigest()


def ptxas_sweep(ptxas: str, combos: list[ms.Combo]) -> dict:
    """ptxas's verdicts on the combinations: the accepted ones with the gates they fail, and the crashes."""
    lines = [c.line() for c in combos]
    first = check_lines(ptxas, ms.module_head(*GATES[0]), lines, ms.MODULE_TAIL, GATES[0][0])
    accepted = [i for i, v in enumerate(first) if v is None]
    gates: dict[str, list[int]] = {combos[i].name: [] for i in accepted}
    for g, (target, version) in enumerate(GATES[1:], start=1):
        head = ms.module_head(target, version)
        verdicts = check_lines(ptxas, head, [lines[i] for i in accepted], ms.MODULE_TAIL, target)
        for i, v in zip(accepted, verdicts, strict=True):
            if v is not None:
                gates[combos[i].name].append(g)
    crashed = sorted(combos[i].name for i, v in enumerate(first) if v and v.startswith(CRASHED))
    return {"combinations": len(combos), "digest": digest(combos), "accepted": gates, "crashed": crashed}


@pytest.fixture(scope="module")
def combos() -> list[ms.Combo]:
    return ms.combinations()


@pytest.fixture(scope="module")
def recorded(combos: list[ms.Combo]) -> dict:
    """The recorded ptxas verdicts (recorded anew first with STCSIM_UPDATE_PTXAS=1)."""
    ptxas = find_ptxas()
    if os.environ.get("STCSIM_UPDATE_PTXAS") and ptxas:
        DATA.parent.mkdir(exist_ok=True)
        DATA.write_text(json.dumps(ptxas_sweep(ptxas, combos), indent=0, sort_keys=True) + "\n")
    data = json.loads(DATA.read_text())
    if data["digest"] != digest(combos):
        pytest.fail(
            f"{DATA.name} is not of the current sweep: record it with STCSIM_UPDATE_PTXAS=1 and ptxas"
        )
    return data


def test_recorded_verdicts_are_ptxas_verdicts(combos, recorded, rng):
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas not installed: the recorded verdicts are used as they are")
    accepted = recorded["accepted"]
    if os.environ.get("STCSIM_PTXAS_FULL"):
        sample = combos
    else:  # every accepted form and 1500 of the refused ones
        refused = [c for c in combos if c.name not in accepted]
        pick = rng.choice(len(refused), size=min(1500, len(refused)), replace=False)
        sample = [c for c in combos if c.name in accepted] + [refused[int(i)] for i in pick]
    got = check_lines(
        ptxas, ms.module_head(*GATES[0]), [c.line() for c in sample], ms.MODULE_TAIL, GATES[0][0]
    )
    wrong = [(c.name, v) for c, v in zip(sample, got, strict=True)
             if (v is None) != (c.name in accepted) and not (v or "").startswith(CRASHED)]  # fmt: skip
    assert not wrong, f"{len(wrong)} recorded verdicts differ from ptxas's, e.g. {wrong[:5]}"


def engine_verdict(engine_factory, text: str) -> str | None:
    """None when the engine loads `text`, else the PtxError message."""
    from stcsim.sim import PtxError

    try:
        engine_factory().load_ptx(text, "sweep.ptx")
    except PtxError as e:
        return str(e)
    return None


@pytest.mark.sim_only
def test_engine_refuses_exactly_what_ptxas_refuses(combos, recorded):
    from stcsim import _engine

    engines = {"n": 0, "e": None}

    def engine():  # a fresh engine now and then (an engine keeps every module it loaded)
        if engines["n"] % 2000 == 0:
            engines["e"] = _engine.Engine(False)
        engines["n"] += 1
        return engines["e"]

    accepted, crashed = recorded["accepted"], set(recorded["crashed"])
    too_lax, too_strict, outside, unnamed = [], [], Counter(), []
    heads = [ms.module_head(t, v) for t, v in GATES]
    for c in combos:
        if c.name in crashed:
            continue
        for g, head in enumerate(heads):
            if g and c.name not in accepted:
                break
            err = engine_verdict(engine, head + c.line() + "\n" + ms.MODULE_TAIL)
            ptxas_ok = c.name in accepted and g not in accepted[c.name]
            if err and not err.startswith("sweep.ptx:13: "):
                unnamed.append((c.name, err))
            if ptxas_ok and err:
                why = outside_subset(c)
                if why:
                    outside[why] += 1
                else:
                    too_strict.append((c.name, GATES[g], err))
            elif not ptxas_ok and not err:
                too_lax.append((c.name, GATES[g]))
    n_acc = sum(1 for c in combos if c.name in accepted)
    print(f"\nmodifier sweep: {len(combos)} combinations, ptxas accepts {n_acc}, crashes on {len(crashed)}; "
          f"outside the engine's subset: {dict(outside)}")  # fmt: skip
    assert not unnamed, f"errors without file and line: {unnamed[:5]}"
    assert not too_lax, f"{len(too_lax)} forms ptxas refuses run on the engine: {too_lax[:10]}"
    assert not too_strict, f"{len(too_strict)} forms ptxas accepts are refused: {too_strict[:10]}"


def numeric_combos(combos: list[ms.Combo], recorded: dict) -> list[ms.Combo]:
    """The combinations the numeric test runs: ptxas accepts them at sm_90, the engine supports them."""
    acc = recorded["accepted"]
    return [c for c in combos if c.op in ms.NUMERIC_OPS and c.name in acc and not outside_subset(c)]


N_THREADS = 64
CHUNK = 400  # kernels per module


# Inputs hold NaN, infinities and extremes on purpose.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_accepted_forms_compute_what_the_isa_says(combos, recorded, rng, tmp_path):
    todo = numeric_combos(combos, recorded)
    skipped = Counter(ms.silicon_deviation(c) for c in todo) if BACKEND == "gpu" else Counter()
    skipped.pop(None, None)
    if skipped:
        todo = [c for c in todo if not ms.silicon_deviation(c)]
    failures: list[str] = []
    for start in range(0, len(todo), CHUNK):
        chunk = todo[start : start + CHUNK]
        path = tmp_path / f"sweep{start}.ptx"
        path.write_text(ms.numeric_module(chunk))
        k = Kernels(path)
        for i, c in enumerate(chunk):
            cols = so.inputs(rng, c, N_THREADS)
            inp = (
                np.array(cols, dtype=np.uint64).reshape(len(cols), N_THREADS)
                if cols
                else np.zeros((1, N_THREADS), np.uint64)
            )
            n_out = len(ms.outputs(c))
            out = rng.integers(0, 1 << 63, size=(n_out, N_THREADS), dtype=np.uint64)  # garbage, overwritten
            _, got = k.launch(f"k{i}", 1, N_THREADS, inp, out)
            widths = so.output_widths(c)
            failed = len(failures)
            for t in range(N_THREADS):
                if len(failures) > failed:  # one failure per form
                    break
                try:
                    wants = so.expected(c, [col[t] for col in cols])
                except Exception as e:  # a gap in the reference is a failure of the sweep too
                    failures.append(f"{c.name}: no reference ({e!r})")
                    break
                for j, (want, w) in enumerate(zip(wants, widths, strict=True)):
                    g = int(got[j, t]) & ((1 << (8 * w)) - 1)
                    if not want.accepts(g):
                        shown = "(a tolerance)" if want.bits is None else hex(want.bits)
                        ins = [hex(col[t]) for col in cols]
                        failures.append(
                            f"{c.name}: thread {t} inputs {ins} output {j} got {g:#x} want {shown}"
                        )
                        break
    print(
        f"\nmodifier sweep: {len(todo)} forms run on {BACKEND} x {N_THREADS} threads, {len(failures)} wrong; "
        f"skipped as silicon deviations: {dict(skipped)}"
    )
    assert not failures, f"{len(failures)} wrong results:\n" + "\n".join(failures)


@pytest.mark.sim_only
def test_max_xorsign_abs_gives_the_larger_magnitude_with_the_xor_of_the_signs():
    from stcsim.sim import Engine

    k = ms.Combo("max", ("xorsign", "abs"), "f32")
    eng = Engine()
    eng.load_ptx(ms.numeric_module([k]))
    a = eng.malloc(16)
    o = eng.malloc(8)
    eng.copy_to(a, np.array([np.float32(-2.0).view(np.uint32), np.float32(1.0).view(np.uint32)], np.uint64))
    eng.launch("k0", 1, 1, [a, o])
    assert eng.copy_from(o, 1, np.uint64).astype(np.uint32).view(np.float32)[0] == -2.0


CARRY_CHAIN = """.version 8.0
.target sm_80
.address_size 64
.visible .entry wide(.param .u64 pa, .param .u64 pb, .param .u64 psum, .param .u64 pdiff)
{
\t.reg .b32 %a<4>;
\t.reg .b32 %b<4>;
\t.reg .b32 %s<4>;
\t.reg .b64 %p<6>;
\t.reg .b32 %t;
\tmov.u32 %t, %tid.x;
\tmul.wide.u32 %p5, %t, 16;
\tld.param.u64 %p1, [pa];
\tld.param.u64 %p2, [pb];
\tld.param.u64 %p3, [psum];
\tld.param.u64 %p4, [pdiff];
\tadd.u64 %p1, %p1, %p5;
\tadd.u64 %p2, %p2, %p5;
\tadd.u64 %p3, %p3, %p5;
\tadd.u64 %p4, %p4, %p5;
\tld.global.v4.u32 {%a0, %a1, %a2, %a3}, [%p1];
\tld.global.v4.u32 {%b0, %b1, %b2, %b3}, [%p2];
\tadd.cc.u32 %s0, %a0, %b0;
\taddc.cc.u32 %s1, %a1, %b1;
\taddc.cc.u32 %s2, %a2, %b2;
\taddc.u32 %s3, %a3, %b3;
\tst.global.v4.u32 [%p3], {%s0, %s1, %s2, %s3};
\tsub.cc.u32 %s0, %a0, %b0;
\tsubc.cc.u32 %s1, %a1, %b1;
\tsubc.cc.u32 %s2, %a2, %b2;
\tsubc.u32 %s3, %a3, %b3;
\tst.global.v4.u32 [%p4], {%s0, %s1, %s2, %s3};
\tret;
}
"""


def test_carry_chains_add_and_subtract_128_bit_numbers(rng, tmp_path):
    path = tmp_path / "carry.ptx"
    path.write_text(CARRY_CHAIN)
    n = 64
    a = rng.integers(0, 1 << 32, size=(n, 4), dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 1 << 32, size=(n, 4), dtype=np.uint64).astype(np.uint32)
    a[:8] = 0xFFFFFFFF  # carries and borrows through every word
    b[:4, 1:] = 0
    b[4:8] = 0xFFFFFFFF
    *_, s, d = Kernels(path).launch(
        "wide", 1, n, a, b, np.zeros((n, 4), np.uint32), np.zeros((n, 4), np.uint32)
    )

    def num(w: np.ndarray) -> int:
        return sum(int(x) << (32 * i) for i, x in enumerate(w))

    for t in range(n):
        x, y = num(a[t]), num(b[t])
        assert num(s[t]) == (x + y) % (1 << 128), t
        assert num(d[t]) == (x - y) % (1 << 128), t

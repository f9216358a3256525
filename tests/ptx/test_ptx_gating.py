"""The loader against ptxas on what the modifier sweep does not reach: the `.target` / `.version` gate of
every feature (engine/ptx/feature_gates.def; ptxas's verdicts recorded in data/feature_gate_verdicts.json),
the module header, declarations, and valid forms the loader once refused with misleading messages.

Every case below names what ptxas 13 says of it; with ptxas installed (or ``$STCSIM_PTXAS``), the tests also
check those recorded verdicts against ptxas itself, so that CI without CUDA relies on verdicts that hold.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import gate_fuzz
import gate_probes as gp
import pytest
from ptxas_oracle import check_text, find_ptxas

from stcsim import _engine

DEF = Path(__file__).resolve().parents[2] / "engine" / "ptx" / "feature_gates.def"

# Probes the engine refuses where ptxas accepts them, and why (they are checked in one direction only: what
# ptxas refuses, the engine must refuse).
OUTSIDE_SUBSET: dict[str, str] = {}


def engine_error(text: str, name: str = "t.ptx") -> str | None:
    """None when the engine loads `text`, else its PtxError message."""
    try:
        _engine.Engine(True).load_ptx(text.encode("latin-1"), name)
    except _engine.PtxError as e:
        return str(e)
    return None


# ---- the gate table against ptxas's recorded verdicts --------------------------------------------------
@pytest.fixture(scope="module")
def recorded() -> dict:
    data = json.loads(gp.DATA.read_text())
    if data["probes"] != gp.PROBES:
        pytest.fail(f"{gp.DATA.name} is not of the current probes: record it with `python {gp.__file__}`")
    return data["verdicts"]


def test_every_probe_is_gated_as_ptxas_gates_it(recorded: dict) -> None:
    lax, strict = [], []
    for name, verdicts in recorded.items():
        for key, verdict in verdicts.items():
            target, version = key.split("@")
            err = engine_error(gp.module(target, version, f"\t{gp.PROBES[name]}\n"))
            if verdict is not None and err is None:
                lax.append(f"{name} under {key}: ptxas: {verdict}")
            if verdict is None and err is not None and name not in OUTSIDE_SUBSET:
                strict.append(f"{name} under {key}: {err}")
            if err and not err.startswith(f"t.ptx:{gp.HEAD_LINES + 1}: "):
                strict.append(f"{name} under {key}: error without the probe's line: {err}")
    assert not lax, f"{len(lax)} probes ptxas refuses load:\n" + "\n".join(lax[:20])
    assert not strict, f"{len(strict)} probes ptxas accepts are refused:\n" + "\n".join(strict[:20])


def _gate_rows() -> list[tuple[str, str, int, int]]:
    rows = re.findall(r'^STC_GATE\("([^"]*)", "([^"]*)", (\d+), (\d+),', DEF.read_text(), re.M)
    return [(op, toks, int(sm), int(ptx)) for op, toks, sm, ptx in rows]


def test_every_row_of_the_gate_table_has_a_probe() -> None:
    """Each row's gate is backed by ptxas's verdicts on at least one probe it applies to."""
    missing = []
    for op, toks, _, _ in _gate_rows():
        if op == "wgmma" and toks in ("", "sp"):
            continue  # whole kernels: test_sparse_wgmma_needs_ptx_8_2
        hit = False
        for line in gp.PROBES.values():
            parts = line.split()[0].split(".")
            if (not op or parts[0] == op) and all(t in parts[1:] for t in toks.split()):
                hit = True
                break
        if not hit:
            missing.append(f"{op or '*'} {toks}")
    assert not missing, f"rows of {DEF.name} without a probe: {missing}"


def test_recorded_gate_verdicts_are_ptxas_verdicts(recorded: dict) -> None:
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas not installed: the recorded verdicts are used as they are")
    wrong = []
    for target in ("sm_53", "sm_75", "sm_90"):  # a sample of the grid: three targets at .version 9.0
        got = gp._batch(ptxas, target, "9.0", list(gp.PROBES))
        for name, verdict in got.items():
            want = recorded[name].get(gp.gate_key(target, "9.0"), "missing")
            if (verdict is None) != (want is None):
                wrong.append(f"{name} under {target}: recorded {want!r}, ptxas now {verdict!r}")
    assert not wrong, "\n".join(wrong[:20])


def test_sparse_wgmma_needs_ptx_8_2() -> None:
    kernel = gate_fuzz.wgmma_kernel(sparse=True)
    assert engine_error(kernel) is None
    err = engine_error(kernel.replace(".version 8.7", ".version 8.1"))
    assert err and "requires PTX ISA .version 8.2 or later" in err
    assert engine_error(gate_fuzz.wgmma_kernel(sparse=False).replace(".version 8.7", ".version 8.0")) is None


# ---- header, declarations and forms: one case per class ------------------------------------------------
HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"
BODY = (
    ".visible .entry k(.param .u64 a)\n{\n\t.reg .b32 %r<4>;\n\t.reg .f32 %f<12>;\n\tmov.u32 %r1, 1;\n"
    "\tret;\n}\n"
)


def _in_body(lines: str, head: str = HEAD) -> str:
    return head + BODY.replace("\tmov.u32 %r1, 1;\n", lines)


@dataclass(frozen=True)
class Case:
    """A module, and what the engine says of it: None (it loads) or a part of the message. ptxas agrees
    (accepts exactly the cases that load), except where `ptxas_accepts` says otherwise: a valid form the
    engine refuses as not supported."""

    text: str
    error: str | None
    ptxas_accepts: bool | None = None

    def ptxas_verdict(self) -> bool:
        return self.error is None if self.ptxas_accepts is None else self.ptxas_accepts


CP_ASYNC = "\t.reg .b64 %rd<2>;\n\tcp.async.ca.shared.global [%r1], [%rd1], 4;\n"
MMA = (
    "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0,%f1,%f2,%f3}, {%r0,%r1,%r2,%r3}, {%r0,%r1}, "
    "{%f4,%f5,%f6,%f7};\n"
)
MMA_SP = (
    "\tmma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%f0,%f1,%f2,%f3}, {%r0,%r1,%r2,%r3}, "
    "{%r0,%r1,%r2,%r3}, {%f4,%f5,%f6,%f7}, %r1, 0;\n"
)
LDMATRIX = "\tldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r0, %r1}, [%r2];\n"

CASES: dict[str, Case] = {
    # features under too low a .target or too old a .version
    "cp.async under sm_75": Case(
        _in_body(CP_ASYNC, HEAD.replace("sm_80", "sm_75")), "requires .target sm_80"
    ),
    "mma m16n8k16 under sm_75": Case(_in_body(MMA, HEAD.replace("sm_80", "sm_75")), "requires .target sm_80"),
    "mma.sp under sm_75": Case(_in_body(MMA_SP, HEAD.replace("sm_80", "sm_75")), "requires .target sm_80"),
    "fma.bf16 under sm_75": Case(
        _in_body("\t.reg .b16 %h<4>;\n\tfma.rn.bf16 %h0, %h1, %h2, %h3;\n", HEAD.replace("sm_80", "sm_75")),
        "(.bf16) requires .target sm_80",
    ),
    "ldmatrix under sm_72": Case(
        _in_body(LDMATRIX, HEAD.replace("sm_80", "sm_72")), "requires .target sm_75"
    ),
    "tanh.approx under sm_72": Case(
        _in_body("\ttanh.approx.f32 %f0, %f1;\n", HEAD.replace("sm_80", "sm_72")),
        "(tanh) requires .target sm_75",
    ),
    "mma.sp under .version 7.0": Case(
        _in_body(MMA_SP, HEAD.replace("8.0", "7.0")), "requires PTX ISA .version 7.1 or later"
    ),
    "cp.async at sm_80 / 7.0": Case(_in_body(CP_ASYNC, HEAD.replace("8.0", "7.0")), None),
    # the module header
    "no .target": Case(
        HEAD.replace(".target sm_80\n", "") + BODY, "missing .target directive after .version"
    ),
    "no .version": Case(HEAD.replace(".version 8.0\n", "") + BODY, "must start with .version"),
    "empty module": Case("// nothing\n", "missing .version directive"),
    "a second .version": Case(HEAD + ".version 8.0\n" + BODY, "'.version' may appear only once"),
    ".target before .version": Case(".target sm_80\n.version 8.0\n" + BODY, "must start with .version"),
    ".target after .address_size": Case(HEAD + ".target sm_80\n" + BODY, "'.target' must come right after"),
    ".address_size twice": Case(HEAD + ".address_size 64\n" + BODY, "'.address_size' must come right after"),
    ".target repeated (the last one counts)": Case(
        _in_body(CP_ASYNC, ".version 8.0\n.target sm_75\n.target sm_80\n.address_size 64\n"), None
    ),
    ".target list (the last one counts)": Case(
        _in_body(CP_ASYNC, ".version 8.0\n.target sm_80, sm_75\n.address_size 64\n"), "requires .target sm_80"
    ),
    ".target debug without debug information": Case(
        HEAD.replace("sm_80", "sm_80, debug") + BODY, "'.target debug' needs debug information"
    ),
    ".target debug with a .section": Case(
        HEAD.replace("sm_80", "sm_80, debug") + BODY + ".section .debug_abbrev\n{\n}\n", None
    ),
    ".target map_f64_to_f32": Case(HEAD.replace("sm_80", "sm_80, map_f64_to_f32") + BODY, "map_f64_to_f32"),
    ".target with an unknown option": Case(
        HEAD.replace("sm_80", "sm_80, fast") + BODY, "unknown .target option"
    ),
    ".target with both texmodes": Case(
        HEAD.replace("sm_80", "sm_80, texmode_unified, texmode_independent") + BODY,
        "conflicting .target option",
    ),
    ".target sm_100a under .version 8.6": Case(
        HEAD.replace("8.0", "8.6").replace("sm_80", "sm_100a") + BODY, None
    ),
    ".target sm_100f under .version 8.7": Case(
        HEAD.replace("8.0", "8.7").replace("sm_80", "sm_100f") + BODY, "does not support this .target"
    ),
    "CR-only line ends after a comment": Case(
        ("// generated\n" + HEAD + BODY).replace("\n", "\r"), "missing .version directive"
    ),
    "CR-only line ends": Case((HEAD + BODY).replace("\n", "\r"), None),
    "NUL in a comment": Case(HEAD + "// a\0b\n" + BODY, "NUL character"),
    "vertical tab": Case(_in_body("\t\vmov.u32 %r1, 1;\n"), "unexpected character"),
    # declarations
    "an entry named .reg": Case(
        HEAD + BODY.replace("entry k(", "entry .reg("), "a name cannot start with '.'"
    ),
    "a register named with a dot": Case(_in_body("\t.reg .b32 %a.b;\n"), "a name cannot contain '.'"),
    ".param .global": Case(HEAD + BODY.replace(".param .u64 a", ".param .global .u64 a"), "one state space"),
    ".param .ptr.global": Case(
        HEAD + BODY.replace(".param .u64 a", ".param .u64 .ptr.global .align 8 a"), None
    ),
    "%tid declared, %tid.x used": Case(
        _in_body("\t.reg .b32 %tid;\n\tmov.u32 %r1, %tid.x;\n"), "'%tid' is declared as a register"
    ),
    "%tid declared and used as a register": Case(
        _in_body("\t.reg .b32 %tid;\n\tmov.u32 %tid, 1;\n\tadd.u32 %r1, %tid, 1;\n"), None
    ),
    ".noreturn on an entry": Case(
        HEAD + BODY.replace("(.param .u64 a)", "(.param .u64 a) .noreturn"),
        ".noreturn is allowed on .func only",
    ),
    ".file inside a body": Case(_in_body('\t.file 1 "a.cu"\n'), "'.file' is allowed at module scope only"),
    "mma.sp.sp": Case(_in_body(MMA_SP.replace("mma.sp.", "mma.sp.sp.")), "more than one sparsity qualifier"),
    "a register named like a label of its scope": Case(
        _in_body("$L:\n\t.reg .b32 $L;\n"), "duplicate definition of '$L'"
    ),
    # valid forms
    "a label named %r9": Case(_in_body("%r9:\n\tbra %r9;\n"), None),
    "a label named like a range's register": Case(_in_body("%r1:\n\tmov.u32 %r1, 2;\n"), None),
    "a label named like a special register, then the register": Case(
        _in_body("%tid:\n\tmov.u32 %r1, %tid.x;\n"), "'%tid' is a label here"
    ),
    "a branch back to a label named %tid": Case(_in_body("%tid:\n\tbra %tid;\n"), None),
    "a branch forward to a label named %tid": Case(_in_body("\tbra %tid;\n%tid:\n"), "special register"),
    "a label reused in sibling scopes": Case(
        _in_body("{\n$L1:\n\tmov.u32 %r1, 1;\n\tbra $L1;\n}\n{\n$L1:\n\tbra $L1;\n}\n"), None
    ),
    "a nested label hiding an outer one": Case(_in_body("$L1:\n{\n$L1:\n\tbra $L1;\n}\n\tbra $L1;\n"), None),
    "a branch into a nested scope": Case(
        _in_body("\tbra $L1;\n{\n$L1:\n\tmov.u32 %r1, 1;\n}\n"), "unknown label"
    ),
    # variables of nested `{ }` scopes: seen in their scope only, hiding what enclosing scopes name so
    "a nested scope's .shared used after it": Case(
        _in_body("{\n\t.shared .align 4 .b8 s[64];\n\tst.shared.u32 [s], 1;\n}\n\tld.shared.u32 %r1, [s];\n"),
        "unknown register or variable in address '[s]'",
    ),
    "a nested scope's .local used after it": Case(
        _in_body("{\n\t.local .align 4 .b8 s[8];\n\tst.local.u32 [s], 1;\n}\n\tld.local.u32 %r1, [s];\n"),
        "unknown register or variable in address '[s]'",
    ),
    "a nested scope's variable as an operand after it": Case(
        _in_body("\t.reg .b64 %rd<2>;\n{\n\t.shared .align 4 .b8 s[8];\n}\n\tmov.u64 %rd1, s;\n"),
        "unknown symbol 's'",
    ),
    "variables of one name in sibling scopes": Case(
        _in_body("{\n\t.shared .align 4 .b8 s[8];\n\tst.shared.u32 [s], 1;\n}\n"
                 "{\n\t.shared .align 4 .b8 s[8];\n\tst.shared.u32 [s], 2;\n}\n"),
        None,
    ),
    "a nested variable hiding a variable, a parameter and a register": Case(
        _in_body("\t.shared .align 4 .b8 s[8];\n\t.reg .b64 v;\n{\n\t.shared .align 4 .b8 s[8];\n"
                 "\t.local .align 8 .b8 v[8];\n\t.shared .align 4 .b8 a[8];\n\tst.local.u32 [v], 1;\n"
                 "\tst.shared.u32 [a], 2;\n}\n\tmov.u64 v, 0;\n"),
        None,
    ),
    "a register hidden by a nested variable": Case(
        _in_body("\t.reg .pred s;\n{\n\t.shared .align 4 .b8 s[8];\n\tsetp.eq.u32 s, %r1, 0;\n}\n"),
        "cannot be the name of a variable",
    ),
    "a variable and a register of one nested scope": Case(
        _in_body("{\n\t.reg .b32 s;\n\t.shared .align 4 .b8 s[8];\n}\n"), "duplicate definition of 's'"
    ),
    "a variable named like a range's register of its scope": Case(
        _in_body("{\n\t.shared .align 4 .b8 q1[8];\n\t.reg .b32 q<4>;\n}\n"), "duplicate definition of 'q1'"
    ),
    "a label and a variable of one nested scope": Case(
        _in_body("{\ns:\n\t.shared .align 4 .b8 s[8];\n}\n"), "duplicate definition of 's'"
    ),
    "a variable and a label of one nested scope": Case(
        _in_body("{\n\t.shared .align 4 .b8 s[8];\ns:\n\tbra s;\n}\n"), "duplicate definition of label 's'"
    ),
    "a nested label hiding a variable": Case(
        _in_body("\t.shared .align 4 .b8 s[8];\n{\ns:\n\tbra s;\n}\n"), None
    ),
    "a label named like a variable of a closed scope": Case(
        _in_body("{\n\t.shared .align 4 .b8 s[8];\n}\n\tbra s;\ns:\n"), None
    ),
    # forms ptxas accepts that the engine refuses as not supported (docs/errors.md)
    "a special register as an address": Case(
        _in_body("\tld.global.u32 %r1, [%gridid+12];\n"), "a special register as an address is not supported",
        ptxas_accepts=True,
    ),
    "a special register in a vector operand": Case(
        _in_body("\t.reg .b64 %rd<2>;\n\tmov.b64 %rd1, {%r1, %laneid};\n"),
        "a special register inside a vector operand is not supported",
        ptxas_accepts=True,
    ),
    "the sink _ as a source element": Case(
        _in_body("\t.reg .b16 %h<2>;\n\tmov.b32 %r1, {%h1, _};\n"),
        "sink _ as a source element: not supported",
        ptxas_accepts=True,
    ),
    "an integer literal beyond 64 bits": Case(
        _in_body("\tmov.u32 %r1, 18446744073709551616;\n"), "more than 64 bits; not supported",
        ptxas_accepts=True,
    ),
    "mbarrier.pending_count": Case(
        _in_body("\t.reg .b64 %rd<2>;\n\tmbarrier.pending_count.b64 %r1, %rd1;\n"),
        "unsupported mbarrier.pending_count (not supported",
        ptxas_accepts=True,
    ),
    # refused as an invalid type, not as unsupported (docs/errors.md: the PTX ISA does not describe it)
    "add with .pred besides its type": Case(
        _in_body("\tadd.pred.s32 %r1, %r2, %r3;\n"), "unsupported type .pred.s32", ptxas_accepts=True,
    ),
    "a 32-bit global address in cp.async": Case(
        _in_body(CP_ASYNC.replace("[%rd1]", "[%r2]")), "uses a 32-bit global address: not supported",
        ptxas_accepts=True,
    ),
    "#line directives": Case(
        '#line 1 "k.cu"\n' + _in_body('#line 5 "a.cu"\n# 7 "b.cu" 1 3\n\tmov.u32 %r1, 1; #line 9 "c.cu"\n'),
        None,
    ),
    # .target inside a function body (ptxas reads it there, without ';'): the target of what follows
    ".target at the end of a body": Case(_in_body("\tmov.u32 %r1, 1;\n.target sm_80\n"), None),
    ".target in a nested block, an instruction on its line": Case(
        _in_body("{\n.target sm_80 mov.u32 %r1, 1;\n}\n"), None
    ),
    ".target in a body lowers the target of what follows": Case(
        _in_body(".target sm_75\n" + CP_ASYNC), "requires .target sm_80 or higher"
    ),
    ".target in a body raises the target of what follows": Case(
        _in_body(".target sm_80\n" + CP_ASYNC, HEAD.replace("sm_80", "sm_75")), None
    ),
    ".target in a body is not retroactive": Case(
        _in_body(CP_ASYNC + ".target sm_80\n", HEAD.replace("sm_80", "sm_75")),
        "requires .target sm_80 or higher",
    ),
    ".target with ';' in a body": Case(_in_body(".target sm_80;\n"), "expected an instruction"),
    ".target texmode_independent in a body (texmode_unified by default)": Case(
        _in_body(".target texmode_independent\n"), "conflicting .target option"
    ),
    ".version in a body": Case(_in_body(".version 8.0\n"), "unsupported directive in function body"),
    # a line marker takes its whole line; only a line feed ends it (a CR or form feed is a blank there)
    "a line marker, a bare CR and an instruction": Case(
        _in_body('# 12 "k.cu"\r\tmov.u32 %r2, 1;\n'), "malformed line marker"
    ),
    "a line marker in a file of bare CR line ends": Case(
        _in_body('# 12 "k.cu" 1 3\n').replace("\n", "\r"), "malformed line marker"
    ),
    "a line marker and a comment": Case(_in_body('# 12 "k.cu" 1 3 // c\n'), "malformed line marker"),
    "a line marker with a CR and a form feed among its flags": Case(
        _in_body('# 12 "k.cu" 1\r3\f\n#\f4\r"k.cu"\r\n'), None
    ),
    "#line without a file": Case(_in_body("#line 5\n"), "unsupported preprocessor directive"),
    "#define": Case(_in_body("#define X 1\n"), "unsupported preprocessor directive"),
    "a call of a .func": Case(
        HEAD + ".func f()\n{\n\tret;\n}\n" + BODY.replace("\tret;", "\tcall f;\n\tret;"),
        "function calls ('call') are not supported",
        ptxas_accepts=True,
    ),
    "a .func returning a value": Case(
        HEAD + ".func (.param .b32 r) f(.param .b32 x)\n{\n\t.reg .b32 %q;\n\tld.param.b32 %q, [x];\n"
        "\tst.param.b32 [r], %q;\n\tret;\n}\n" + BODY,
        "st.param in a .func (its return value) is not supported",
        ptxas_accepts=True,
    ),
    "an indirect call": Case(
        _in_body("{\n\t.reg .b64 %fp;\nproto: .callprototype ()_ ();\n\tcall %fp, proto;\n}\n"),
        "function calls (.callprototype, call) are not supported",
        ptxas_accepts=True,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_case(name: str) -> None:
    case = CASES[name]
    err = engine_error(case.text)
    if case.error is None:
        assert err is None, err
    else:
        assert err is not None, f"{name}: loads, ptxas refuses it"
        assert case.error in err, err
        assert re.match(r"^t\.ptx:\d+: ", err), err


SCOPED_VARIABLES = HEAD + """.shared .align 4 .b8 s[16];
.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<3>;
	.reg .b64 v;
	ld.param.u64 %rd1, [out];
	st.shared.u32 [s], 11;
	mov.u64 v, 5;
	{
	.shared .align 4 .b8 s[16];
	.local .align 8 .b8 v[8];
	.shared .align 4 .b8 out[8];
	st.shared.u32 [s], 22;
	st.local.u32 [v], 33;
	st.shared.u32 [out], 66;
	{
	.shared .align 4 .b8 s[16];
	st.shared.u32 [s], 44;
	ld.shared.u32 %r3, [s];
	}
	ld.shared.u32 %r2, [s];
	ld.local.u32 %r4, [v];
	ld.shared.u32 %r6, [out];
	}
	ld.shared.u32 %r1, [s];
	cvt.u32.u64 %r5, v;
	ld.param.u64 %rd2, [out];
	st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};
	st.global.v2.u32 [%rd2+16], {%r5, %r6};
	ret;
}
"""


def test_nested_scope_variables_mean_what_ptxas_makes_of_them() -> None:
    """Each name means the innermost declaration of the scope it is used in: the module's `s`, a block's `s`
    hiding it and an inner block's hiding that; a .local `v` hiding a register; a .shared named like the
    parameter. Before, the second `s` of the function was a duplicate, and a block's variable stayed visible
    after its block (the module's `s` was hidden for the rest of the function)."""
    from stcsim.sim import Engine

    eng = Engine(None)
    eng.load_ptx(SCOPED_VARIABLES)
    out = eng.malloc(24)
    eng.launch("k", 1, 1, [out])
    assert eng.copy_from(out, 6, "uint32").tolist() == [11, 22, 44, 33, 5, 66]
    ptxas = find_ptxas()
    if ptxas is not None:
        assert check_text(ptxas, SCOPED_VARIABLES, "sm_80", "-O0") is None


CONSTANT_EXPRESSIONS = HEAD + """.global .align 4 .u32 init[8] = {1+2*3, (7-9)&0xff, 1<<4, 5>3, 0- 0,
\t0xfffffffe|1};
.visible .entry k(.param .u64 out)
{
\t.reg .b32 %r<10>;
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, --5;
\tmov.u32 %r2, (2+3)*4 - 7/2;
\tmov.u32 %r3, -7 % 3;
\tmov.u32 %r4, 1 ? 0x10 : 0x20;
\tmov.u32 %r5, -1 >> 1 == -1;
\tmov.u64 %rd2, 0xffffffffffffffff >> 60;
\tcvt.u32.u64 %r6, %rd2;
\tld.global.u32 %r7, [init++4*2];
\tadd.s32 %r8, %r7, !0;
\tst.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
\tst.global.v4.u32 [%rd1+16], {%r5, %r6, %r7, %r8};
\tld.global.v4.u32 {%r1, %r2, %r3, %r4}, [init];
\tst.global.v4.u32 [%rd1+32], {%r1, %r2, %r3, %r4};
\tld.global.v4.u32 {%r1, %r2, %r3, %r4}, [init+16];
\tst.global.v4.u32 [%rd1+48], {%r1, %r2, %r3, %r4};
\tret;
}
"""


def test_constant_expressions_evaluate_as_ptxas_does() -> None:
    """Integer constant expressions (PTX ISA, "Constant Expressions": C's operators on 64-bit integers) in
    immediates, address offsets and initial values; the fuzzer found `--1`, `[%rd5++900]` and `{0, 0- 0, ...}`
    accepted by ptxas and refused by the engine."""
    from stcsim.sim import Engine

    eng = Engine(None)
    eng.load_ptx(CONSTANT_EXPRESSIONS)
    out = eng.malloc(64)
    eng.launch("k", 1, 1, [out])
    got = eng.copy_from(out, 16, "uint32").tolist()
    assert got[:8] == [5, 17, 0xFFFFFFFF, 16, 1, 15, 16, 17]
    assert got[8:] == [7, 254, 16, 1, 0, 0xFFFFFFFF, 0, 0]  # the initial values (the last two: zero-filled)
    ptxas = find_ptxas()
    if ptxas is not None:
        assert check_text(ptxas, CONSTANT_EXPRESSIONS, "sm_80", "-O0") is None


def test_cases_are_ptxas_verdicts() -> None:
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas not installed: the recorded verdicts are used as they are")
    wrong = []
    for name, case in CASES.items():
        got = check_text(ptxas, case.text, gate_fuzz.arch_of(case.text), "-O0")
        if (got is None) != case.ptxas_verdict():
            wrong.append(f"{name}: ptxas says {got!r}")
    assert not wrong, "\n".join(wrong)


def test_a_seeded_sample_of_the_fuzzer_agrees_with_ptxas() -> None:
    """A few hundred cases of tests/ptx/gate_fuzz.py (its recorded ptxas verdicts): no silent acceptance, no
    crash, no untyped error."""
    report = gate_fuzz.run(gate_fuzz.cases(seed=7, count=gate_fuzz.SAMPLE), gate_fuzz.load_recorded())
    assert not report.silent, "\n".join(report.silent[:20])
    assert not report.bad, "\n".join(report.bad[:20])

"""The loader refuses what ptxas refuses (issue 18, "Invalid PTX that runs" and the load-time hangs and
untyped errors): each case a PtxError naming file, line and text, raised at once and without allocating what
an absurd declaration asks for."""

from __future__ import annotations

import time

import numpy as np
import pytest
from simkit import Kernels

pytestmark = pytest.mark.sim_only

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"
KERNEL = (
    HEAD
    + """{module}
.visible .entry k(.param .u64 k_param_0){bounds}
{{
\t.reg .pred %p<3>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<4>;
\t.reg .f32 %f<5>;
\t{decl}
\t{body}
\tret;
}}
"""
)
BODY_LINE = 12  # the line of {body} (with an empty {module})


def load(body: str = "", decl: str = "", module: str = "", bounds: str = "") -> list[str]:
    from stcsim.sim import Engine

    return Engine().load_ptx(KERNEL.format(body=body, decl=decl, module=module, bounds=bounds))


def refused(line: int, message: str, **parts: str) -> str:
    """Loads the kernel; asserts a PtxError at `line` holding `message`; returns the error text."""
    from stcsim.sim import PtxError

    with pytest.raises(PtxError) as err:
        load(**parts)
    text = str(err.value)
    assert text.startswith(f"<ptx text>:{line}: "), text
    assert message in text, text
    return text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("add.s32 %r1, [%rd2], %r2;", "operand 2 of 'add.s32' cannot be an address [..]"),
        ("add.s32 %r1, %f1, %r2;", "register %f1 (.f32) does not fit .s32"),
        ("add.s32 %r1, %rd2, %r2;", "register %rd2 (.b64) does not fit .s32"),
        ("add.f32 %f1, %f2, 1;", "is a literal that does not fit .f32"),
        ("mul.wide.u32 %r1, %r2, %r3;", "register %r1 (.b32) does not fit .u64"),
        ("setp.eq.u32 %r1, %r2, %r3;", "register %r1 (.b32) does not fit .pred"),
        ("ld.global.u32 %r1, [%r2];", "uses a 32-bit address"),
        ("ld.global.u32 %r1, [0];", "is a literal address (allowed for .local only)"),
        ("add.u32 %r1, %tid.x, 1;", "cannot be a special register"),
        ("mov.u64 %rd1, %tid.x;", "is a special register of another width"),
        ("add.s32 %r1, %r2, 0b102;", "malformed number '0b102'"),
        ("add.s32 %r1, %r2, 0x12g;", "malformed number '0x12g'"),
        ("add.s32 %r1, %r2, 019;", "malformed number '019'"),
        ("add.s32 %r1, %r2, 99999999999999999999999;", "integer literal out of range"),
        ("add.f32 %f1, %f2, 1e400;", "floating-point literal out of range"),
        ("add.f32 %f1, %f2, -0f3F800000;", "a 0f literal cannot be negated"),
        ("ld.global.u32 %r1, [%rd1-4];", "unsupported address expression"),
        ("mov.b64 %rd1, {%r1 %r2};", "malformed vector operand"),
        ("add.relu.f32 %f1, %f2, %f3;", "unsupported modifier .relu in 'add.relu.f32'"),
        ("add.rn.rz.f32 %f1, %f2, %f3;", "modifiers .rn, .rz exclude each other"),
        ("add.ftz.ftz.f32 %f1, %f2, %f3;", "duplicate modifier .ftz"),
        ("fma.f32 %f1, %f2, %f3, %f4;", "'fma.f32' needs one of .rn, .rz, .rm, .rp"),
        ("max.xorsign.f32 %f1, %f2, %f3;", "needs one of .abs"),
        ("max.xorsign.abs.f32 %f1, %f2, %f3;", "requires .target sm_86 or higher"),
        ("bar.sync 99;", "barrier number 99 out of range 0..15"),
        ("bar.sync 1, 33;", "a barrier's thread count must be a multiple of 32"),
        ("@%r1 bra $L;", "a guard must be a .pred register"),
        ("bra k;\nk:", "a function name is not a label or an operand"),
        ("add.u32 _, %r1, %r2;", "cannot be the sink _"),
        ("cvt.rn.f32.u32 %f1, %tid.x;", "cannot be a special register"),
        ("bfe.u32 %r1, %r2, 256, 1;", "operand 3 of 'bfe.u32' out of range 0..255"),
        ("shfl.sync.bfly.b32 %r1, %r2, 1, 31, %f1;", "register %f1 (.f32) does not fit .u32"),
        ("fma.rn.f16x2 %f1, %f2, %f3, %f4;", "register %f1 (.f32) does not fit .f16x2"),
        ("add.u32 %r1, _, %r2;", "the sink _ is not a source"),
        ("mov.b64 %rd1, {%r1, %rd2};", "incompatible elements of vector expression"),
        ("ld.global.v2.u32 {%r1 %r2}, [%rd1];", "malformed vector operand"),
        ("cvta.to.global.u32 %r1, %r2;", "32-bit generic addresses are not supported"),
        (".pragma 5;", "expected a string"),
        (
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, "
            "{%r5, %rd1}, {%f1, %f2, %f3, %f4};",
            "incompatible elements of vector expression",
        ),
        (
            "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, "
            "{%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r1}, {%f1, %f2, %f3, %f4}, %rd1, 0;",
            "register %rd1 (.b64) does not fit .b32",
        ),
    ],
)
def test_invalid_instructions_are_refused(body, message):
    refused(BODY_LINE, message, body=body)


@pytest.mark.parametrize(
    ("decl", "message"),
    [
        (".reg .b32 %r<8>;", "duplicate definition of register range '%r<'"),
        (".reg .b32 %r3;", "duplicate definition of register '%r3'"),
        (".reg .f32 %r1;", "duplicate definition of register '%r1'"),
        (".reg .b64 k_param_0;", "duplicate definition of 'k_param_0'"),
        (".reg .b32 %q<4294967296>;", "register count out of range"),
        (".shared .b8 a[18446744073709551615];", "exceeds the 49152 bytes of .shared"),
        (".shared .b8 a[4611686018427387904][8];", "array size overflows 64 bits"),
        (".shared .b8 a[30000];\n\t.shared .b8 b[30000];", "uses 60000 bytes of static shared memory"),
        (".local .b8 a[18446744073709551615];", "exceeds the 524288 bytes of .local"),
        (".shared .b8 a[0];", "has no size"),
        (".shared .align 3 .b8 a[4];", "alignment must be a power of two"),
        (".shared .b32 a = 5;", "no initial value is allowed in this state space"),
        (".shared .align 4 a[4];", "variable without a type"),
        (".reg .s16x2 %q;", "type .s16x2 cannot be declared here"),
    ],
)
def test_invalid_declarations_are_refused(decl, message):
    total = "b[30000]" in decl  # a kernel's total: reported at the kernel's name
    refused(5 if total else BODY_LINE - 1, message, decl=decl)


@pytest.mark.parametrize(
    ("module", "message"),
    [
        (".global .b8 g[18446744073709551615];", "exceeds the 1073741824 bytes of .global"),
        (".global .b8 g[600000000];\n.global .b8 h[600000000];", "exceed the engine's limit of 1073741824"),
        (".const .b8 c[70000];", "too much global constant data (70000 bytes, 65536 max"),
        (".const .b8 c[40000];\n.const .b8 d[40000];", "global constant data (80000 bytes, 65536 max"),
        (".global .f32 g = 1;", "initial value type mismatch"),
        (".global .b32 g;\n.global .f32 g;", "duplicate definition of 'g'"),
        (".global .b32 k;", "duplicate definition of 'k'"),
        (".local .b32 l;", "module-scope .local variables are not allowed"),
        (".const .b8 c[4] = {1, , 2};", "expected an initial value"),
        (".visible .visible .global .b32 g;", "duplicate .visible"),
    ],
)
def test_invalid_module_declarations_are_refused(module, message):
    from stcsim.sim import PtxError

    with pytest.raises(PtxError, match="^<ptx text>:[0-9]+: ") as err:
        load(module=module)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        (" .reqntid 0,0,0", "thread count must be in 1 .. 4294967295"),
        (" .maxntid 0", "thread count must be in 1 .. 4294967295"),
        (" .reqntid 4294967296", "thread count must be in 1 .. 4294967295"),
        (" .reqntid 1,2,3,4", "at most three thread counts"),
        (" .maxntid 64 .reqntid 64", "conflicting directives"),
        (" .maxnreg 0", "count must be in 1 .. 4294967295"),
    ],
)
def test_invalid_launch_bounds_are_refused(bounds, message):
    refused(5, message, bounds=bounds)


def test_an_extern_declaration_may_be_repeated():
    ext = ".extern .shared .align 16 .b8 dyn[];"
    assert load(module=f"{ext}\n{ext}") == ["k"]


def test_huge_register_ranges_cost_nothing_until_used():
    t0 = time.perf_counter()
    load(decl=".reg .b32 %q<2147483648>;", body="mov.u32 %q2147483647, 7;")
    assert time.perf_counter() - t0 < 1.0


def test_non_ascii_characters_are_reported_escaped_with_file_and_line(tmp_path):
    from stcsim.sim import Engine, PtxError

    text = KERNEL.format(body="mov.u32 %r1, é;", decl="", module="", bounds="")
    with pytest.raises(PtxError) as err:
        Engine().load_ptx(text)
    want = f"<ptx text>:{BODY_LINE}: non-ASCII character \\xc3\\xa9: `\\x09mov.u32 %r1, \\xc3\\xa9;`"
    assert str(err.value) == want
    path = tmp_path / "latin1.ptx"
    path.write_bytes(text.encode("latin-1"))  # not UTF-8: the engine reads bytes, not text
    with pytest.raises(PtxError, match=rf"^{path}:{BODY_LINE}: non-ASCII character \\xe9: "):
        Engine().load_ptx(path)


OCTAL = (
    HEAD
    + """.visible .entry octal(.param .u64 out)
{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<2>;
\tld.param.u64 %rd1, [out];
\tcvta.to.global.u64 %rd1, %rd1;
\tmov.u32 %r1, 017;
\tmov.u32 %r2, 0B101;
\tmov.u32 %r3, 0x1FU;
\tst.global.v2.u32 [%rd1], {%r1, %r2};
\tst.global.u32 [%rd1+8], %r3;
\tret;
}
"""
)


def test_integer_literals_read_as_ptxas_reads_them(tmp_path):
    path = tmp_path / "octal.ptx"
    path.write_text(OCTAL)
    (out,) = Kernels(path).launch("octal", 1, 1, np.zeros(3, np.uint32))
    assert out.tolist() == [0o17, 0b101, 0x1F]

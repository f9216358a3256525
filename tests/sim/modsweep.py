"""The opcode x modifier x type combinations of the modifier sweep (tests/sim/test_sim_modifiers.py).

Each combination is one instruction, e.g. ``max.xorsign.abs.f32 %f1, %f2, %f3``, with registers of the class
each operand needs. Per opcode the sweep takes its bare form and its base forms (the modifiers it cannot do
without, e.g. ``mul.lo``, ``div.rn``, ``setp.lt``), each alone and with every other modifier added, and a few
multi-modifier forms where modifiers interact; every one of these with every type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

TYPES = (
    "pred", "b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
    "f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "u16x2", "s16x2",
)  # fmt: skip
GENERIC_MODS = (
    "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "ftz", "sat", "approx", "full", "wide", "hi", "lo",
    "cc", "relu", "NaN", "xorsign", "abs", "uni", "satfinite", "shiftamt",
)  # fmt: skip


MEM_MODS = (
    "global", "shared", "shared::cta", "shared::cluster", "local", "param", "const", "ca", "cg", "cs", "lu",
    "cv", "wb", "wt", "nc", "volatile", "relaxed", "acquire", "release", "weak", "mmio", "cta", "gpu", "sys",
    "cluster", "v2", "v4", "v8", "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first",
    "L1::evict_last", "L1::no_allocate", "L2::evict_first", "L2::evict_last", "L2::64B", "L2::128B",
    "L2::256B", "unified",
)  # fmt: skip
ATOM_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")


@dataclass(frozen=True)
class OpSpec:
    """How the sweep forms one opcode: operand count, base forms and the modifiers it tries."""

    arity: int
    bases: tuple[str, ...] = ("",)
    pair: bool = False  # two instruction types (cvt, set, slct): every pair of PAIR_TYPES
    generic: bool = True  # also try every one of GENERIC_MODS (the memory instructions try a few)
    types: tuple[str, ...] = TYPES
    extra: tuple[str, ...] = ()  # opcode-specific modifiers tried on top of the generic ones
    combos: tuple[str, ...] = ()  # multi-modifier forms


_FLOAT_COMBOS = ("rn.ftz", "rn.sat", "ftz.sat", "rn.ftz.sat", "rz.ftz.sat")
_MINMAX = ("xorsign.abs", "NaN.xorsign.abs", "ftz.NaN", "ftz.xorsign.abs", "ftz.NaN.xorsign.abs", "relu",
           "NaN.relu", "ftz.relu", "abs.xorsign")  # fmt: skip
_CMP = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu", "geu",
        "num", "nan")  # fmt: skip

OPCODES: dict[str, OpSpec] = {
    "add": OpSpec(3, combos=_FLOAT_COMBOS + ("cc.sat", "sat.cc")),
    "sub": OpSpec(3, combos=_FLOAT_COMBOS + ("cc.sat",)),
    "addc": OpSpec(3, bases=("", "cc")),
    "subc": OpSpec(3, bases=("", "cc")),
    "mul": OpSpec(3, bases=("", "lo", "hi", "wide"), combos=_FLOAT_COMBOS),
    "mad": OpSpec(4, bases=("", "lo", "hi", "wide", "rn"), combos=("rn.ftz.sat", "lo.cc", "hi.cc", "hi.sat")),
    "madc": OpSpec(4, bases=("lo", "hi"), extra=("cc",)),
    "fma": OpSpec(4, bases=("", "rn"), combos=("rn.ftz.sat", "rn.relu", "rn.ftz.relu", "rz.ftz", "rn.oob")),
    "div": OpSpec(
        3, bases=("", "rn", "approx", "full"), combos=("approx.ftz", "full.ftz", "rn.ftz", "rz.ftz")
    ),
    "rem": OpSpec(3),
    "abs": OpSpec(2),
    "neg": OpSpec(2),
    "min": OpSpec(3, combos=_MINMAX),
    "max": OpSpec(3, combos=_MINMAX),
    "copysign": OpSpec(3),
    "rcp": OpSpec(2, bases=("", "rn", "approx"), combos=("approx.ftz", "rn.ftz", "rz.ftz")),
    "sqrt": OpSpec(2, bases=("", "rn", "approx"), combos=("approx.ftz", "rn.ftz", "rm.ftz")),
    "rsqrt": OpSpec(2, bases=("", "approx"), combos=("approx.ftz",)),
    "sin": OpSpec(2, bases=("", "approx"), combos=("approx.ftz",)),
    "cos": OpSpec(2, bases=("", "approx"), combos=("approx.ftz",)),
    "ex2": OpSpec(2, bases=("", "approx"), combos=("approx.ftz",)),
    "lg2": OpSpec(2, bases=("", "approx"), combos=("approx.ftz",)),
    "tanh": OpSpec(2, bases=("", "approx")),
    "and": OpSpec(3),
    "or": OpSpec(3),
    "xor": OpSpec(3),
    "not": OpSpec(2),
    "cnot": OpSpec(2),
    "shl": OpSpec(3),
    "shr": OpSpec(3),
    "brev": OpSpec(2),
    "clz": OpSpec(2),
    "popc": OpSpec(2),
    "bfe": OpSpec(4),
    "bfi": OpSpec(5),
    "lop3": OpSpec(5),
    "prmt": OpSpec(4, extra=("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")),
    "shf": OpSpec(4, bases=("", "l", "r"), extra=("wrap", "clamp", "l", "r")),
    "testp": OpSpec(2, extra=("finite", "infinite", "number", "notanumber", "normal", "subnormal")),
    "setp": OpSpec(3, bases=("", "lt", "equ"), extra=_CMP + ("and", "or", "xor")),
    "selp": OpSpec(4),
    "set": OpSpec(
        3, extra=_CMP, combos=("lt.and", "lt.ftz", "equ.ftz.or", "eq.xor", "lt.ftz.and"), pair=True
    ),
    "slct": OpSpec(4, pair=True),
    "mov": OpSpec(2),
    "cvt": OpSpec(
        2,
        combos=(
            "rn.ftz",
            "rn.sat",
            "rz.sat",
            "rni.sat",
            "rzi.ftz",
            "rzi.ftz.sat",
            "rn.relu",
            "rn.satfinite",
            "rn.ftz.sat",
            "rn.relu.satfinite",
            "ftz.sat",
            "rz.relu",
        ),
        pair=True,
    ),
    "cvta": OpSpec(
        2,
        generic=False,
        types=("u16", "u32", "u64", "s64", "b64", "f64"),
        bases=("", "global", "shared", "local", "const", "param", "to.global", "to.shared"),
        extra=MEM_MODS + ("to",),
    ),
    "ld": OpSpec(
        2,
        generic=False,
        bases=("", "global", "shared", "local", "param", "const"),
        extra=MEM_MODS,
        combos=(
            "global.nc.v4",
            "global.nc.L1::no_allocate",
            "global.L1::evict_last.v2",
            "volatile.global",
            "relaxed.gpu.global",
            "acquire.sys",
            "global.cg.v2",
            "shared::cta.v4",
            "weak.shared",
        ),
    ),
    "ldu": OpSpec(2, generic=False, bases=("", "global"), extra=MEM_MODS),
    "st": OpSpec(
        2,
        generic=False,
        bases=("", "global", "shared", "local", "param"),
        extra=MEM_MODS,
        combos=(
            "global.wb.v4",
            "release.gpu.global",
            "relaxed.cta.shared",
            "volatile.shared.v2",
            "global.L1::no_allocate.v2",
            "shared::cta.v4",
        ),
    ),
    "atom": OpSpec(
        3,
        generic=False,
        bases=ATOM_OPS + ("global.add", "shared.cas", "global.exch"),
        extra=MEM_MODS + ("noftz",),
        combos=(
            "global.add.noftz",
            "relaxed.gpu.global.add",
            "acq_rel.sys.cas",
            "global.v2.add",
            "add.noftz",
        ),
    ),
    "red": OpSpec(
        2,
        generic=False,
        bases=ATOM_OPS + ("global.add", "shared.min"),
        extra=MEM_MODS + ("noftz",),
        combos=("global.add.noftz", "release.gpu.global.add", "global.v2.add"),
    ),
}
PAIR_TYPES = tuple(t for t in TYPES if t not in ("u16x2", "s16x2"))

# Register classes: the register file of the generated kernels, and which one an operand type takes.
REG_DECLS = (
    ".reg .pred %p<8>;",
    ".reg .b16 %h<8>;",
    ".reg .b32 %r<8>;",
    ".reg .b64 %rd<8>;",
    ".reg .f32 %f<8>;",
    ".reg .f64 %fd<8>;",
)
_REG_CLASS = {
    "pred": "%p", "b8": "%h", "u8": "%h", "s8": "%h", "b16": "%h", "u16": "%h", "s16": "%h", "f16": "%h",
    "bf16": "%h", "b32": "%r", "u32": "%r", "s32": "%r", "f16x2": "%r", "bf16x2": "%r", "u16x2": "%r",
    "s16x2": "%r", "f32": "%f", "b64": "%rd", "u64": "%rd", "s64": "%rd", "f64": "%fd",
}  # fmt: skip
_WIDER = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64", "b16": "b32", "b32": "b64"}


@dataclass(frozen=True)
class Combo:
    """One instruction of the sweep."""

    op: str
    mods: tuple[str, ...]
    type: str

    @property
    def name(self) -> str:
        """The dotted opcode, e.g. ``max.xorsign.abs.f32``."""
        return ".".join((self.op, *self.mods, self.type))

    def operand_types(self) -> list[str]:
        """The type of each operand (destination first); the last operand of lop3 is an immediate."""
        t, op, m = self.type, self.op, self.mods
        n = OPCODES[op].arity
        if op in ("mul", "mad") and "wide" in m:
            w = _WIDER.get(t, t)
            return [w, t, t] + ([w] if op == "mad" else [])
        if op in ("shl", "shr"):
            return [t, t, "u32"]
        if op in ("clz", "popc"):
            return ["u32", t]
        if op == "bfe":
            return [t, t, "u32", "u32"]
        if op == "bfi":
            return [t, t, t, "u32", "u32"]
        if op == "prmt":
            return [t, t, t, t]
        if op == "shf":
            return [t, t, t, "u32"]
        if op == "testp":
            return ["pred", t]
        if op == "setp":
            return ["pred", t, t] + (["pred"] if {"and", "or", "xor"} & set(m) else [])
        if op == "selp":
            return [t, t, t, "pred"]
        if self.op in ("cvt", "set", "slct"):
            d, s = t.split(".")
            if op == "cvt":
                return [d, s] + ([s] if d.endswith("x2") and not s.endswith("x2") else [])
            if op == "set":
                return [d, s, s] + (["pred"] if {"and", "or", "xor"} & set(m) else [])
            return [d, d, d, s]
        return [t] * n

    def _vector(self) -> int:
        return next((int(m[1:]) for m in self.mods if m in ("v2", "v4", "v8")), 1)

    def operands(self) -> list[str]:
        """Operand text: registers %X1 (destination), %X2, ... of each operand's class; memory operands
        [%rd..] for the memory instructions; {..} vectors for .v2/.v4/.v8."""
        cls = _REG_CLASS.get(self.type, "%r")
        vec = self._vector()
        data = f"{cls}1" if vec == 1 else "{" + ", ".join(f"{cls}{i + 1}" for i in range(vec)) + "}"
        if self.op in ("ld", "ldu"):
            return [data, "[%rd7]"]
        if self.op == "st":
            return ["[%rd7]", data]
        if self.op in ("atom", "red"):
            srcs = [f"{cls}3"] + ([f"{cls}4"] if "cas" in self.mods else [])
            return ([data] if self.op == "atom" else []) + ["[%rd7]"] + srcs
        if self.op == "cvta":
            return [f"{cls}1", f"{cls}2"]
        out = []
        for i, ty in enumerate(self.operand_types()):
            if self.op == "lop3" and i == 4:
                out.append("0x96")
            elif self.op == "setp" and i == 0 and self.type.endswith("x2"):
                out.append("%p1|%p2")
            else:
                out.append(f"{_REG_CLASS[ty]}{i + 1}")
        return out

    def line(self) -> str:
        """The instruction as a PTX line."""
        return f"\t{self.name} {', '.join(self.operands())};"


def _mod_sets(spec: OpSpec) -> list[tuple[str, ...]]:
    seen: dict[tuple[str, ...], None] = {}
    for base in spec.bases:
        b = tuple(base.split(".")) if base else ()
        seen[b] = None
        for x in (GENERIC_MODS if spec.generic else ("rn", "ftz", "sat", "wide", "cc")) + spec.extra:
            if x not in b:
                seen[(*b, x)] = None
    for c in spec.combos:
        seen[tuple(c.split("."))] = None
    return list(seen)


def combinations() -> list[Combo]:
    """Every combination of the sweep, in a fixed order."""
    pairs = tuple(f"{d}.{s}" for d in PAIR_TYPES for s in PAIR_TYPES)
    return [
        Combo(op, mods, t)
        for op, spec in OPCODES.items()
        for mods in _mod_sets(spec)
        for t in (pairs if spec.pair else spec.types)
    ]


def module_head(target: str = "sm_90", version: str = "8.0") -> str:
    """The PTX before the instructions of a one-kernel module with the sweep's register file."""
    decls = "".join(f"\t{d}\n" for d in REG_DECLS)
    return f".version {version}\n.target {target}\n.address_size 64\n\n.visible .entry k()\n{{\n{decls}"


MODULE_TAIL = "\tret;\n}\n"


# Forms whose results on silicon (H100, driver 580, CUDA 13) differ from the PTX ISA in a way that looks like
# a compiler or hardware fault rather than a rule: the engine keeps the ISA semantics, the GPU run skips them
# (docs/isa.md, "Silicon deviations").
SILICON_DEVIATIONS: dict[str, Callable[[Combo], bool]] = {
    "madc.hi on 16-bit types (not in the ISA; ptxas accepts it, the H100 adds no high half of the product)": (
        lambda c: c.op == "madc" and "hi" in c.mods and c.type in ("u16", "s16")
    ),
    "madc.hi.sat.s32 (the H100 returned the unsaturated sum where the ISA saturates)": (
        lambda c: c.op == "madc" and "hi" in c.mods and "sat" in c.mods
    ),
    "fma.rz/rm/rp on bf16 (the H100's results are not a rounding of the exact value)": lambda c: (
        c.op == "fma" and c.type in ("bf16", "bf16x2") and bool({"rz", "rm", "rp"} & set(c.mods))
    ),
}


def silicon_deviation(c: Combo) -> str | None:
    """Why silicon computes c differently from the ISA (and the GPU run skips it), or None."""
    return next((why for why, test in SILICON_DEVIATIONS.items() if test(c)), None)


# ---- numeric kernels: one per combination, each thread applying the instruction to its own inputs --------
NUMERIC_OPS = frozenset(op for op in OPCODES if op not in ("cvta", "ld", "ldu", "st", "atom", "red"))
CARRY_IN = frozenset(("addc", "subc", "madc"))
_BITS = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}
TYPE_BYTES = {
    "pred": 1, "b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4,
    "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "u16x2": 4, "s16x2": 4, "b64": 8, "u64": 8,
    "s64": 8, "f64": 8,
}  # fmt: skip


def uses_carry_in(c: Combo) -> bool:
    """Whether the instruction reads the carry flag (addc / subc / madc)."""
    return c.op in CARRY_IN


def writes_carry(c: Combo) -> bool:
    """Whether the instruction writes the carry flag (.cc)."""
    return "cc" in c.mods


def sources(c: Combo) -> list[int]:
    """Indices of the operands that are inputs (every operand but the destination; lop3's table is an
    immediate)."""
    n = len(c.operand_types())
    return [i for i in range(1, n) if not (c.op == "lop3" and i == 4)]


def outputs(c: Combo) -> list[str]:
    """Types of the values a numeric kernel stores per thread: the destination (two predicates for
    setp on a packed pair), then the carry flag when the instruction writes it."""
    d = c.operand_types()[0]
    outs = [d, d] if c.op == "setp" and c.type.endswith("x2") else [d]
    return outs + (["u32"] if writes_carry(c) else [])


def numeric_kernel(c: Combo, name: str) -> str:
    """An entry `name`(in, out): thread t loads operand j from in[j][t] (8-byte slots), executes the
    instruction and stores each output k into out[k][t]; the carry flag in (addc ...) comes from the slot
    after the operands, and a written carry flag goes to the slot after the destination."""
    types = c.operand_types()
    src = sources(c)
    body = [
        "\tmov.u32 %t1, %tid.x;",
        "\tmov.u32 %t2, %ntid.x;",
        "\tmul.wide.u32 %a3, %t1, 8;",
        "\tmul.wide.u32 %a4, %t2, 8;",
        "\tld.param.u64 %a1, [pin];",
        "\tld.param.u64 %a2, [pout];",
        "\tcvta.to.global.u64 %a1, %a1;",
        "\tcvta.to.global.u64 %a2, %a2;",
        "\tadd.u64 %a1, %a1, %a3;",
        "\tadd.u64 %a2, %a2, %a3;",
    ]
    ops = c.operands()

    def slot(base: str, k: int) -> str:
        body.append(f"\tmul.lo.u64 %a5, %a4, {k};")
        body.append(f"\tadd.u64 %a6, {base}, %a5;")
        return "[%a6]"

    for k, i in enumerate(src):
        addr = slot("%a1", k)
        if types[i] == "pred":
            body += [f"\tld.global.u8 %q1, {addr};", f"\tsetp.ne.b16 {ops[i]}, %q1, 0;"]
        else:
            body.append(f"\tld.global.{_BITS[TYPE_BYTES[types[i]]]} {ops[i]}, {addr};")
    if uses_carry_in(c):
        addr = slot("%a1", len(src))
        body += [f"\tld.global.u32 %t3, {addr};", "\tadd.cc.u32 %t3, %t3, -1;"]  # CF = (carry in != 0)
    body.append(c.line())
    dests = ops[0].split("|")
    for k, (ty, reg) in enumerate(zip(outputs(c), (dests + ["%t3"])[: len(outputs(c))], strict=True)):
        addr = slot("%a2", k)
        if k == len(dests):
            body += ["\taddc.u32 %t3, 0, 0;", f"\tst.global.u32 {addr}, %t3;"]
        elif ty == "pred":
            body += [f"\tselp.u16 %q1, 1, 0, {reg};", f"\tst.global.u8 {addr}, %q1;"]
        else:
            body.append(f"\tst.global.{_BITS[TYPE_BYTES[ty]]} {addr}, {reg};")
    decls = "".join(f"\t{d}\n" for d in REG_DECLS)
    extra = "\t.reg .b64 %a<8>;\n\t.reg .b32 %t<4>;\n\t.reg .b16 %q<4>;\n"
    return (
        f".visible .entry {name}(.param .u64 pin, .param .u64 pout)\n{{\n{decls}{extra}"
        + "\n".join(body)
        + "\n\tret;\n}\n"
    )


def numeric_module(combos: list[Combo], target: str = "sm_90", version: str = "8.0") -> str:
    """One module with a numeric kernel per combination, named k0, k1, ... in order."""
    head = f".version {version}\n.target {target}\n.address_size 64\n\n"
    return head + "\n".join(numeric_kernel(c, f"k{i}") for i, c in enumerate(combos))

"""Seeded PTX mutants for the differential test against ptxas (tests/sim/test_ptxas_fuzz.py).

The corpus is the kernel set (ptx_kernels/*.ptx) and the test PTX (tests/sim/cuda/*.ptx). A mutant is one
module: the corpus file's module-level part and one of its functions, with one mutation: a token deleted,
duplicated or replaced (an opcode, a modifier, a type, a register, a literal, an operand of another kind),
a declaration changed (a register type or count, an array size, an alignment, launch bounds), or a line
deleted or duplicated. The header (.version, .target, .address_size) is left alone. Everything is drawn
from one `random.Random(seed)`, so a seed gives the same mutants on every machine.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

import modsweep

ROOT = Path(__file__).resolve().parents[2]
# The research instructions (wmma...smma, engine/ext/) exist only in the simulator: ptxas refuses every kernel
# that uses them, so they cannot be a differential seed.
_RESEARCH = re.compile(r"^\s*wmma\S*\.smma\b", re.M)
_ALL = [*sorted((ROOT / "ptx_kernels").glob("*.ptx")),
        *sorted((ROOT / "tests" / "sim" / "cuda").glob("*.ptx"))]
CORPUS = [p for p in _ALL if not _RESEARCH.search(p.read_text())]

_TOKEN = re.compile(r'\s+|//.*|"[^"]*"|[A-Za-z_$%.][\w$%.]*(?:::\w+)*|\d[\w.]*(?:[eE][+-]\d+)?|.')
_FUNC = re.compile(r"^\s*(\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\b")

LITERALS = (
    "0", "1", "-1", "7", "31", "32", "33", "64", "255", "256", "1024", "4096", "65536", "2147483647",
    "4294967295", "4294967296", "18446744073709551615", "18446744073709551616", "99999999999999999999999",
    "017", "019", "0x1F", "0x12g", "0b101", "0b102", "1u", "1U", "1.5", "-2.5", "1e5", "1e400", "1.5e",
    "0f3F800000", "0f3F80000", "-0f3F800000", "0d3FF0000000000000", "0d3FF", "-0d3FF0000000000000",
)  # fmt: skip
SPECIAL = ("%tid.x", "%tid.w", "%tid", "%ntid.y", "%ctaid.x", "%laneid", "%laneid.x", "%warpid", "%clock",
           "%clock64", "%smid", "%nsmid", "%lanemask_lt", "%globaltimer", "%gridid", "%nope")  # fmt: skip
TYPES = modsweep.TYPES + ("b128", "tf32", "f8", "x32")


@dataclass
class Source:
    """A corpus file split into its module-level lines and its functions (line ranges)."""

    path: Path
    lines: list[str]
    module_lines: list[int]  # indices of the lines outside every function (header included)
    functions: list[tuple[int, int]]  # [first, last] line indices of each function
    pools: dict[str, list[str]]  # tokens seen in the file, by kind


def _split(lines: list[str]) -> tuple[list[int], list[tuple[int, int]]]:
    module, funcs, i = [], [], 0
    while i < len(lines):
        if not _FUNC.match(lines[i]):
            module.append(i)
            i += 1
            continue
        start, depth, seen = i, 0, False
        while i < len(lines):
            code = lines[i].split("//")[0]
            depth += code.count("{") - code.count("}")
            seen |= "{" in code
            i += 1
            if seen and depth == 0:
                break
            if not seen and code.rstrip().endswith(";"):  # a prototype
                break
        funcs.append((start, i - 1))
    return module, funcs


def load_source(path: Path) -> Source:
    """Reads and splits one corpus file, with its pools of opcodes, modifiers, registers and names."""
    lines = path.read_text().splitlines()
    module, funcs = _split(lines)
    pools: dict[str, set[str]] = {"opcode": set(), "mod": set(), "reg": set(), "name": set(), "label": set()}
    for ln in lines:
        code = ln.split("//")[0].strip()
        toks = [t for t in _TOKEN.findall(code) if t.strip()]
        if not toks:
            continue
        if toks[0][0].isalpha() or (toks[0] == "@" and len(toks) > 3):
            op = toks[0] if toks[0] != "@" else toks[2 if toks[1] != "!" else 3]
            pools["opcode"].add(op)
            pools["mod"].update("." + m for m in op.split(".")[1:])
        for t in toks:
            if t.startswith("%") and "." not in t:
                pools["reg"].add(t)
            elif t.startswith("$"):
                pools["label"].add(t)
            elif t[0].isalpha() and "." not in t and not t[0].isdigit():
                pools["name"].add(t)
    extra = modsweep.GENERIC_MODS + modsweep.MEM_MODS + ("sync", "aligned", "uni")
    pools["mod"].update("." + m for m in extra)
    return Source(path, lines, module, funcs, {k: sorted(v) for k, v in pools.items()})


@dataclass
class Mutant:
    """One mutant module: its text, the corpus file and function it came from, and what was done."""

    text: str
    source: str
    arch: str
    what: str


def _arch(lines: list[str]) -> str:
    target = next((ln.split()[1].rstrip(",") for ln in lines if ln.startswith(".target")), "sm_80")
    return target if target.startswith("sm_") else "sm_80"


def _tokens(line: str) -> list[str]:
    return _TOKEN.findall(line)


def _mutate_line(rng: random.Random, src: Source, line: str) -> tuple[str, str] | None:
    """One token-level mutation of `line`; (new line, description) or None when it has nothing to mutate."""
    code, sep, comment = line.partition("//")
    toks = _tokens(code)
    idx = [i for i, t in enumerate(toks) if t.strip()]
    if not idx:
        return None
    i = rng.choice(idx)
    t = toks[i]
    kind = rng.choice(("delete", "duplicate", "replace", "replace", "replace", "replace", "swap"))
    commas = [j for j, x in enumerate(toks) if x == ","]
    if kind == "swap" and len(commas) >= 1:  # two neighbouring operands trade places
        c = rng.choice(commas)
        left = max((j for j in idx if j < c), default=None)
        right = min((j for j in idx if j > c), default=None)
        if left is not None and right is not None:
            toks[left], toks[right] = toks[right], toks[left]
            return "".join(toks) + sep + comment, f"swap {toks[right]!r} and {toks[left]!r}"
        kind = "replace"
    if kind == "delete":
        toks[i] = ""
    elif kind == "duplicate":
        toks[i] = t + (" " if t[0].isalnum() or t[0] in "%$." else "") + t
    else:
        toks[i] = _replacement(rng, src, t)
    return "".join(toks) + sep + comment, f"{kind} {t!r} -> {toks[i]!r}"


def _replacement(rng: random.Random, src: Source, t: str) -> str:
    pools = src.pools
    if "." in t and t[0].isalpha():  # a dotted opcode: change one modifier or type, or the whole opcode
        parts = t.split(".")
        how = rng.choice(("mod", "mod", "type", "sized", "drop", "add", "opcode"))
        j = rng.randrange(1, len(parts)) if len(parts) > 1 else 1
        if how == "opcode" or len(parts) == 1:
            return rng.choice(pools["opcode"])
        if how == "drop":
            return ".".join(parts[:j] + parts[j + 1 :])
        if how == "sized":  # a type of the same width: .u32 -> .s32 / .b32 / .f32 ...
            width = modsweep.TYPE_BYTES.get(parts[j])
            same = [x for x in modsweep.TYPES if modsweep.TYPE_BYTES.get(x) == width and x != parts[j]]
            if same:
                return ".".join(parts[:j] + [rng.choice(same)] + parts[j + 1 :])
        new = rng.choice(pools["mod"])[1:] if how in ("mod", "add") else rng.choice(TYPES)
        return ".".join(parts[:j] + [new] + parts[j + (how != "add") :])
    if t.startswith(".") and len(t) > 1:  # a directive or declaration modifier
        return rng.choice(pools["mod"] + [f".{x}" for x in TYPES] + [".align", ".extern", ".reg", ".shared"])
    if t.startswith("%"):
        r = rng.random()
        if r < 0.6 and pools["reg"]:
            return rng.choice(pools["reg"])
        if r < 0.8:
            return rng.choice(SPECIAL)
        return rng.choice(("_", "[" + rng.choice(pools["reg"] or ["%r1"]) + "]", rng.choice(LITERALS)))
    if t[0].isdigit() or t == "-":
        return rng.choice(LITERALS)
    if t[0] == "$" or t[0].isalpha():
        return rng.choice(pools["label"] + pools["name"] + pools["reg"][:5] or [t])
    if t in ",;[]{}<>|!@+:":
        return rng.choice(",;[]{}<>|!@+-:")
    return rng.choice(LITERALS)


def _mutate_decl(rng: random.Random, line: str) -> tuple[str, str] | None:
    """A declaration-specific mutation: a register count, an array size, an alignment, launch bounds."""
    for pattern, values in (
        (r"<(\d+)>", ("0", "1", "4294967295", "4294967296", "100000000")),
        (r"\[(\d+)\]", ("0", "1", "49153", "1000000", "18446744073709551615", "4611686018427387904][8")),
        (r"\.align (\d+)", ("0", "3", "1", "4096")),
        (r"\.(?:maxntid|reqntid) ([\d, ]+)", ("0", "0, 0, 0", "1024, 2", "1, 2, 3, 4", "4294967296")),
    ):
        m = re.search(pattern, line)
        if m:
            v = rng.choice(values)
            return line[: m.start(1)] + v + line[m.end(1) :], f"declaration {m.group(1)!r} -> {v!r}"
    return None


def mutant(rng: random.Random, src: Source) -> Mutant:
    """One random mutant of `src`."""
    f0, f1 = rng.choice(src.functions)
    body = list(range(f0, f1 + 1))
    candidates = [i for i in body + src.module_lines if _mutable(src.lines[i])]
    target = rng.choice(candidates)
    lines = list(src.lines)
    r = rng.random()
    change: tuple[str, str] | None = None
    if r < 0.08:
        lines[target] = ""
        change = ("", f"line {target + 1} deleted")
    elif r < 0.16:
        lines[target] = lines[target] + "\n" + lines[target]
        change = ("", f"line {target + 1} duplicated")
    elif r < 0.3:
        change = _mutate_decl(rng, lines[target])
    if change is None:
        change = _mutate_line(rng, src, lines[target])
        if change is None:
            return mutant(rng, src)
    if change[0] or not change[1].startswith("line"):
        lines[target] = change[0]
    if rng.random() < 0.1:  # now and then a second token mutation, on another line of the function
        other = rng.choice(candidates)
        second = _mutate_line(rng, src, lines[other])
        if second is not None:
            lines[other] = second[0]
            change = (change[0], f"{change[1]}; line {other + 1}: {second[1]}")
    keep = [i for i in src.module_lines if not _FUNC.match(src.lines[i])] + body
    text = "\n".join(lines[i] for i in sorted(set(keep))) + "\n"
    return Mutant(text, src.path.name, _arch(src.lines), f"{src.path.name}:{target + 1}: {change[1]}")


def _mutable(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith(("//", ".version", ".target", ".address_size", ".loc", ".file"))


def mutants(seed: int, count: int) -> list[Mutant]:
    """`count` mutants drawn with `seed`, round-robin over the corpus files."""
    rng = random.Random(seed)
    sources = [load_source(p) for p in CORPUS]
    return [mutant(rng, sources[i % len(sources)]) for i in range(count)]

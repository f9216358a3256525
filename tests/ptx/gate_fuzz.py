"""A differential fuzzer of the loader against ptxas, aimed at what the token fuzzer (tests/sim/ptxfuzz.py)
leaves alone: the module header, the .target / .version gates, declarations, labels and scopes, line
markers and odd bytes.

A case is a module: a corpus file (the kernel set, the test PTX, the calibration kernels) cut down to its
module-level lines and one function, or a gate probe (tests/ptx/gate_probes.py) under some target and
version, with one or two mutations: a header line dropped, duplicated, moved or swapped, another target or
version, a .target option, a directive before .version, a register or label renamed (to a special
register's name, a name with a dot, a register's name), a region wrapped in `{ }`, an invalid declaration,
a `#line` marker, a NUL, a vertical tab or CR line ends. ptxas (with -arch the module's last target, sm_75
for older ones) gives the verdict; the engine loads each case in a worker process (a crash or hang takes
the worker, not the run).

    python tests/ptx/gate_fuzz.py [--count 2500] [--seed 1] [--record]

prints the table: cases, agreements, the cases ptxas refuses and the engine loads (silent), those ptxas
accepts and the engine refuses, crashes, hangs and untyped exceptions, by mutation. ``--record`` writes the
verdicts of the seeded sample the test suite runs (tests/ptx/test_ptx_gating.py) to data/.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import re
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "sim"))
sys.path.insert(0, str(ROOT / "tests" / "ext"))
sys.path.insert(0, str(HERE))
import gate_probes as gp  # noqa: E402
from ptxas_oracle import CRASHED, check_text, find_ptxas, text_key  # noqa: E402

DATA = HERE / "data" / "gate_fuzz_verdicts.json"
SAMPLE = 300  # cases of the seeded sample the test suite runs (seed 7)
LOAD_SECONDS = 20.0

_RESEARCH = re.compile(r"^\s*wmma\S*\.smma\b", re.M)
_FUNC = re.compile(r"^\s*(\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\b")
_SPECIAL = ("%tid", "%ntid", "%laneid", "%ctaid", "%clock", "%smid", "%warpid")


def corpus() -> list[Path]:
    """The PTX files the cases start from (the simulator-only research instructions left out)."""
    files = [
        *sorted((ROOT / "ptx_kernels").glob("*.ptx")),
        *sorted((ROOT / "tests" / "sim" / "cuda").glob("*.ptx")),
        *sorted((ROOT / "tests" / "ext" / "cuda").glob("*.ptx")),
        *sorted((ROOT / "benchmarks" / "calibration" / "kernels").glob("*.ptx")),
    ]
    return [p for p in files if not _RESEARCH.search(p.read_text())]


def wgmma_kernel(sparse: bool) -> str:
    """A one-wgmma kernel of the Hopper tests (.version 8.7, .target sm_90a)."""
    import hopper_ptx

    return hopper_ptx.mma_ptx(64, "f16", False, sparse, 1, 1, 1, 0, 0, 4096)


def arch_of(text: str) -> str:
    """The -arch for ptxas: the module's last target (an option of .target naming one counts), sm_75 for
    older targets, sm_80 when there is none."""
    targets = [m.group(1) for ln in re.split(r"[\r\n]", text) if (m := re.match(r"\s*\.target\s+(.*)", ln))]
    names = re.findall(r"\b(?:sm|compute)_(\d+[af]?)\b", "\n".join(targets))
    if not names:
        return "sm_80"
    last = names[-1]
    return f"sm_{last}" if int(re.sub(r"\D", "", last)) >= 75 else "sm_75"


def _functions(lines: list[str]) -> tuple[list[int], list[tuple[int, int]]]:
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
            if (seen and depth == 0) or (not seen and code.rstrip().endswith(";")):
                break
        funcs.append((start, i - 1))
    return module, funcs


@dataclass
class Case:
    """One module, where it came from and what was done to it."""

    text: str
    source: str
    kinds: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return text_key(arch_of(self.text) + self.text)


def _base(rng: random.Random, files: list[Path]) -> Case:
    if rng.random() < 0.3:  # a probe under a target and version of its grid
        name = rng.choice(sorted(gp.PROBES))
        target, version = rng.choice(gp.grid(rng.choice(gp.TARGETS)))
        return Case(gp.module(target, version, f"\t{gp.PROBES[name]}\n"), f"probe {name}")
    path = rng.choice(files)
    lines = path.read_text().splitlines()
    module, funcs = _functions(lines)
    bodies = [f for f in funcs if any("{" in lines[i] for i in range(f[0], f[1] + 1))]
    f0, f1 = rng.choice(bodies or funcs)
    keep = sorted({i for i in module} | set(range(f0, f1 + 1)))
    return Case("\n".join(lines[i] for i in keep) + "\n", path.name)


def _header_lines(lines: list[str]) -> list[int]:
    return [i for i, ln in enumerate(lines) if re.match(r"\s*\.(version|target|address_size)\b", ln)]


def _mutate(rng: random.Random, case: Case) -> None:
    lines = case.text.split("\n")
    head = _header_lines(lines)
    body = [i for i, ln in enumerate(lines) if ln.startswith("\t") or ln.startswith("  ")]
    entry = next((i for i, ln in enumerate(lines) if _FUNC.match(ln)), None)
    kind = rng.choice(
        (
            "drop header line",
            "duplicate header line",
            "swap header lines",
            "move header line down",
            "other target",
            "other version",
            "target option",
            "directive before .version",
            "rename register",
            "rename label",
            "wrap region in { }",
            "invalid declaration",
            "line marker",
            "odd byte",
            "mma.sp.sp",
            "gate probe swap",
        )
    )
    if kind in ("drop header line", "duplicate header line", "move header line down") and head:
        i = rng.choice(head)
        if kind == "drop header line":
            lines[i] = ""
        elif kind == "duplicate header line":
            lines[i] = lines[i] + "\n" + lines[i]
        else:
            moved, lines[i] = lines[i], ""
            lines.insert(rng.randrange(i + 1, len(lines) + 1), moved)
    elif kind == "swap header lines" and len(head) >= 2:
        a, b = rng.sample(head, 2)
        lines[a], lines[b] = lines[b], lines[a]
    elif kind == "other target" and head:
        t = rng.choice((*gp.TARGETS, "sm_87", "compute_80", "sm_100a", "sm_52"))
        lines = [re.sub(r"^(\s*\.target\s+)\w+", rf"\g<1>{t}", ln) for ln in lines]
    elif kind == "other version" and head:
        v = rng.choice(gp.VERSIONS)
        lines = [re.sub(r"^(\s*\.version\s+)[\d.]+", rf"\g<1>{v}", ln) for ln in lines]
    elif kind == "target option" and head:
        opt = rng.choice(
            (
                "debug",
                "texmode_unified",
                "texmode_independent",
                "map_f64_to_f32",
                "sm_75",
                "sm_90",
                "bogus",
                "texmode_unified, texmode_independent",
                "debug, texmode_unified",
            )
        )
        lines = [ln + f", {opt}" if re.match(r"\s*\.target\b", ln) else ln for ln in lines]
        if "debug" in opt and rng.random() < 0.5:
            lines.append(".section .debug_abbrev\n{\n}")
    elif kind == "directive before .version":
        lines.insert(
            0,
            rng.choice(
                (
                    '.pragma "nounroll";',
                    '.file 1 "a.cu"',
                    "// a comment",
                    '#line 1 "a.cu"',
                    ".global .u32 gv;",
                    "#pragma once",
                )
            ),
        )
    elif kind == "rename register":
        regs = sorted(
            set(re.findall(r"(%[A-Za-z_]\w*)<\d+>", case.text))
            | set(re.findall(r"\.reg\s+\.\w+\s+(%[A-Za-z_]\w*)\s*;", case.text))
        )
        if regs:
            old = rng.choice(regs)
            new = rng.choice((*_SPECIAL, old + ".x", "%" + old[1:].upper() + "q", ".reg", "%r"))
            lines = [re.sub(re.escape(old) + r"(?=[\d<;,\s\]}|)])", new, ln) for ln in lines]
    elif kind == "rename label":
        labels = sorted(set(re.findall(r"^\s*([$\w%]+):", case.text, re.M)))
        if labels:
            old = rng.choice(labels)
            new = (
                rng.choice(("%L0", "%r1", "a.b", "$L__dup", "%tid", "%q9"))
                if rng.random() < 0.7
                else labels[0]
            )
            lines = [re.sub(r"(?<![\w$%])" + re.escape(old) + r"(?![\w$])", new, ln) for ln in lines]
    elif kind == "wrap region in { }" and body:
        a = rng.choice(body)
        b = min(len(lines) - 1, a + rng.randrange(1, 12))
        if all(lines[i].startswith(("\t", "  ")) or not lines[i].strip() for i in range(a, b + 1)):
            lines.insert(b + 1, "}")
            lines.insert(a, "{")
    elif kind == "invalid declaration" and entry is not None:
        how = rng.randrange(7)
        if how == 0:
            lines[entry] = re.sub(r"(\.entry\s+)[\w$]+", r"\1.reg", lines[entry])
        elif how == 1:
            lines = [ln.replace(".param .u64", ".param .global .u64", 1) for ln in lines]
        elif how == 2 and body:
            lines.insert(rng.choice(body), "\t.reg .b32 %tid;")
        elif how == 3 and body:
            lines.insert(rng.choice(body), '\t.file 9 "x.cu"')
        elif how == 4:
            lines = [
                re.sub(r"\)\s*$", ") .noreturn", ln) if i >= entry and ln.rstrip().endswith(")") else ln
                for i, ln in enumerate(lines)
            ]
        elif how == 5 and body:
            lines.insert(
                rng.choice(body), rng.choice(("\t.reg .b32 a.b;", "\t.reg .b32 .x;", "\t.reg .b32 %q.<2>;"))
            )
        elif body:
            lines.insert(rng.choice(body), "\t.reg .b32 %tid;\n\tmov.u32 %tid, %tid.x;")
    elif kind == "line marker" and body:
        lines.insert(
            rng.choice(body),
            rng.choice(
                (
                    '#line 3 "k.cu"',
                    '# 12 "k.cu" 1 3',
                    "#line 3",
                    "# 3",
                    '#  line 4 "x"',
                    "#define A 1",
                    '#line 0x3 "k"',
                )
            ),
        )
    elif kind == "odd byte":
        how = rng.randrange(4)
        if how == 0:
            lines.insert(rng.randrange(len(lines)), "// nul \0 here")
        elif how == 1 and body:
            lines[rng.choice(body)] = "\v" + lines[rng.choice(body)]
        elif how == 2:
            case.text = "\n".join(lines).replace("\n", "\r")
            case.kinds.append(kind)
            return
        else:
            lines.insert(rng.randrange(len(lines)), "// form feed \f and tab \t")
    elif kind == "mma.sp.sp":
        lines = [ln.replace("mma.sp.", "mma.sp.sp.") for ln in lines]
    elif kind == "gate probe swap" and body:
        lines.insert(rng.choice(body), "\t" + rng.choice(list(gp.PROBES.values())).replace("[sm]", "[%rd1]"))
    else:
        return _mutate(rng, case)
    case.text = "\n".join(lines)
    case.kinds.append(kind)


def cases(seed: int, count: int) -> list[Case]:
    """`count` cases drawn with `seed` (the same on every machine)."""
    rng = random.Random(seed)
    files = corpus()
    out = []
    for _ in range(count):
        c = _base(rng, files)
        for _ in range(1 if rng.random() < 0.8 else 2):
            _mutate(rng, c)
        out.append(c)
    return out


# ---- verdicts ------------------------------------------------------------------------------------------
def ptxas_verdicts(todo: list[Case], known: dict[str, str | None]) -> dict[str, str | None]:
    """key -> ptxas's verdict (None: accepted) of every case: recorded, or computed where ptxas is
    installed."""
    out = {c.key: known[c.key] for c in todo if c.key in known}
    ptxas = find_ptxas()
    missing = [c for c in todo if c.key not in out]
    if ptxas and missing:
        with ThreadPoolExecutor(max_workers=2) as pool:
            got = list(pool.map(lambda c: check_text(ptxas, c.text, arch_of(c.text), "-O0"), missing))
        for c, v in zip(missing, got, strict=True):
            if not (v or "").startswith(CRASHED):
                out[c.key] = None if v is None else re.sub(r"^ptxas \S+, ", "", v)[:160]
    return out


def load_recorded() -> dict[str, str | None]:
    """The recorded ptxas verdicts of the seeded sample."""
    return json.loads(DATA.read_text()) if DATA.exists() else {}


def _worker(conn) -> None:
    from stcsim import _engine

    while True:
        job = conn.recv()
        if job is None:
            return
        try:
            _engine.Engine(True).load_ptx(job.encode("latin-1"), "fuzz.ptx")
            conn.send(("ok", ""))
        except _engine.PtxError as e:
            conn.send(("ptx", str(e)))
        except BaseException as e:  # noqa: BLE001 - what the fuzzer looks for
            conn.send(("untyped", f"{type(e).__name__}: {e}"))


class Loader:
    """Engine loads in a worker process, restarted after a crash or a hang."""

    def __init__(self) -> None:
        self._ctx = multiprocessing.get_context("fork")
        self._start()

    def _start(self) -> None:
        self._conn, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker, args=(child,), daemon=True)
        self._proc.start()

    def load(self, text: str) -> tuple[str, str]:
        """(ok | ptx | untyped | crash | hang, message)."""
        try:
            self._conn.send(text)
            if self._conn.poll(LOAD_SECONDS):
                return self._conn.recv()
            outcome = ("hang", f"no answer within {LOAD_SECONDS} s")
        except (EOFError, BrokenPipeError, ConnectionResetError):
            outcome = ("crash", f"worker died (exit code {self._proc.exitcode})")
        self._proc.kill()
        self._proc.join()
        self._start()
        return outcome

    def close(self) -> None:
        self._conn.send(None)
        self._proc.join(5)


@dataclass
class Report:
    """What a run found."""

    cases: int = 0
    judged: int = 0
    agree: int = 0
    silent: list[str] = field(default_factory=list)  # ptxas refuses, the engine loads
    strict: list[str] = field(default_factory=list)  # ptxas accepts, the engine refuses
    bad: list[str] = field(default_factory=list)  # crashes, hangs, untyped errors, errors without a line
    silent_by: Counter = field(default_factory=Counter)
    strict_by: Counter = field(default_factory=Counter)
    outcomes: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)  # cases per mutation
    verdicts: dict = field(default_factory=dict)  # ptxas's, by case key


def _reason(message: str) -> str:
    what = message.split(": ", 1)[1].rsplit(": `", 1)[0] if ": " in message else message
    return re.sub(r"'[^']*'|\.[\w:]+|%\w+|\d+", "_", what)[:80]


def run(todo: list[Case], known: dict[str, str | None]) -> Report:
    """Loads every case and compares with ptxas."""
    verdicts = ptxas_verdicts(todo, known)
    rep = Report(cases=len(todo), verdicts=verdicts)
    loader = Loader()
    try:
        for c in todo:
            kind, msg = loader.load(c.text)
            rep.outcomes[kind] += 1
            what = f"{c.source} [{', '.join(c.kinds)}]"
            rep.kinds.update(c.kinds)
            if kind in ("crash", "hang", "untyped"):
                rep.bad.append(f"{kind}: {what}: {msg}")
                continue
            if kind == "ptx" and not re.match(r"^fuzz\.ptx:\d+: ", msg):
                rep.bad.append(f"error without a line: {what}: {msg}")
            if c.key not in verdicts:
                continue
            rep.judged += 1
            ptxas_ok = verdicts[c.key] is None
            if ptxas_ok == (kind == "ok"):
                rep.agree += 1
            elif kind == "ok":
                rep.silent.append(f"{what}: ptxas: {verdicts[c.key]}")
                rep.silent_by[" + ".join(c.kinds)] += 1
            else:
                rep.strict.append(f"{what}: {msg[:200]}")
                rep.strict_by[_reason(msg)] += 1
    finally:
        loader.close()
    return rep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=2500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--record", action="store_true", help="record the verdicts of the test suite's sample")
    ap.add_argument("--show", type=int, default=5, help="examples shown per list")
    args = ap.parse_args()
    if args.record:
        sample = cases(7, SAMPLE)
        got = ptxas_verdicts(sample, {})
        DATA.parent.mkdir(exist_ok=True)
        DATA.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n")
        print(f"recorded {len(got)} verdicts in {DATA}")
        return
    rep = run(cases(args.seed, args.count), {})
    print(
        "| cases | with a ptxas verdict | agreements | silent (ptxas refuses, engine loads) | "
        f"engine refuses, "
        f"ptxas accepts | crashes | hangs | untyped |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| {rep.cases} | {rep.judged} | {rep.agree} | {len(rep.silent)} | {len(rep.strict)} | "
        f"{rep.outcomes['crash']} | {rep.outcomes['hang']} | {rep.outcomes['untyped']} |"
    )
    refused = sum(1 for c in rep.verdicts.values() if c is not None)
    print(f"\nptxas refuses {refused} of the cases, the engine {rep.outcomes['ptx']}; cases by mutation:")
    for k, n in rep.kinds.most_common():
        print(f"  {n:4d}  {k}")
    print("\nsilent, by mutation:")
    for k, n in rep.silent_by.most_common():
        print(f"  {n:4d}  {k}")
    for s in rep.silent[: args.show]:
        print("    e.g.", s[:300])
    print("\nengine refuses what ptxas accepts, by reason:")
    for k, n in rep.strict_by.most_common():
        print(f"  {n:4d}  {k}")
    for s in rep.strict[: args.show]:
        print("    e.g.", s[:300])
    for s in rep.bad[: args.show]:
        print("BAD", s[:300])


if __name__ == "__main__":
    main()

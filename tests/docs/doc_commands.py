"""The commands that README.md and docs/*.md show, found and classified (issue 45 item 6, docs as tests).

A command is found
- in a fenced code block: every line of a ```bash / ```sh / ```console / unlabelled block that starts with a
  command word (``invoke``, ``python``, ``pip``, ``bash``, ``OUT=...``, ``nvcc``, ...; a trailing
  ``# comment`` dropped), and every ```python block as a whole (a Python snippet);
- in an inline code span (tables, prose) whose text starts with a command word, e.g. `invoke workloads`;
  a span may run over a line break, the line reported is the one it starts on; ``\\|`` in a table cell is
  ``|``.

``classify`` sorts each into a kind (invoke, python-m, python-script, python-snippet, shell) and a tier
(gpu: needs an NVIDIA GPU, CuPy, nvcc or Nsight Compute; install: changes the environment; long: minutes or
more, parsed only; run: cheap enough to run; host-tool: perf, cmake). ``concrete_argv`` turns a documented
synopsis (``[--config C]``, ``a\\|b``, ``...``) into an argv a real parser can check.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def doc_files() -> list[Path]:
    """README.md and every docs/*.md, in a fixed order."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@dataclass(frozen=True)
class DocCommand:
    file: str  # relative to the repository root
    line: int  # 1-based line where the command (or the snippet's first line) is
    text: str  # the command as documented (whitespace collapsed; a snippet's code as is)
    source: str  # "fence" or "inline"

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def kind(self) -> str:
        return classify(self)[0]

    @property
    def tier(self) -> str:
        return classify(self)[1]

    @property
    def reason(self) -> str:
        return classify(self)[2]

    def __str__(self) -> str:  # pytest ids and messages
        return f"{self.where}: {self.text.splitlines()[0]}"


_ENV = r"(?:[A-Z][A-Z0-9_]*=\S*\s+)*"
# a command: optional VAR=value prefixes, then a command word with at least one argument (a bare `nvcc` or
# `invoke` in prose names a tool, it is no command), or a bare .sh script path
_COMMAND = re.compile(
    rf"^{_ENV}(?:(?:invoke|inv|python3?|pip|bash|sh|nvcc|ncu|perf|cmake)\s+\S"
    r"|(?:\./)?benchmarks/\S+\.sh\b)"
)
_SHELL_FENCES = {"bash", "sh", "shell", "console", ""}
_PYTHON_FENCES = {"python", "py", "python3"}


def _is_command(text: str) -> bool:
    return bool(_COMMAND.match(text))


def _strip_comment(line: str) -> str:
    """A shell line without its trailing ``# comment`` (a ``#`` inside quotes or a word stays)."""
    out, quote = [], ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            break
        out.append(ch)
    return "".join(out).rstrip()


def extract(path: Path) -> list[DocCommand]:
    """Every command and Python snippet of one markdown file, in order."""
    rel = path.relative_to(REPO).as_posix()
    lines = path.read_text().splitlines()
    found: list[DocCommand] = []
    prose: list[tuple[int, str]] = []  # (line number, text) outside fences, for the inline spans
    fence = None  # (marker, language, first line number, body lines)
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if fence is None:
            m = re.match(r"^(`{3,}|~{3,})\s*([\w+-]*)", stripped)
            if m:
                fence = (m.group(1), m.group(2).lower(), number, [])
                prose.append((number, ""))  # a fence ends the paragraph before it
                continue
            prose.append((number, line))
            continue
        marker, lang, start, body = fence
        if stripped.startswith(marker) and stripped.strip(marker[0]) == "":
            if lang in _PYTHON_FENCES:
                found.append(DocCommand(rel, start + 1, "\n".join(body), "fence"))
            fence = None
            continue
        body.append(line)
        if lang in _SHELL_FENCES:
            command = _strip_comment(stripped)
            if command and _is_command(command):
                found.append(DocCommand(rel, number, " ".join(command.split()), "fence"))
    found += _inline(rel, prose)
    return sorted(found, key=lambda c: c.line)


def _inline(rel: str, prose: list[tuple[int, str]], options: bool = False) -> list[DocCommand]:
    """Code spans of the prose (CommonMark: a run of n backticks up to the next run of exactly n, within one
    paragraph) that are commands (with ``options``: also those that are an option, ``--name [VALUE]``)."""
    found = []
    paragraphs: list[list[tuple[int, str]]] = [[]]
    for number, line in prose:
        if line.strip():
            paragraphs[-1].append((number, line))
        elif paragraphs[-1]:
            paragraphs.append([])
    for para in paragraphs:
        if not para:
            continue
        text = "\n".join(line for _, line in para)
        starts = [0]
        for _, line in para:
            starts.append(starts[-1] + len(line) + 1)
        pos = 0
        while True:
            m = re.compile(r"`+").search(text, pos)
            if not m:
                break
            ticks = m.group(0)
            close = re.compile(rf"(?<!`){ticks}(?!`)").search(text, m.end())
            if not close:
                pos = m.end()
                continue
            span = " ".join(text[m.end() : close.start()].replace("\\|", "|").split())
            if _is_command(span) or (options and re.match(r"^--[a-z][\w-]*(?:[ =]|$)", span)):
                index = next(i for i in range(len(para)) if starts[i + 1] > m.start())
                found.append(DocCommand(rel, para[index][0], span, "inline"))
            pos = close.end()
    return found


def option_mentions(path: Path) -> list[tuple[DocCommand, list[DocCommand]]]:
    """Inline spans that are an option (`--sample 0.02`, a table's `--pattern P`), each with the commands it
    may belong to: those on the same line (a table row), else every command of its section (between two
    headings, the heading's own ``python -m`` module or ``.py`` file of stcsim included). Spans with no
    command around them are left out (compiler flags in prose)."""
    rel = path.relative_to(REPO).as_posix()
    lines = path.read_text().splitlines()
    prose, fence, headings = [], False, [(0, "")]
    for number, line in enumerate(lines, 1):
        if re.match(r"^\s*(`{3,}|~{3,})", line):
            fence = not fence
            prose.append((number, ""))
            continue
        prose.append((number, "" if fence else line))
        if not fence and line.startswith("#"):
            headings.append((number, line))
    commands = [c for c in extract(path) if c.kind in ("invoke", "python-m")]
    found = []
    for span in _inline(rel, prose, options=True):
        if _is_command(span.text):
            continue
        index = max(i for i, (h, _) in enumerate(headings) if h <= span.line)
        start, heading = headings[index]
        end = headings[index + 1][0] if index + 1 < len(headings) else len(lines) + 1
        candidates = [c for c in commands if c.line == span.line] or [
            c for c in commands if start <= c.line < end
        ]
        for module in re.findall(r"`(stcsim/[\w/]+)\.py`", heading):
            candidates.append(DocCommand(rel, start, "python -m " + module.replace("/", "."), "heading"))
        if candidates:
            found.append((span, candidates))
    return found


def all_commands() -> list[DocCommand]:
    return [c for path in doc_files() for c in extract(path)]


# ---------------------------------------------------------------------------------------------- classify

# modules (and invoke tasks) that need a GPU, CuPy, nvcc or Nsight Compute to do their job
GPU_MODULES = {
    "stcsim.gpu.time_kernels": "times kernels on a real GPU (CuPy)",
    "stcsim.experiments.sparse_silicon": "measures the sparse kernels on a real GPU (CuPy); its table of a "
    "measured CSV simulates every case (minutes)",
    "benchmarks.calibration.silicon_memory": "silicon microbenchmarks on a real GPU (CuPy)",
    "stcsim.kernels.build": "recompiles ptx_kernels/*.cu with nvcc (and rewrites the committed PTX)",
}
GPU_TASKS = {"build-kernels": "recompiles ptx_kernels/*.cu with nvcc (and rewrites the committed PTX)"}
# minutes or more of simulation, or they rewrite committed files / the build: parsed, never run here
LONG_MODULES = {
    "pytest": "the whole test suite",
    "stcsim.experiments.calibrate": "simulates the whole calibration suite (53 launches)",
    "stcsim.tools.ab": "times two engine builds against each other, pairs of full launches",
    "stcsim.tools.pgo_train": "the profile-guided build's training launches (run by the build)",
    "benchmarks.micro.report": "runs every PTX microbenchmark and rewrites docs/microbenchmarks.md",
    "benchmarks.micro.hopper_sim": "runs the Hopper microbenchmarks' PTX on the engine (minutes)",
    "stcsim.experiments.sparse_tc_measure": "the issue-9 cycle tables: many launches",
    "stcsim.experiments.sparsert_problems": "paper 003's 20 problems (and their autotuning)",
    "tests.timing.stats_golden": "--write rewrites the committed golden stats",
    "stcsim.kernels.codegen.smma_l_codegen": "rewrites the committed header ptx_kernels/smma_l_shapes.cuh",
}
LONG_TASKS = {
    "bench": "engine speed runs (a whole network run, 1024^3 GEMMs)",
    "reproduce": "a paper figure's network runs (minutes even with --quick)",
    "calibrate": "simulates the whole calibration suite",
    "test": "the whole test suite",
    "build-sim": "rebuilds the C++ engine of the shared environment",
}


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _strip_env(words: list[str]) -> list[str]:
    while words and re.match(r"^[A-Z][A-Z0-9_]*=", words[0]):
        words = words[1:]
    return words


def classify(cmd: DocCommand) -> tuple[str, str, str]:
    """(kind, tier, reason) of a documented command."""
    if "\n" in cmd.text or cmd.source == "fence" and not _is_command(cmd.text):
        return "python-snippet", "run", "a Python snippet"
    words = _words(cmd.text)
    env = words[: len(words) - len(_strip_env(words))]
    words = _strip_env(words)
    head = words[0]
    if env and any(w.startswith("OUT=") for w in env) or head in ("bash", "sh") or head.endswith(".sh"):
        return "shell", "gpu", "a device script (one call on a GPU machine: nvcc, Nsight Compute, CuPy)"
    if head in ("nvcc", "ncu"):
        return "shell", "gpu", f"{head} needs the CUDA toolkit and an NVIDIA GPU"
    if head == "pip":
        return "shell", "install", "installs into the shared environment"
    if head in ("perf", "cmake"):
        return (
            "shell",
            "host-tool",
            f"a {head} command line quoted in prose (host tool, not a project command)",
        )
    if head in ("invoke", "inv"):
        task = invoke_task(cmd)
        if task in GPU_TASKS:
            return "invoke", "gpu", GPU_TASKS[task]
        if task in LONG_TASKS:
            return "invoke", "long", LONG_TASKS[task]
        if task == "run" and "--workload" in words and "--layers" not in words:
            return "invoke", "long", "a whole network run"
        return "invoke", "run", ""
    if head.startswith("python"):
        if len(words) > 2 and words[1] == "-m":
            module = words[2]
            if module in GPU_MODULES:
                return "python-m", "gpu", GPU_MODULES[module]
            if module in LONG_MODULES:
                return "python-m", "long", LONG_MODULES[module]
            if module == "stcsim.harness.network_run" and "--layers" not in words:
                return "python-m", "long", "a whole network run"
            if module == "stcsim.experiments.reproduce":
                return "python-m", "long", LONG_TASKS["reproduce"]
            return "python-m", "run", ""
        return "python-script", "long", "a script of the repository (builds and runs C++ unit tests)"
    return "shell", "host-tool", "not a project command"


def invoke_task(cmd: DocCommand) -> str:
    """The task a documented ``invoke`` command calls (the first word after invoke's own options)."""
    words = _strip_env(_words(cmd.text))[1:]
    for w in words:
        if not w.startswith("-"):
            return w
    return ""


def python_module(cmd: DocCommand) -> str:
    words = _strip_env(_words(cmd.text))
    return words[2] if len(words) > 2 and words[1] == "-m" else ""


def documented_flags(cmd: DocCommand) -> list[str]:
    """Every option the command gives its program (``[--config C]``, ``--case=X``, ``-h``), in order, without
    values (``invoke``'s own options before the task are the program's too)."""
    flags = []
    for token in re.split(r"[\s\[\]()|]+", " ".join(_program_rest(cmd.text))):
        m = re.match(r"^(--?[A-Za-z][\w-]*)", token)
        if m:
            flags.append(m.group(1))
    return flags


def _program_rest(text: str) -> list[str]:
    """The words after the program (``invoke`` / ``python -m MODULE`` / ``python SCRIPT``), a trailing
    ``> FILE`` redirection dropped."""
    text = re.sub(r"\s>\s*\S+\s*$", "", text)
    words = _strip_env(_words(text))
    if words and words[0] in ("invoke", "inv"):
        return words[1:]
    if len(words) > 2 and words[1] == "-m":
        return words[3:]
    return words[1:]


def is_synopsis(cmd: DocCommand) -> bool:
    """The command is a synopsis with placeholders (``[--kernel K]``, ``a|b``, ``...``, ``<csv>``) rather
    than a line to paste."""
    return bool(re.search(r"[\[\]<>|]|\.\.\.|…", cmd.text)) or any(
        re.fullmatch(r"[A-Z][A-Z_]*(\.[a-z]+)?", w) for w in _words(cmd.text)
    )


def concrete_argv(cmd: DocCommand) -> list[str]:
    """The words after the program (``invoke`` / ``python -m MODULE``) with a synopsis made concrete: optional
    groups kept (their options are checked too), the first of ``a|b`` alternatives, ``or`` and ``...``
    dropped, placeholders left as words (they stand for values)."""
    text = " ".join(_program_rest(cmd.text))
    text = re.sub(r"\s+or\s+", " ", text)
    text = re.sub(r"(\S+)\s+\|\s+\S+", r"\1", text)  # "paper001-fig16 | paper004-fig6": the first
    text = re.sub(r"\.\.\.|…", " ", text)
    text = text.replace("[", " ").replace("]", " ")
    return [w.split("|")[0] if "|" in w and not w.startswith("-") else w for w in _words(text)]


def summary() -> str:
    """Commands found per file and tier (``python tests/docs/doc_commands.py``)."""
    from collections import Counter

    commands = all_commands()
    tiers = ["run", "long", "gpu", "install", "host-tool"]
    rows = [
        f"{'file':28} {'found':>5} {'invoke':>6} {'py -m':>5} {'snip':>4} "
        + " ".join(f"{t:>9}" for t in tiers)
    ]
    for path in doc_files():
        cs = [c for c in commands if c.file == path.relative_to(REPO).as_posix()]
        kinds, by_tier = Counter(c.kind for c in cs), Counter(c.tier for c in cs)
        rows.append(
            f"{path.relative_to(REPO).as_posix():28} {len(cs):5} {kinds['invoke']:6} {kinds['python-m']:5} "
            f"{kinds['python-snippet']:4} " + " ".join(f"{by_tier[t]:9}" for t in tiers)
        )
    kinds, by_tier = Counter(c.kind for c in commands), Counter(c.tier for c in commands)
    rows.append(
        f"{'total':28} {len(commands):5} {kinds['invoke']:6} {kinds['python-m']:5} "
        f"{kinds['python-snippet']:4} " + " ".join(f"{by_tier[t]:9}" for t in tiers)
    )
    return "\n".join(rows)


if __name__ == "__main__":
    print(summary())

"""Docs as tests (issue 45 item 6): every command of README.md and docs/*.md is checked, so none can drift.

(a) every documented ``invoke`` and ``python -m`` command parses: the task or module exists, each option it
    names is in the program's ``--help``, and the program's own parser (invoke's, argparse) accepts the line
    without running it (tests/docs/parse_only.py); a synopsis (``[--config C]``, ``a|b``, ``...``) may leave
    values out, never name an option that does not exist;
(b) a curated fast subset runs end to end with small arguments (RUNS, SNIPPETS): exit status 0 and some
    expected output; each is tied to the documented line it stands for, so a doc edit that drops the line
    fails here;
(c) GPU-only commands (device scripts, nvcc, ncu, CuPy modules) and installs are skipped with the reason,
    after what can be checked here (the script exists, the extra is declared); long-running ones (whole
    networks, figures, bench, calibration) are parsed only;
(d) a failure names the doc file and line.

``python tests/docs/doc_commands.py`` prints what was found, per file and tier.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from stcsim.sparsity import registry

sys.path.insert(0, str(Path(__file__).parent))
from doc_commands import (  # noqa: E402
    REPO,
    DocCommand,
    _strip_env,
    _words,
    all_commands,
    concrete_argv,
    doc_files,
    documented_flags,
    invoke_task,
    is_synopsis,
    option_mentions,
    python_module,
)

COMMANDS = all_commands()
PARSED = [c for c in COMMANDS if c.kind in ("invoke", "python-m")]
SKIPPED = [c for c in COMMANDS if c.tier in ("gpu", "install", "host-tool") and c.kind == "shell"]
SKIPPED += [c for c in COMMANDS if c.kind == "python-script"]  # their file is checked, they are not run
SNIPPET_CMDS = [c for c in COMMANDS if c.kind == "python-snippet"]
# an option quoted next to a script the extractor cannot see as a command: (file, option) -> its command
OPTION_OWNERS = {
    ("docs/architecture.md", "--check"): "python -m benchmarks.calibration.slice_map_table table"
}
OPTIONS = [
    (
        span,
        [DocCommand(span.file, span.line, OPTION_OWNERS[(span.file, span.text.split()[0])], "owner")]
        if (span.file, span.text.split()[0]) in OPTION_OWNERS
        else owners,
    )
    for path in doc_files()
    for span, owners in option_mentions(path)
]
# options of other tools quoted in prose next to a project command
FOREIGN_OPTIONS = {"--toggle-collect": "valgrind --tool=callgrind"}
PYTHON = sys.executable
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
ENV.pop("STCSIM_PORTABLE", None)


# modules whose parsing parse_only.py's argparse hook may not stop: only their --help is read
HELP_ONLY = {"python -m pytest": "pytest (a plain parse could run the suite)"}


def _prog(cmd: DocCommand) -> str:
    return "invoke" if cmd.kind == "invoke" else f"python -m {python_module(cmd)}"


def _help_argv(cmd: DocCommand) -> list[str]:
    """The argv that prints the help of the (sub)command the line calls."""
    if cmd.kind == "invoke":
        return ["--help", invoke_task(cmd)]
    argv = concrete_argv(cmd)
    if argv and not argv[0].startswith("-") and "=" not in argv[0] and not argv[0].startswith("<"):
        return [argv[0], "--help"]  # a subcommand's help (a positional value: the main help, as wanted)
    return ["--help"]


@pytest.fixture(scope="module")
def parse_results() -> dict[tuple[str, tuple[str, ...]], dict]:
    """Every distinct (program, argv) of PARSED and its help, parsed in one process of parse_only.py."""
    items = {
        (_prog(c), tuple(a))
        for c in PARSED
        for a in (concrete_argv(c), _help_argv(c))
        if _prog(c) not in HELP_ONLY
    }
    items |= {
        (_prog(c), tuple(_help_argv(c))) for _, owners in OPTIONS for c in owners if _prog(c) not in HELP_ONLY
    }
    items = sorted(items)
    if not items:
        return {}
    proc = subprocess.run(
        [PYTHON, str(Path(__file__).with_name("parse_only.py"))],
        cwd=REPO,
        env=ENV,
        input=json.dumps([{"prog": p, "argv": list(a)} for p, a in items]),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(zip(items, json.loads(proc.stdout), strict=True))


def _help_text(cmd: DocCommand, parse_results: dict) -> str:
    prog = _prog(cmd)
    if prog in HELP_ONLY:  # its help from a process of its own
        if (prog, ("--help",)) not in parse_results:
            proc = subprocess.run(
                [PYTHON, *prog.split()[1:], "--help"],
                cwd=REPO,
                env=ENV,
                capture_output=True,
                text=True,
                timeout=120,
            )
            parse_results[(prog, ("--help",))] = {
                "ok": proc.returncode == 0,
                "output": proc.stdout,
                "error": proc.stderr[-2000:],
            }
    result = parse_results[(prog, tuple(_help_argv(cmd)))]
    return result.get("output", "") + "\n" + result.get("error", "")


# ------------------------------------------------------------------------------------------------- (a) parse


def _is_mention(cmd: DocCommand) -> bool:
    """An inline span that names a program and options, no values: `invoke run --phase --seq --kv-len`."""
    rest = concrete_argv(cmd)
    if cmd.kind == "invoke":
        rest = rest[1:]
    return cmd.source == "inline" and all(w.startswith("-") for w in rest)


_VALUE_ERRORS = (
    "needed value and was not given",
    "the following arguments are required",
    "expected one argument",
    "Missing required positional",
    "invalid value: ",
    "invalid int value",
    "invalid float value",
    "did not receive required positional",
)


@pytest.mark.parametrize("cmd", PARSED, ids=str)
def test_documented_command_parses(cmd: DocCommand, parse_results: dict) -> None:
    prog = _prog(cmd)
    help_text = _help_text(cmd, parse_results)  # (fills in HELP_ONLY's)
    help_result = parse_results[(prog, tuple(_help_argv(cmd)))]
    if help_result.get("import_error"):
        if cmd.tier == "gpu":
            pytest.skip(
                f"{cmd.where}: {prog} needs what this host lacks to import "
                f"({help_result['import_error']}); GPU-only: {cmd.reason}"
            )
        pytest.fail(f"{cmd.where}: `{cmd.text}`: {prog} does not import: {help_result['error']}")
    if cmd.kind == "invoke":
        task = invoke_task(cmd)
        assert help_result["ok"] and "Usage:" in help_text, (
            f"{cmd.where}: `{cmd.text}`: there is no invoke task {task!r}: {help_result['error']}"
        )
    else:
        assert help_result["ok"], f"{cmd.where}: `{cmd.text}`: `{prog} --help` fails: {help_result['error']}"
    missing = [
        f
        for f in documented_flags(cmd)
        if f not in ("-h", "--help") and not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", help_text)
    ]
    assert not missing, (
        f"{cmd.where}: `{cmd.text}`: option(s) {', '.join(missing)} not in "
        f"`{prog} {' '.join(_help_argv(cmd))}`"
    )
    if prog in HELP_ONLY:
        return
    result = parse_results[(prog, tuple(concrete_argv(cmd)))]
    if result["ok"]:
        return
    tolerated = (is_synopsis(cmd) or _is_mention(cmd)) and any(e in result["error"] for e in _VALUE_ERRORS)
    assert tolerated, (
        f"{cmd.where}: `{cmd.text}` does not parse as {prog} {concrete_argv(cmd)}:\n{result['error']}"
    )


def _has_option(cmd: DocCommand, flag: str, parse_results: dict) -> bool:
    if (_prog(cmd), tuple(_help_argv(cmd))) not in parse_results and _prog(cmd) not in HELP_ONLY:
        return False
    text = _help_text(cmd, parse_results)
    return bool(re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text))


@pytest.mark.parametrize("span,owners", OPTIONS, ids=[str(s) for s, _ in OPTIONS])
def test_documented_option_exists(span: DocCommand, owners: list[DocCommand], parse_results: dict) -> None:
    """An option named alone in prose or an options table (`--sample 0.02`) is an option of the command it
    stands next to: the one on its table row, else one of its section's (or, failing those, of its file's)."""
    flag = documented_flags(DocCommand(span.file, span.line, "invoke x " + span.text, "inline"))[0]
    if flag in FOREIGN_OPTIONS:
        pytest.skip(f"{span.where}: {flag} is an option of {FOREIGN_OPTIONS[flag]}")
    if any(_has_option(c, flag, parse_results) for c in owners):
        return
    same_file = [c for c in PARSED if c.file == span.file]
    names = sorted({_prog(c) + (" " + invoke_task(c) if c.kind == "invoke" else "") for c in owners})
    assert any(_has_option(c, flag, parse_results) for c in same_file), (
        f"{span.where}: `{span.text}`: no command of this section has {flag} ({', '.join(names)}), "
        f"nor any other of {span.file}"
    )


# ---------------------------------------------------------------------------------- documented values


def _documented_values() -> list[tuple[DocCommand, str, str]]:
    """(where, option, value) of every concrete --config / --pattern / --workload / --kernel / --case value,
    reproduce figure the docs give, in commands and in option spans (`--pattern tw:G=64`); ``a|b`` gives
    both; placeholders (``P``, ``KERNEL:MxNxK:CONFIG``) are left out."""
    found = []

    def words(text: str) -> list[str]:  # alternatives kept: `--config v100|h100|none`
        return re.sub(r"[\[\]]|\.\.\.", " ", re.sub(r"\s>\s*\S+\s*$", "", text)).split()

    spans = [(c, words(c.text)) for c in PARSED] + [(s, words(s.text)) for s, _ in OPTIONS]
    for cmd, argv in spans:
        pairs = [(w, argv[i + 1]) for i, w in enumerate(argv[:-1]) if w in _VALUE_CHECKS]
        pairs += [tuple(w.split("=", 1)) for w in argv if "=" in w and w.split("=", 1)[0] in _VALUE_CHECKS]
        if cmd.kind == "invoke" and invoke_task(cmd) == "reproduce":
            pairs += [("FIGURE", v) for v in re.findall(r"paper\d+-fig\w+", cmd.text)]
        for flag, value in pairs:
            if value.startswith("-") or re.fullmatch(r"(?:[A-Z]+|MxNxK)(?::(?:[A-Z]+|MxNxK))*", value):
                continue
            found += [(cmd, flag, v) for v in value.split("|")]
    return sorted(set(found), key=lambda t: (t[0].file, t[0].line, t[1], t[2]))


def _check_kernel(name: str) -> None:
    from stcsim.kernels.registry import get_kernel

    if (
        name not in ("auto", "tensor-core", "cuda-core")
        and not any(ch in name for ch in "*?[")
        and not name.startswith("fixed:")
    ):
        get_kernel(name)


def _check_case(case: str) -> None:
    from stcsim.config import load_config

    kernel, shape, config = case.split(":")
    _check_kernel(kernel)
    assert re.fullmatch(r"\d+x\d+x\d+", shape), f"shape {shape!r} is not MxNxK"
    if config not in ("none", "functional"):
        load_config(config)


def _check_config(spec: str) -> None:
    from stcsim.config import load_config

    if spec != "none":
        load_config(spec)


def _check_workload(spec: str) -> None:
    from stcsim.workloads import get_network

    get_network(spec)


def _check_figure(name: str) -> None:
    from stcsim.experiments.paper_figures import get_figure

    get_figure(name)


_VALUE_CHECKS = {
    "--config": _check_config,
    "--pattern": registry.get,
    "--workload": _check_workload,
    "--kernel": _check_kernel,
    "--case": _check_case,
    "FIGURE": _check_figure,
}
VALUES = _documented_values()


@pytest.mark.parametrize("cmd,flag,value", VALUES, ids=[f"{c.where} {f} {v}" for c, f, v in VALUES])
def test_documented_value_exists(cmd: DocCommand, flag: str, value: str) -> None:
    """The configs, patterns, networks, kernels and figures the docs name exist."""
    try:
        _VALUE_CHECKS[flag](value)
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"{cmd.where}: `{cmd.text}`: {flag} {value}: {type(e).__name__}: {e}")


def test_commands_were_found() -> None:
    """The extractor still finds the commands (a markdown change that hid them all would pass the rest)."""
    files = {c.file for c in COMMANDS}
    assert {"README.md", "docs/harness.md", "docs/workloads.md", "docs/configs.md"} <= files
    assert len(PARSED) >= 100 and len(SNIPPET_CMDS) >= 4


# ---------------------------------------------------------------------------------------------- (b) runs


@dataclass(frozen=True)
class Run:
    file: str
    documented: str  # the command as the doc shows it (whitespace collapsed)
    argv: tuple[str, ...] | None = None  # what runs (None: the documented line as it is); {tmp} -> tmp_path
    expect: tuple[str, ...] = ()  # substrings of the output
    equals_file: str = ""  # stdout must equal this committed file (a `> FILE` regenerating command)
    needs: tuple[str, ...] = ()  # runs first (ids of RUNS), for files they write
    status: int = 0  # the exit status the doc promises (2: the documented error)


TINY_NET = ("--layers", "1", "--out", "{tmp}/net", "--no-progress", "--jobs", "1")
RUNS: dict[str, Run] = {
    "workloads": Run("README.md", "invoke workloads", expect=("resnet50", "vgg16", "source")),
    "workload": Run(
        "README.md",
        "invoke workload resnet50 --batch 1",
        expect=("resnet50 (batch=1, image_size=224)", "layer1.0.conv1", "fc"),
    ),
    "sparsity-report": Run(
        "README.md",
        "invoke sparsity-report --shape 512x2304 --sparsity 0.75",
        expect=("shape 512x2304, target sparsity 0.75", "vw:L=16,K=4", "compression"),
    ),
    "config-show": Run(
        "README.md",
        "python -m stcsim.config show v100+stc-pingpong",
        expect=("stc.enabled = true", "gpu.name = "),
    ),
    "config-show-sources": Run(
        "docs/configs.md",
        "python -m stcsim.config show v100+stc [--sources]",
        argv=("python", "-m", "stcsim.config", "show", "v100+stc", "--sources"),
        expect=("# configs/v100.yaml",),
    ),
    "config-list": Run("docs/configs.md", "python -m stcsim.config list", expect=("v100", "stc-pingpong")),
    "config-docs": Run(
        "docs/configs.md", "python -m stcsim.config docs > docs/configs.md", equals_file="docs/configs.md"
    ),
    "stats-docs": Run(
        "docs/stats.md", "python -m stcsim.tools.stats_docs > docs/stats.md", equals_file="docs/stats.md"
    ),
    "workloads-list": Run(
        "docs/workloads.md", "python -m stcsim.workloads --list", expect=("resnet50", "alexnet")
    ),
    "workloads-variant": Run(
        "docs/workloads.md",
        "python -m stcsim.workloads alexnet:variant=tf-slim --batch 1",
        expect=("alexnet", "tf-slim"),
    ),
    "workloads-markdown": Run(
        "docs/workloads.md",
        "python -m stcsim.workloads resnet50 --batch 1 --markdown",
        expect=("| 20 | 1000 | 1 | 2048 | yes | 1 | 2,048,000 | fc |",),
    ),
    "run-help": Run("docs/harness.md", "invoke run -h", expect=("--workload", "--pattern", "--layers")),
    "run-kernel": Run(
        "README.md",
        "invoke run [--kernel K] [--shape MxNxK] [--config v100|h100|none] "
        "[--pattern P --sparsity S] [--all]",
        argv=(
            "invoke",
            "run",
            "--kernel",
            "gemm_naive_f32_f32_tile16x16x1",
            "--shape",
            "64x64x64",
            "--config",
            "v100",
            "--all",
        ),
        expect=("at 64x64x64, dense", ": ok", "gpu_sim_cycle"),
    ),
    "run-kernel-sparse": Run(
        "README.md",
        "invoke run [--kernel K] [--shape MxNxK] [--config v100|h100|none] "
        "[--pattern P --sparsity S] [--all]",
        argv=(
            "invoke",
            "run",
            "--shape",
            "64x64x64",
            "--config",
            "h100",
            "--pattern",
            "nm:N=2,M=4",
            "--sparsity",
            "0.5",
        ),
        expect=("at 64x64x64", ": ok", "gpu_sim_cycle"),
    ),
    "run-network": Run(
        "docs/harness.md",
        "invoke run --workload resnet50",
        argv=("invoke", "run", "--workload", "resnet50", *TINY_NET),
        expect=("resnet50 (batch 1), dense/v100", "network total", "1 simulated"),
    ),
    "run-network-pruned": Run(
        "README.md",
        "invoke run --workload resnet50 --config v100+stc-pingpong --pattern vw:L=16,K=4 --sparsity 0.75",
        argv=(
            "invoke",
            "run",
            "--workload",
            "resnet50",
            "--config",
            "v100+stc-pingpong",
            "--pattern",
            "vw:L=16,K=4",
            "--sparsity",
            "0.75",
            *TINY_NET,
        ),
        expect=("gemm_shmma_k4", "network total"),
    ),
    # README: "a pattern no kernel implements at all, e.g. `vw:L=15,K=4`, is an error unless --allow-fallback"
    "run-network-no-kernel": Run(
        "README.md",
        "invoke run --workload NET [--config C] [--pattern P] [--sparsity S] "
        "[--kernel K] [--batch B] [--weights FILE] [--out DIR]",
        argv=(
            "invoke",
            "run",
            "--workload",
            "resnet50",
            "--pattern",
            "vw:L=15,K=4",
            "--layers",
            "1",
            "--out",
            "{tmp}/no-kernel",
            "--no-progress",
        ),
        status=2,
        expect=("no kernel implements", "--allow-fallback"),
    ),
    # README: "a pattern no kernel implements yet, e.g. `nm:N=4,M=8`, is an error listing the kernels"
    "run-kernel-no-kernel": Run(
        "README.md",
        "invoke run [--kernel K] [--shape MxNxK] [--config v100|h100|none] "
        "[--pattern P --sparsity S] [--all]",
        argv=("invoke", "run", "--shape", "64x64x64", "--pattern", "nm:N=4,M=8", "--sparsity", "0.5"),
        status=2,
        expect=("no kernel implements the sparsity pattern 'nm:N=4,M=8'", "kernels exist for dense"),
    ),
    "compare": Run(
        "docs/harness.md",
        "invoke compare results/runs/resnet50/results.csv --baseline dense/v100 --plot speedup.png",
        argv=(
            "invoke",
            "compare",
            "{tmp}/net/results.csv",
            "--baseline",
            "dense/v100",
            "--plot",
            "{tmp}/speedup.png",
        ),
        expect=("speedup over dense/v100", "vw:L=16,K=4", "plot: "),
        needs=("run-network", "run-network-pruned"),
    ),
    "paper-configs": Run(
        "docs/kernels.md",
        "python -m stcsim.experiments.paper_configs --preset paper001-cuda-core "
        "--shape 256x196x2304 --config v100 --seed 1",
        expect=("CUDA Core Dense", "CUDA Core Vector-wise (75%)"),
    ),
}


def _find(file: str, documented: str) -> DocCommand:
    for c in COMMANDS:
        if c.file == file and c.text == documented:
            return c
    pytest.fail(
        f"{file} no longer shows `{documented}`: update RUNS in {Path(__file__).name} to the command "
        f"the doc shows now"
    )


def _run(run: Run, tmp: Path) -> subprocess.CompletedProcess:
    argv = run.argv or tuple(_strip_env(_words(re.sub(r"\s>\s*\S+$", "", run.documented))))
    argv = tuple(a.replace("{tmp}", str(tmp)) for a in argv)
    if argv[0] == "python":
        argv = (PYTHON, *argv[1:])
    return subprocess.run(argv, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("doc-runs")


@pytest.mark.parametrize("name", list(RUNS))
def test_documented_command_runs(name: str, run_dir: Path, request: pytest.FixtureRequest) -> None:
    run = RUNS[name]
    cmd = _find(run.file, run.documented)
    done = request.session.stash.setdefault(_DONE, set())
    for dep in run.needs:
        if dep not in done:
            proc = _run(RUNS[dep], run_dir)
            assert proc.returncode == 0, f"{dep} (needed by {name}) failed:\n{proc.stderr[-3000:]}"
            done.add(dep)
    proc = _run(run, run_dir)
    shown = " ".join(run.argv) if run.argv else run.documented
    assert proc.returncode == run.status, (
        f"{cmd.where}: `{shown}` exited {proc.returncode}, not {run.status}:\n"
        f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    )
    done.add(name)
    out = proc.stdout + proc.stderr
    for text in run.expect:
        assert text in out, f"{cmd.where}: `{shown}`: {text!r} not in its output:\n{out[-3000:]}"
    if run.equals_file:
        assert proc.stdout == (REPO / run.equals_file).read_text(), (
            f"{cmd.where}: {run.equals_file} is not what `{run.documented}` prints: regenerate it"
        )


_DONE = pytest.StashKey[set]()


def test_readme_example_table_is_the_workload_table() -> None:
    """README's ResNet-50 example table is `python -m stcsim.workloads resnet50 --batch 1 --markdown`."""
    out = subprocess.run(
        [PYTHON, "-m", "stcsim.workloads", "resnet50", "--batch", "1", "--markdown"],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    readme = (REPO / "README.md").read_text().splitlines()
    rows = [(i, line) for i, line in enumerate(readme, 1) if re.match(r"^\| \d+ \| \d+ \| \d+ \|", line)]
    assert rows, "README.md: the ResNet-50 example table is gone"
    wrong = [f"README.md:{i}: {line}" for i, line in rows if line not in out.splitlines()]
    assert not wrong, "rows not in the workload table:\n" + "\n".join(wrong)


# ------------------------------------------------------------------------------------------- Python snippets


@dataclass
class Snippet:
    first_line: str  # the snippet's first line: which fenced block of the file this is
    givens: dict = field(default_factory=dict)  # names the snippet leaves to the reader
    replace: dict[str, str] = field(default_factory=dict)  # placeholder text -> code (must be in the doc)
    skip: dict[str, str] = field(default_factory=dict)  # statements with this text are not run: why


def _readme_launch() -> tuple[dict, dict]:
    """A 64x64x64 dense GEMM on gemm_mma.ptx for the README's Engine snippet: the C buffer is the snippet's
    `a`, A and B are allocated around it; after the snippet the test copies C back and checks it."""
    from stcsim.kernels.protocol import as_pattern
    from stcsim.kernels.registry import get_kernel

    kernel = get_kernel("gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    operands = kernel.prepare(a, b, as_pattern("dense"), 0.0)
    grid, block, shared = kernel.launch_geometry(operands.problem)
    c = operands["C"]

    def launch_args(eng, c_addr: int) -> list:
        pointers = {"C": c_addr}
        for name in ("A", "B"):
            pointers[name] = eng.malloc(operands[name].nbytes)
            eng.copy_to(pointers[name], operands[name])
        return kernel.args(operands, pointers)

    givens = {
        "nbytes": c.nbytes,
        "host_array": c,
        "shape": c.shape,
        "dtype": c.dtype,
        "grid": grid,
        "block": block,
        "shared_bytes": shared,
        "launch_args": launch_args,
        "ENTRY": kernel.entry,
    }
    return givens, {"kernel": kernel, "operands": operands}


SNIPPETS: dict[str, Snippet] = {
    "README.md": Snippet(
        "from stcsim.sim import Engine",
        replace={'eng.launch("kernel"': "eng.launch(ENTRY", "[args...]": "launch_args(eng, a)"},
    ),
    "docs/configs.md": Snippet("from stcsim.config import load_config"),
    "docs/sparsity.md": Snippet(
        "from stcsim.sparsity import registry",
        givens={"w": np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)},
    ),
    "docs/workloads.md": Snippet(
        "from stcsim.workloads import get_network",
        givens={"pattern": registry.get("vw:L=16,K=4")},
        skip={
            'load_weights(net, "resnet50.npz")': "needs a weights file (resnet50.npz); the names are checked"
        },
    ),
}


def _snippet_for(file: str) -> DocCommand:
    spec = SNIPPETS[file]
    for c in SNIPPET_CMDS:
        if c.file == file and c.text.startswith(spec.first_line):
            return c
    pytest.fail(f"{file} has no Python block starting `{spec.first_line}` any more: update SNIPPETS")


def test_every_snippet_is_covered() -> None:
    covered = {(c.file, c.line) for c in map(_snippet_for, SNIPPETS)}
    missing = [str(c) for c in SNIPPET_CMDS if (c.file, c.line) not in covered]
    assert not missing, "Python snippets no test runs (add them to SNIPPETS):\n" + "\n".join(missing)


@pytest.mark.parametrize("file", list(SNIPPETS))
def test_python_snippet_runs(file: str, tmp_path: Path) -> None:
    cmd = _snippet_for(file)
    spec = SNIPPETS[file]
    code = textwrap.dedent(cmd.text)
    givens = dict(spec.givens)
    check = {}
    if file == "README.md":
        more, check = _readme_launch()
        givens.update(more)
    for old, new in spec.replace.items():
        assert old in code, f"{cmd.where}: the snippet no longer has `{old}`: update SNIPPETS[{file!r}]"
        code = code.replace(old, new)
    try:
        tree = ast.parse(code)
    except SyntaxError as e:
        pytest.fail(f"{cmd.file}:{cmd.line + (e.lineno or 1) - 1}: the snippet is no valid Python: {e}")
    namespace = {"__name__": "__doc_snippet__", **givens}
    lines = code.splitlines()
    cwd = os.getcwd()
    os.chdir(REPO)  # snippets name repository paths (configs/...)
    try:
        for node in tree.body:
            text = ast.get_source_segment(code, node) or ""
            if any(key in text for key in spec.skip):
                continue
            where = f"{cmd.file}:{cmd.line + node.lineno - 1}"
            try:
                exec(compile(ast.Module([node], []), where, "exec"), namespace)  # noqa: S102
            except Exception as e:  # noqa: BLE001
                pytest.fail(f"{where}: `{lines[node.lineno - 1].strip()}` fails: {type(e).__name__}: {e}")
    finally:
        os.chdir(cwd)
    for key in spec.skip:  # what is not run is still named right
        stmt = next(
            (
                ast.get_source_segment(code, n)
                for n in tree.body
                if key in (ast.get_source_segment(code, n) or "")
            ),
            None,
        )
        assert stmt is not None, f"{cmd.where}: no statement `{key}` any more: update SNIPPETS[{file!r}]"
        for name in {
            n.id for n in ast.walk(ast.parse(stmt)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }:
            assert name in namespace or hasattr(builtins, name), f"{cmd.where}: `{stmt}`: {name} undefined"
    if file == "README.md":
        stats = namespace["stats"]
        assert stats["gpu_sim_cycle"] > 0 and "gpu_ipc" in stats
        eng, kernel, operands = namespace["eng"], check["kernel"], check["operands"]
        result = eng.copy_from(namespace["a"], operands["C"].shape, operands["C"].dtype)
        ref = kernel.reference(operands)
        got = kernel.unpack(operands, {"C": result})
        assert np.allclose(got, ref, rtol=1e-3, atol=1e-2), f"{cmd.where}: the launch's C is not A @ B"


# --------------------------------------------------------------------------- (c) GPU-only and installs


def _extras() -> set[str]:
    """The optional-dependency extras pyproject.toml declares."""
    text = (REPO / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([\w-]+)\s*=", section, re.M))


def _script(cmd: DocCommand) -> str:
    return next((w for w in _strip_env(_words(cmd.text)) if w.endswith(".sh")), "")


@pytest.mark.parametrize("cmd", SKIPPED, ids=str)
def test_gpu_and_install_commands_are_skipped(cmd: DocCommand) -> None:
    words = _words(cmd.text)
    script = _script(cmd)
    if script:
        path = REPO / script.removeprefix("./")
        assert path.is_file(), f"{cmd.where}: `{cmd.text}`: {script} does not exist"
        body = path.read_text()
        for var in (w.split("=", 1)[0] for w in words[: len(words) - len(_strip_env(words))]):
            assert var in body, f"{cmd.where}: `{cmd.text}`: {script} does not read {var}"
    if cmd.kind == "python-script":
        script = next(w for w in words[1:] if not w.startswith("-"))
        assert (REPO / script).is_file(), f"{cmd.where}: `{cmd.text}`: {script} does not exist"
    if words[0] == "pip":
        extras = _extras()
        for w in words:
            m = re.search(r"\[([\w,-]+)\]", w)
            if m:
                unknown = set(m.group(1).split(",")) - extras
                assert not unknown, f"{cmd.where}: `{cmd.text}`: pyproject.toml has no extra {unknown}"
    pytest.skip(f"{cmd.where}: {cmd.tier}: {cmd.reason}")

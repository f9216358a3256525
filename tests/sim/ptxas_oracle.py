"""ptxas as the oracle of what is valid PTX: verdicts for whole files and, batched, for single instructions.

ptxas (CUDA 13) is looked up as ``$STCSIM_PTXAS`` or on the PATH; where it is absent the tests fall back on
verdicts recorded in committed JSON files (`VerdictCache`), so that CI without CUDA still checks the engine
against what ptxas said.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

_ERROR = re.compile(r"line (\d+); (?:error|fatal)\s*: (.*)")
CRASHED = "ptxas crashed"


def find_ptxas() -> str | None:
    """The ptxas executable: ``$STCSIM_PTXAS`` when set (None unless it is an executable: set it to ``none``
    to test as CI without CUDA does), else ptxas on the PATH, else None."""
    chosen = os.environ.get("STCSIM_PTXAS")
    if chosen is not None:
        return chosen if os.path.isfile(chosen) and os.access(chosen, os.X_OK) else None
    return shutil.which("ptxas")


def _run(ptxas: str, text: str, arch: str, timeout: float = 120.0, opt: str = "-O3") -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "k.ptx")
        src.write_bytes(text.encode("utf-8", "surrogateescape"))
        try:
            cmd = [ptxas, opt, f"-arch={arch}", str(src), "-o", os.devnull]
            r = subprocess.run(cmd, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return -1, f"{CRASHED} (no answer within {timeout} s)"
    return r.returncode, r.stderr.decode("utf-8", "replace")


def first_diagnostic(rc: int, err: str) -> str:
    """The first error or fatal line of a failed ptxas run; CRASHED when ptxas died on a signal (it does,
    e.g. on ``st.param`` in a kernel), which is no verdict on the PTX."""
    if rc < 0 or 128 < rc < 255:  # killed by a signal (255 is ptxas's exit status for errors)
        return f"{CRASHED} (exit status {rc})"
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    return next(
        (ln for ln in lines if "error" in ln or "fatal" in ln), lines[0] if lines else f"exit status {rc}"
    )


def check_text(ptxas: str, text: str, arch: str, opt: str = "-O3") -> str | None:
    """None when ptxas accepts the module `text`, else its first diagnostic (`opt`: -O0 is quicker and
    checks the same)."""
    rc, err = _run(ptxas, text, arch, opt=opt)
    return None if rc == 0 else first_diagnostic(rc, err)


def check_lines(ptxas: str, head: str, lines: Sequence[str], tail: str, arch: str) -> list[str | None]:
    """Per-line verdicts (None: accepted, else the diagnostic) of independent instructions placed, one per
    line, between `head` and `tail`. The lines go to ptxas together; the lines it reports are taken out and
    the rest is assembled again, until ptxas accepts what remains. A failure that names no line (a fatal
    error of the whole program) is narrowed down by halving."""
    out: dict[int, str | None] = {}
    first_line = head.count("\n") + 1
    todo = [list(range(len(lines)))]
    while todo:
        pending = todo.pop()
        text = head + "".join(lines[i] + "\n" for i in pending) + tail
        rc, err = _run(ptxas, text, arch)
        bad: dict[int, str] = {}
        for m in _ERROR.finditer(err):
            k = int(m.group(1)) - first_line
            if 0 <= k < len(pending):
                bad.setdefault(pending[k], m.group(2).strip())
        if bad:
            out.update(bad)
            rest = [i for i in pending if i not in bad]
            if rest:
                todo.append(rest)
        elif rc == 0:
            out.update((i, None) for i in pending)
        elif len(pending) == 1:
            out[pending[0]] = first_diagnostic(rc, err)
        else:
            half = len(pending) // 2
            todo += [pending[:half], pending[half:]]
    return [out[i] for i in range(len(lines))]


def text_key(text: str) -> str:
    """The cache key of a PTX text (or line): its SHA-1."""
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()


class VerdictCache:
    """ptxas verdicts recorded in a JSON file: key -> None (accepted) or the diagnostic."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, str | None] = json.loads(path.read_text()) if path.exists() else {}
        self.dirty = False

    def get(self, key: str) -> tuple[bool, str | None]:
        """(known, verdict) of `key`."""
        return (key in self.data, self.data.get(key))

    def put(self, key: str, verdict: str | None) -> None:
        """Records a verdict (written by `save`)."""
        if self.data.get(key, "\0") != verdict:
            self.data[key] = verdict
            self.dirty = True

    def save(self) -> None:
        """Writes the cache back when it changed (sorted keys, so that diffs stay small)."""
        if self.dirty:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.data, indent=0, sort_keys=True) + "\n")
            self.dirty = False

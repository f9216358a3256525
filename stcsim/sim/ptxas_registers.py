"""Registers per thread from ptxas (`ptxas -v`), for occupancy where ptxas is installed and accepts the PTX.

The engine's own figure is a liveness estimate over the PTX's virtual registers; ptxas's allocation is what
silicon uses (it decides how many warps fit an SM). `register_counts` compiles a module once per (PTX text,
target) and caches the result by their hash, in memory and on disk (``$STCSIM_CACHE`` or
``~/.cache/stcsim``, ``ptxas/<hash>.json``). PTX ptxas rejects (e.g. the sparse extensions), a missing
ptxas, or a compile past `TIMEOUT_S` give an empty result: the caller keeps the estimate.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

TIMEOUT_S = 60.0
"""Longest a ptxas compile may take before the estimate is used instead (huge generated kernels)."""

_ENTRY_USED = re.compile(r"Compiling entry function '([^']+)'.*?Used (\d+) registers", re.S)
_TARGET = re.compile(r"^\s*\.target\s+(sm_\d+a?)", re.M)
_memory: dict[str, dict[str, int]] = {}


def ptxas_path() -> str | None:
    """The ptxas executable (PATH, then /usr/local/cuda/bin, /usr/local/bin), or None when not installed."""
    found = shutil.which("ptxas")
    if found:
        return found
    for candidate in ("/usr/local/cuda/bin/ptxas", "/usr/local/bin/ptxas"):
        if Path(candidate).is_file():
            return candidate
    return None


def ptxas_arch(ptx: str, sm_version: int) -> str:
    """The ptxas -arch for the config's `sm_version`: sm_NNa when the PTX targets an arch-specific sm_NNa."""
    target = _TARGET.search(ptx)
    suffix = "a" if target and target.group(1).endswith("a") else ""
    return f"sm_{sm_version}{suffix}"


def parse_verbose(text: str) -> dict[str, int]:
    """`ptxas -v` output -> registers per thread of every entry it reports."""
    return {m.group(1): int(m.group(2)) for m in _ENTRY_USED.finditer(text)}


def _cache_dir() -> Path:
    root = os.environ.get("STCSIM_CACHE") or Path.home() / ".cache" / "stcsim"
    return Path(root) / "ptxas"


def register_counts(ptx: str, sm_version: int) -> dict[str, int]:
    """Registers per thread ptxas allocates for each entry of `ptx` on sm_`sm_version` ({} when ptxas is
    missing, rejects the PTX or takes longer than TIMEOUT_S; such a result is cached too)."""
    exe = ptxas_path()
    if exe is None:
        return {}
    arch = ptxas_arch(ptx, sm_version)
    key = hashlib.sha256(f"{exe}\0{arch}\0".encode() + ptx.encode("utf-8", "surrogatepass")).hexdigest()
    if key in _memory:
        return _memory[key]
    disk = _cache_dir() / f"{key}.json"
    try:
        counts = {str(k): int(v) for k, v in json.loads(disk.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        counts = _compile(exe, arch, ptx)
        _store(disk, counts)
    _memory[key] = counts
    return counts


def _compile(exe: str, arch: str, ptx: str) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "module.ptx"
        src.write_text(ptx, encoding="utf-8", errors="surrogateescape")
        try:
            cmd = [exe, f"-arch={arch}", "-v", str(src), "-o", str(Path(tmp) / "module.cubin")]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return {}
    return parse_verbose(done.stderr + done.stdout) if done.returncode == 0 else {}


def _store(path: Path, counts: dict[str, int]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(counts, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # a read-only home: the in-memory cache still holds the counts

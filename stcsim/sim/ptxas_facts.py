"""Facts the PTX hides, from ptxas (`ptxas -v`) where it is installed and accepts the PTX (issue 43).

* Registers per thread: the engine's own figure is a liveness estimate over the PTX's virtual registers;
  ptxas's allocation is what silicon uses (it decides how many warps fit an SM).
* wgmma serialization: ptxas's performance advisory C7515 ("wgmma.mma_async instructions are serialized due
  to ...") names the functions whose wgmma it makes wait for the previous ones; the PTX still reads as a
  pipeline, the SASS does not.
* Spills: the bytes of local memory ptxas spills to and reloads from per entry (reported, not timed).
* Loop order and copy grouping (sm_90): the order of each innermost loop's memory and Tensor Core
  instructions, the order of the copies of each straight-line copy block (a loop's peeled iterations), the
  loads each loop's loads issue after (the SASS scoreboard's waits), and how many global loads of a tile
  copy ptxas issues before their shared stores, read from the cubin's SASS (stcsim.sim.sass_facts); the
  engine's load schedule follows them.

`facts` compiles a module once per (PTX text, target) and caches the result by their hash, in memory and on
disk (``$STCSIM_CACHE`` or ``~/.cache/stcsim``, ``ptxas/<hash>.json``). PTX ptxas rejects (e.g. the sparse
extensions), a missing ptxas, or a compile past `TIMEOUT_S` give empty facts: the caller keeps the PTX-only
view (the estimate, a pipelined wgmma).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from stcsim.sim import sass_facts

TIMEOUT_S = 60.0
"""Longest a ptxas compile may take before the estimate is used instead (huge generated kernels)."""

_ENTRY_USED = re.compile(r"Compiling entry function '([^']+)'.*?Used (\d+) registers", re.S)
_SERIALIZED = re.compile(r"\(C7515\).*?wgmma\.mma_async instructions are serialized"
                         r".*?in the function '([^']+)'")
_SPILLS = re.compile(r"Function properties for (\S+)\s*\n\s*\d+ bytes stack frame, (\d+) bytes spill stores, "
                     r"(\d+) bytes spill loads")
_TARGET = re.compile(r"^\s*\.target\s+(sm_\d+a?)", re.M)
CACHE_VERSION = 6  # in the cache key: a cache file of an older layout is never read


@dataclass(frozen=True)
class PtxasFacts:
    """What ptxas reports of a module's entries (empty when ptxas is absent or refuses the PTX)."""

    registers: dict[str, int] = field(default_factory=dict)
    wgmma_serialized: frozenset[str] = frozenset()
    spill_bytes: dict[str, int] = field(default_factory=dict)  # spill stores + loads per entry
    copy_groups: dict[str, int] = field(default_factory=dict)  # sass_facts.copy_groups (sm_90 only)
    loop_orders: dict[str, list[str]] = field(default_factory=dict)  # sass_facts.loop_orders (sm_90 only)
    block_orders: dict[str, list[str]] = field(default_factory=dict)  # sass_facts.block_orders (sm_90 only)
    loop_waits: dict[str, list[str]] = field(default_factory=dict)  # sass_facts.loop_waits (sm_90 only)


_memory: dict[str, PtxasFacts] = {}


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


def parse_facts(text: str) -> PtxasFacts:
    """`ptxas -v` output -> registers, the functions whose wgmma ptxas serialized (C7515), spill bytes."""
    spills = {m.group(1): int(m.group(2)) + int(m.group(3)) for m in _SPILLS.finditer(text)}
    return PtxasFacts(parse_verbose(text), frozenset(_SERIALIZED.findall(text)),
                      {k: v for k, v in spills.items() if v})


def _cache_dir() -> Path:
    root = os.environ.get("STCSIM_CACHE") or Path.home() / ".cache" / "stcsim"
    return Path(root) / "ptxas"


def register_counts(ptx: str, sm_version: int) -> dict[str, int]:
    """Registers per thread ptxas allocates for each entry of `ptx` on sm_`sm_version` ({} when ptxas is
    missing, rejects the PTX or takes longer than TIMEOUT_S; such a result is cached too)."""
    return facts(ptx, sm_version).registers


def facts(ptx: str, sm_version: int) -> PtxasFacts:
    """ptxas's facts of every entry of `ptx` on sm_`sm_version` (empty when ptxas is missing, rejects the PTX
    or takes longer than TIMEOUT_S; such a result is cached too)."""
    exe = ptxas_path()
    if exe is None:
        return PtxasFacts()
    arch = ptxas_arch(ptx, sm_version)
    key = hashlib.sha256(f"{exe}\0{arch}\0{CACHE_VERSION}\0".encode()
                         + ptx.encode("utf-8", "surrogatepass")).hexdigest()
    if key in _memory:
        return _memory[key]
    disk = _cache_dir() / f"{key}.json"
    try:
        raw = json.loads(disk.read_text())
        found = PtxasFacts({str(k): int(v) for k, v in raw["registers"].items()},
                           frozenset(map(str, raw["wgmma_serialized"])),
                           {str(k): int(v) for k, v in raw["spill_bytes"].items()},
                           {str(k): int(v) for k, v in raw["copy_groups"].items()},
                           {str(k): [str(x) for x in v] for k, v in raw["loop_orders"].items()},
                           {str(k): [str(x) for x in v] for k, v in raw["block_orders"].items()},
                           {str(k): [str(x) for x in v] for k, v in raw["loop_waits"].items()})
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        found = _compile(exe, arch, ptx)
        _store(disk, found)
    _memory[key] = found
    return found


def _compile(exe: str, arch: str, ptx: str) -> PtxasFacts:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "module.ptx"
        src.write_text(ptx, encoding="utf-8", errors="surrogateescape")
        try:
            cmd = [exe, f"-arch={arch}", "-v", str(src), "-o", str(Path(tmp) / "module.cubin")]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return PtxasFacts()
        if done.returncode != 0:
            return PtxasFacts()
        found = parse_facts(done.stderr + done.stdout)
        if int(arch[3:].rstrip("a")) in sass_facts.SM_VERSIONS:
            try:
                cubin = (Path(tmp) / "module.cubin").read_bytes()
                groups, orders = sass_facts.copy_groups(cubin), sass_facts.loop_orders(cubin)
                blocks, waits = sass_facts.block_orders(cubin), sass_facts.loop_waits(cubin)
            except (OSError, ValueError, struct.error):
                groups, orders, blocks, waits = {}, {}, {}, {}
            found = replace(found, copy_groups=groups, loop_orders=orders, block_orders=blocks,
                            loop_waits=waits)
    return found


def _store(path: Path, found: PtxasFacts) -> None:
    record = asdict(found)
    record["wgmma_serialized"] = sorted(found.wgmma_serialized)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # a read-only home: the in-memory cache still holds the facts

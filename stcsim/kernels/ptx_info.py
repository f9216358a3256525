"""Facts read from PTX text: kernel entries with their parameter types, and the opcodes used."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.S)
_PARAM = re.compile(
    r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+"
    r"(?:\.ptr\s+(?:\.(?:global|shared|const|local)\s+)?(?:\.align\s+\d+\s+)?)?([\w$]+)(\[\d+\])?"
)
_LABEL = re.compile(r"^[\w$]+:$")


@dataclass(frozen=True)
class PtxParam:
    """One `.param` of a kernel entry: its name and PTX type without the dot (u64, s32, f32, ...)."""

    name: str
    ptx_type: str
    array: int = 0  # element count of an array parameter (`.b8 name[128]`, a by-value struct); 0: a scalar


def entry_params(ptx: str) -> dict[str, list[PtxParam]]:
    """Every `.entry` of the PTX module with its parameters in order.

    An array parameter (a by-value struct such as a `__grid_constant__` CUtensorMap, `.b8 name[128]`) has
    `array` set to its element count. Raises ValueError for a parameter it cannot read.
    """
    entries: dict[str, list[PtxParam]] = {}
    for match in _ENTRY.finditer(_strip_comments(ptx)):
        params = []
        for piece in filter(None, (s.strip() for s in match.group(2).split(","))):
            m = _PARAM.fullmatch(piece)
            if m is None:
                raise ValueError(f"entry {match.group(1)}: unsupported parameter {piece!r}")
            array = int(m.group(3)[1:-1]) if m.group(3) else 0
            params.append(PtxParam(name=m.group(2), ptx_type=m.group(1), array=array))
        entries[match.group(1)] = params
    return entries


def opcodes(ptx: str) -> set[str]:
    """The instruction opcodes (with all modifiers, e.g. ld.global.nc.v4.u32) that appear in the PTX."""
    found: set[str] = set()
    for raw in _strip_comments(ptx).splitlines():
        for stmt in raw.replace("{", ";").replace("}", ";").split(";"):
            stmt = stmt.strip()
            if not stmt or stmt.startswith(".") or _LABEL.match(stmt) or stmt.startswith(")"):
                continue
            if stmt.startswith("@"):
                stmt = stmt.split(None, 1)[1]
            token = stmt.split()[0].rstrip(",")
            if re.fullmatch(r"[a-z][\w.]*", token):
                found.add(token)
    return found


def _strip_comments(ptx: str) -> str:
    ptx = re.sub(r"/\*.*?\*/", "", ptx, flags=re.S)
    return re.sub(r"//[^\n]*", "", ptx)

"""Config of the example extension (engine/ext/example): `example.popc3`, a template to copy."""

from __future__ import annotations

from stcsim.config.params import Bool, Derived, Group, Int

NAME = "example"
_SRC = "example values (docs/architecture.md, Adding an instruction)"

GROUP = Group("The example ISA extension (engine/ext/example): example.popc3.b32, a template to copy", {
    "enabled": Bool("Time the example.popc3 instruction", _SRC, False),
    "latency": Int("Latency of example.popc3", "cycles", _SRC, 6, hi=1024),
    "issue_interval": Int("Cycles the INT pipe is busy per example.popc3", "cycles", _SRC, 3, hi=1024),
})

DERIVED: dict[str, Derived] = {}

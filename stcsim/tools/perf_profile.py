"""Where a launch's host time goes: `perf` samples of the timed launches only, by function.

`invoke bench --profile` records the command under `perf record -e cpu-clock --call-graph dwarf` (a timer
event, so that it works on virtual machines without hardware counters; DWARF unwinding, since the engine is
built without frame pointers) and reads `perf script`'s call chains here. Only samples whose chain passes
through the launch's root (`TimingModel::run`) count: Python, the operand setup and the numpy check are
left out. Each function gets its self share (samples whose innermost non-inlined frame is it, with what
the compiler inlined into it) and its inclusive share (samples with it anywhere on the chain).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

LAUNCH_ROOT = "TimingModel::run"
_OFFSET = re.compile(r"\+0x[0-9a-f]+$")


@dataclass
class LaunchProfile:
    """Sample counts of the launch: in all, and by function (self and inclusive)."""

    samples: int = 0
    self_samples: Counter[str] = field(default_factory=Counter)
    inclusive: Counter[str] = field(default_factory=Counter)

    def table(self, top: int = 25) -> str:
        """The `top` functions by self share, with their inclusive share, as aligned text."""
        if not self.samples:
            return f"no samples under {LAUNCH_ROOT} (is the engine built with symbols?)"
        head = f"{'self':>6} {'incl':>6}  function"
        lines = [f"{self.samples} samples in the launch ({LAUNCH_ROOT})", head]
        share = {name: 100 * n / self.samples for name, n in self.inclusive.items()}
        for name, n in self.self_samples.most_common(top):
            lines.append(f"{100 * n / self.samples:5.1f}% {share.get(name, 0.0):5.1f}%  {name}")
        return "\n".join(lines)


def _frame(line: str) -> tuple[str, bool]:
    """A call-chain line of `perf script` ("ADDR SYMBOL+0xOFF (DSO)" or "... (inlined)"): its symbol and
    whether it is an inlined frame."""
    text = line.strip().split(maxsplit=1)[-1]
    symbol, _, where = text.rpartition(" (")
    if not symbol:  # no "(dso)" part
        symbol, where = text, ""
    return _OFFSET.sub("", symbol), where.startswith("inlined")


def launch_profile(script: str, root: str = LAUNCH_ROOT) -> LaunchProfile:
    """Reads `perf script` output (samples separated by blank lines, each a header line and its call chain
    of indented lines, innermost frame first) and counts the samples whose chain contains `root`."""
    prof = LaunchProfile()
    for block in script.split("\n\n"):
        chain = [ln for ln in block.splitlines() if ln[:1].isspace() and ln.strip()]
        frames = [_frame(ln) for ln in chain]
        if not any(root in name for name, _ in frames):
            continue
        prof.samples += 1
        owner = next((name for name, inlined in frames if not inlined), frames[0][0])
        prof.self_samples[owner] += 1
        for name in {name for name, inlined in frames if not inlined}:
            prof.inclusive[name] += 1
    return prof

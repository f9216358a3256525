"""Constraints that involve more than one config key (single-key ranges live on the params themselves).

Each :class:`Rule` names the keys it reads (the first is the key an error is reported against) and states
itself in words; the loader checks every rule after merging all files and before deriving values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from stcsim.config.params import Value

Values = Mapping[str, Value]


@dataclass(frozen=True)
class Rule:
    """A cross-key constraint; ``holds(values, explicit)`` sees the merged values and the keys files set."""

    keys: tuple[str, ...]
    doc: str
    holds: Callable[[Values, frozenset[str]], bool]


def _i(v: Values, key: str) -> int:
    return int(v[key])


def _power_of_two(n: int) -> bool:
    return n > 0 and not n & (n - 1)


def _divides(small: str, big: str, *more: str) -> Callable[[Values, frozenset[str]], bool]:
    def holds(v: Values, _explicit: frozenset[str]) -> bool:
        unit = _i(v, small)
        for key in more:
            unit *= _i(v, key)
        return _i(v, big) % unit == 0

    return holds


RULES: tuple[Rule, ...] = (
    Rule(("sm.shared_mem_bytes", "sm.unified_l1_shared_bytes"),
         "the shared carve-out fits in the unified L1/shared SRAM",
         lambda v, _: _i(v, "sm.shared_mem_bytes") <= _i(v, "sm.unified_l1_shared_bytes")),
    Rule(("sm.max_shared_per_cta_bytes", "sm.shared_mem_bytes"),
         "one CTA cannot use more shared memory than the SM's carve-out",
         lambda v, _: _i(v, "sm.max_shared_per_cta_bytes") <= _i(v, "sm.shared_mem_bytes")),
    Rule(("l1d.size_bytes", "sm.shared_mem_bytes", "sm.unified_l1_shared_bytes"),
         "L1D and the shared carve-out together fit in the unified SRAM",
         lambda v, _: _i(v, "l1d.size_bytes") + _i(v, "sm.shared_mem_bytes")
         <= _i(v, "sm.unified_l1_shared_bytes")),
    Rule(("sm.shared_carveouts_kb", "sm.shared_mem_bytes"),
         "the largest carve-out the driver may pick is the SM's shared carve-out (or none is listed)",
         lambda v, _: not v["sm.shared_carveouts_kb"]
         or int(str(v["sm.shared_carveouts_kb"]).split(",")[-1]) * 1024 == _i(v, "sm.shared_mem_bytes")),
    Rule(("sm.registers", "sm.register_alloc_unit"), "registers per SM are whole allocation units",
         _divides("sm.register_alloc_unit", "sm.registers")),
    Rule(("l1d.size_bytes", "l1d.assoc", "l1d.line_bytes"), "L1D has a whole number of sets",
         _divides("l1d.assoc", "l1d.size_bytes", "l1d.line_bytes")),
    Rule(("l1d.line_bytes", "l1d.sector_bytes"), "an L1D line is a whole number of sectors",
         _divides("l1d.sector_bytes", "l1d.line_bytes")),
    Rule(("l2.size_bytes", "l2.slices", "l2.assoc", "l2.line_bytes"),
         "every L2 slice has a whole number of sets",
         _divides("l2.slices", "l2.size_bytes", "l2.assoc", "l2.line_bytes")),
    Rule(("l2.line_bytes", "l2.sector_bytes"), "an L2 line is a whole number of sectors",
         _divides("l2.sector_bytes", "l2.line_bytes")),
    Rule(("l2.dram_fetch_bytes", "l2.line_bytes"), "an L2 miss fetches whole sectors dividing the L2 line",
         lambda v, _: _i(v, "l2.line_bytes") % _i(v, "l2.dram_fetch_bytes") == 0
         and _i(v, "l2.dram_fetch_bytes") % _i(v, "l2.sector_bytes") == 0),
    Rule(("l2.slice_interleave_bytes", "l2.line_bytes"), "the slice interleave unit is whole L2 lines",
         _divides("l2.line_bytes", "l2.slice_interleave_bytes")),
    Rule(("l1d.store_sector_cycles", "l1d.sector_bytes"),
         "a priced store path (store_sector_cycles > 0) needs 32-byte L1D sectors (it prices 16-byte halves)",
         lambda v, _: float(v["l1d.store_sector_cycles"]) == 0 or _i(v, "l1d.sector_bytes") == 32),
    Rule(("icache.l0_bytes", "icache.line_bytes"), "the L0 instruction cache is whole lines",
         _divides("icache.line_bytes", "icache.l0_bytes")),
    Rule(("icache.l1_bytes", "icache.line_bytes"), "the L1 instruction cache is whole lines",
         _divides("icache.line_bytes", "icache.l1_bytes")),
    Rule(("icache.l15_bytes", "icache.line_bytes"), "the instruction cache above the L1 is whole lines",
         _divides("icache.line_bytes", "icache.l15_bytes")),
    Rule(("l2.slice_map", "l2.slices", "l2.slice_interleave_bytes"),
         "the measured h100 slice map needs the slices and unit it was measured with (80 slices, 256 bytes)",
         lambda v, _: v["l2.slice_map"] != "h100"
         or (_i(v, "l2.slices") == 80 and _i(v, "l2.slice_interleave_bytes") == 256)),
    Rule(("l2.set_index", "l2.size_bytes", "l2.slices", "l2.assoc", "l2.line_bytes"),
         "an xor set index needs a power-of-two number of sets per slice",
         lambda v, _: v["l2.set_index"] != "xor" or _power_of_two(
             _i(v, "l2.size_bytes") // (_i(v, "l2.slices") * _i(v, "l2.assoc") * _i(v, "l2.line_bytes")))),
    Rule(("l2.slices", "dram.channels"), "L2 slices map evenly onto DRAM channels",
         _divides("dram.channels", "l2.slices")),
    Rule(("tensor.cores_per_subcore", "tensor.cores_per_warp_op"),
         "a sub-core's Tensor Cores form whole warp-level MMA pipes",
         _divides("tensor.cores_per_warp_op", "tensor.cores_per_subcore")),
    Rule(("l2.hit_latency", "l1d.hit_latency", "icnt.latency"),
         "an L2 hit costs at least an L1D lookup plus the interconnect both ways",
         lambda v, _: _i(v, "l2.hit_latency") >= _i(v, "l1d.hit_latency") + 2 * _i(v, "icnt.latency")),
    Rule(("dram.sustained_bandwidth_gbps", "dram.bandwidth_gbps"),
         "the sustained DRAM bandwidth is at most the peak",
         lambda v, _: float(v["dram.sustained_bandwidth_gbps"]) <= float(v["dram.bandwidth_gbps"])),
    Rule(("dram.latency", "l2.hit_latency"), "a DRAM access costs at least an L2 hit",
         lambda v, _: _i(v, "dram.latency") >= _i(v, "l2.hit_latency")),
    Rule(("units.shfl.issue_interval", "units.shfl.latency"),
         "a measured shfl latency (> 0) comes with its issue interval (> 0)",
         lambda v, _: _i(v, "units.shfl.latency") == 0 or _i(v, "units.shfl.issue_interval") > 0),
)
"""Every cross-key constraint, checked in order."""

"""Config of the wmma.smma.L extension (paper 004, engine/ext/extensor): PhaseLat's parameters and block-skip
reading."""

from __future__ import annotations

from stcsim.config.params import Bool, Derived, Enum, Group, Int

NAME = "extensor"
_P004 = "paper 004 (Zhu & Xie, ExTensor), PhaseLat model"

GROUP = Group("ExTensor wmma.smma.L extension (paper 004): latency = sum of PhaseLat over phases", {
    "enabled": Bool("Accept the wmma.smma.L instructions", _P004, False),
    "max_l": Int("Largest chunk width L; allowed L = 16, 32, ..., max_l (paper evaluates 16..64)",
                 "count", _P004, 64, lo=16, hi=1024, multiple_of=16),
    "block_skip": Enum("Reading of the block-skip rule: literal (charge >= min_block_cycles for every "
                       "row and block), row_skip (skip blocks a row does not use), phase_skip (skip "
                       "blocks no row of the phase uses)", ("literal", "row_skip", "phase_skip"),
                       "paper 004 text: a block is not fetched if no coordinate of the phase falls in it",
                       "phase_skip"),
    "nnz_per_phase": Int("Non-zeros per row consumed in one phase (4-dim dot-product units)", "count",
                         _P004, 4, hi=64),
    "min_block_cycles": Int("Minimum cycles to fetch one operand block for a row (register access)",
                            "cycles", _P004, 2, lo=0, hi=1024),
    "phase_overhead_cycles": Int("Cycles added per phase (latency of the last dot product)", "cycles",
                                 _P004, 2, lo=0, hi=1024),
    "initiation_interval": Int("Cycles before the Tensor Cores accept the next instruction; 0 = the "
                               "instruction's own latency (not given by the paper)", "cycles",
                               "assumption (paper 004 does not specify)", 0, lo=0, hi=100_000),
})

DERIVED: dict[str, Derived] = {}

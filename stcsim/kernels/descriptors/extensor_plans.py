"""The five instruction-selection schemes of paper 004 (Fig. 6) as chunk plans for the ExTensor SpMM kernel.

Every scheme covers each 16-row slice of the weights, left to right, with chunks whose widths are multiples of
16 (stcsim.sparsity.extensor_planner; K is zero-padded to a multiple of 16):

* ``l16``, ``l32``, ``l64``: every chunk ``wmma.smma.16`` / ``.32`` / ``.64``; where the slice's width is
  not a multiple of L, its last chunk is the remainder (16, 32 or 48 wide), not a chunk over zero padding.
* ``static``: per slice, the single L of 16, 32, 48, 64 (up to the pattern's ``maxL``) whose all-L plan has
  the least PhaseLat sum ("enumerating L in the range [16, 64] for each slice"); ties go to the smaller L.
* ``dynamic``: the pattern's own plan (``ExTensor.plan``: Algorithm 1's greedy merge by default).

Latencies are the PhaseLat model of the pattern's block-skip reading (stcsim.sparsity.extensor_latency), the
one the engine's ``extensor.block_skip`` should be set to.
"""

from __future__ import annotations

import numpy as np

from stcsim.sparsity.base import pad_to
from stcsim.sparsity.extensor import ExTensor
from stcsim.sparsity.extensor_latency import BLOCK
from stcsim.sparsity.extensor_planner import SLICE_ROWS, SlicePlan, latency_tables, plan_cost

SCHEMES: tuple[str, ...] = ("l16", "l32", "l64", "static", "dynamic")
FIXED_WIDTHS = {"l16": 16, "l32": 32, "l64": 64}
STATIC_WIDTHS = (16, 32, 48, 64)


def required_max_l(scheme: str) -> int:
    """The smallest ``maxL`` of the extensor pattern a scheme can run under (a fixed scheme needs its L)."""
    return FIXED_WIDTHS.get(scheme, BLOCK)


def fixed_blocks(n_blocks: int, width_blocks: int) -> list[int]:
    """Chunk widths (in 16-column blocks) covering n_blocks with chunks of width_blocks, remainder last."""
    full, rest = divmod(n_blocks, width_blocks)
    return [width_blocks] * full + ([rest] if rest else [])


def scheme_plans(mask: np.ndarray, scheme: str, pattern: ExTensor) -> list[SlicePlan]:
    """One SlicePlan per 16-row slice of a keep-mask (m x k) under `scheme` (see module docstring)."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown ExTensor scheme {scheme!r}; allowed: {', '.join(SCHEMES)}")
    if scheme == "dynamic":
        return pattern.plan(mask)
    # a fixed scheme's chunks are its width or narrower (the remainder): the latency tables need no wider
    max_blocks = min(pattern.maxL, FIXED_WIDTHS.get(scheme, pattern.maxL)) // BLOCK
    if scheme in FIXED_WIDTHS and FIXED_WIDTHS[scheme] > pattern.maxL:
        raise ValueError(f"scheme {scheme} needs chunks of {FIXED_WIDTHS[scheme]}, above maxL={pattern.maxL}")
    padded = pad_to(np.asarray(mask, dtype=bool), SLICE_ROWS, BLOCK)
    candidates = [FIXED_WIDTHS[scheme]] if scheme in FIXED_WIDTHS else [
        width for width in STATIC_WIDTHS if width <= pattern.maxL
    ]
    plans = []
    for table in latency_tables(padded, max_blocks, pattern.reading):
        options = [fixed_blocks(table.shape[0], width // BLOCK) for width in candidates]
        costs = [plan_cost(table, blocks) for blocks in options]
        best = int(np.argmin(costs))
        plans.append(SlicePlan(tuple(BLOCK * w for w in options[best]), costs[best]))
    return plans

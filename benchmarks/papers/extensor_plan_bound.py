"""How much any chunk plan can gain over wmma.smma.16 under paper 004's own latency model (Fig. 6's gap).

Paper 004 (Zhu and Xie, Sec. III-B and V.B) chooses chunk widths per 16-row slice by the PhaseLat sum of the
chunks (Alg. 1) and reports 1.36x / 1.37x over the smma.16-only baseline at 90% / 96%. This script plans
uniformly random (magnitude-pruned random weights) masks with every planner and sums PhaseLat under each
block-skip reading: the exact optimum (``dp``) bounds what Alg. 1 (``greedy``) or any other plan can gain in
Tensor Core latency; the instruction ratio bounds what a fixed per-instruction cost could add.

    python -m benchmarks.papers.extensor_plan_bound [--shapes 512x4608,4096x1024] [--sparsity 0.9,0.96]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from benchmarks.calibration.tc_explain import markdown
from stcsim.kernels.descriptors.extensor_plans import fixed_blocks
from stcsim.sparsity.extensor_latency import BLOCK, BlockSkip
from stcsim.sparsity.extensor_planner import SLICE_ROWS, latency_tables, pad_to, plan_cost, plan_matrix


def plan_bound(mask: np.ndarray, max_l: int = 64) -> pd.DataFrame:
    """Per reading: PhaseLat-sum speedup over smma.16 of Alg. 1, the exact optimum and the one-width plans,
    and Alg. 1's instruction count over smma.16's."""
    rows = []
    for reading in BlockSkip:
        plans = {p: plan_matrix(mask, max_l, reading, p) for p in ("fixed", "greedy", "dp")}
        latency = {p: sum(s.latency for s in v) for p, v in plans.items()}
        chunks = {p: sum(len(s.widths) for s in v) for p, v in plans.items()}
        tables = latency_tables(pad_to(mask, SLICE_ROWS, BLOCK), max_l // BLOCK, reading)
        row: dict[str, object] = {"reading": reading.value}
        for width in range(2, max_l // BLOCK + 1):
            one_width = sum(plan_cost(t, fixed_blocks(t.shape[0], width)) for t in tables)
            row[f"smma.{BLOCK * width} only"] = latency["fixed"] / one_width
        row["Alg. 1 (greedy)"] = latency["fixed"] / latency["greedy"]
        row["exact optimum (dp)"] = latency["fixed"] / latency["dp"]
        row["Alg. 1 instructions / smma.16's"] = chunks["greedy"] / chunks["fixed"]
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """CLI: one table per shape and sparsity (latency-sum speedups over smma.16, > 1: faster)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="512x4608,4096x1024", help="M x K of the weight, comma-separated")
    ap.add_argument("--sparsity", default="0.9,0.96")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    for shape in a.shapes.split(","):
        m, k = (int(v) for v in shape.lower().split("x"))
        for sparsity in (float(s) for s in a.sparsity.split(",")):
            print(f"\n{m} x {k}, {sparsity:.0%} unstructured (PhaseLat-sum speedup over smma.16)\n")
            table = plan_bound(rng.random((m, k)) >= sparsity)
            print(markdown(table.round(3).astype(str)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Silicon's explanation of a case's time next to the simulator's (issue 43), per case of a measured suite.

Reads a measured CSV with ncu's explaining metrics (``run_tc_styles.sh``: tc_explain.csv) and a simulated one
(``python -m stcsim.experiments.calibrate simulate``, which records the engine's stall statistics) and prints
per case: sim / measured cycles; silicon's SASS warp instructions per simulated PTX one; silicon's cycles per
issued instruction of a warp and its three largest stall reasons (warps stalled per issued instruction);
the Tensor pipe's and the LSU's instructions; achieved occupancy on both sides; and the simulator's
scheduler-cycle split (issue, scoreboard, unit busy, barrier, memory, idle).

    python -m benchmarks.calibration.tc_explain measured.csv simulated.csv [--markdown]
"""

from __future__ import annotations

import argparse

import pandas as pd

STALL = "smsp__average_warps_issue_stalled_"
SIM_SPLIT = ("issue_cycles", "stall_scoreboard", "stall_unit_busy", "stall_barrier", "stall_memory",
             "stall_idle")


def top_stalls(row: pd.Series, n: int = 3) -> str:
    """The n largest stall reasons of a measured row, as 'reason value' (warps per issued instruction)."""
    stalls = {c[len(STALL):].removesuffix("_per_issue_active.ratio"): row[c]
              for c in row.index if c.startswith(STALL) and pd.notna(row[c])}
    best = sorted(stalls.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} {v:.1f}" for k, v in best)


def explain(measured: pd.DataFrame, simulated: pd.DataFrame) -> pd.DataFrame:
    """One row per case with the figures the module docstring lists."""
    both = measured.merge(simulated, on=["kernel", "shape"], suffixes=("", "_sim"))
    out = pd.DataFrame({"kernel": both["kernel"], "shape": both["shape"],
                        "measured": both["measured_cycles"], "sim": both["sim_cycles"]})
    out["ratio"] = both["sim_cycles"] / both["measured_cycles"]
    out["sass/ptx"] = both["inst_executed"] / both["sim_warp_insts"]
    lat = "smsp__average_warp_latency_per_inst_issued.ratio"
    if lat in both:
        out["cyc/inst"] = both[lat]
    out["top stalls (silicon)"] = [top_stalls(r) for _, r in both.iterrows()]
    for col, name in (("smsp__inst_executed_pipe_tensor.sum", "tensor"), ("smsp__inst_executed_pipe_lsu.sum",
                                                                          "lsu")):
        if col in both:
            out[f"{name}/ptx"] = both[col] / both["sim_warp_insts"]
    occ = "sm__warps_active.avg.pct_of_peak_sustained_active"
    if occ in both:
        out["occ"] = both[occ] / 100
    if "sim_achieved_occupancy" in both:
        out["occ_sim"] = both["sim_achieved_occupancy"]
    total = sum(both[f"sim_{c}"] for c in SIM_SPLIT if f"sim_{c}" in both)
    for c in SIM_SPLIT:
        if f"sim_{c}" in both:
            out[f"sim {c.removeprefix('stall_')}"] = both[f"sim_{c}"] / total
    return out


def markdown(table: pd.DataFrame) -> str:
    """The table as a markdown table (floats with two decimals, cycles as integers)."""
    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.2f}"
        return f"`{v}`" if isinstance(v, str) and v.startswith("tcs_") else str(v)
    lines = ["| " + " | ".join(table.columns) + " |", "|" + " --- |" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI: print the table (text or markdown)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measured")
    ap.add_argument("simulated")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    table = explain(pd.read_csv(a.measured, comment="#"), pd.read_csv(a.simulated, comment="#"))
    print(markdown(table) if a.markdown else table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

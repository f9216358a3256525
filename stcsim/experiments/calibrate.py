"""Calibration of the simulator against silicon: the same PTX, simulated and measured.

The suite: the GEMM kernel set at 3-4 shapes (``GEMM_SUITE``) and the memory-bound, irregular and
Tensor-Core-from-global kernels of ``stcsim.experiments.calibration_cases``, each kernel in the tuning or the
validation half declared in ``benchmarks/calibration/halves.yaml``. On a GPU machine, ``run-suite`` runs every
case (a warm-up launch and a measured one) under Nsight Compute, and ``collect`` joins ncu's rows with the
launch order into one row per case:
``gpc__cycles_elapsed.max`` (the kernel's cycles), ``sm__cycles_active.avg``, ``gpu__time_duration.sum`` and
``smsp__inst_executed.sum``, under ``#`` header lines that record the date, GPU, driver and clocks.
Anywhere, ``compare`` simulates every case of such a CSV on a config and reports the error of
``gpu_sim_cycle`` against the measured cycles per case, and the mean absolute relative error and Pearson
correlation of each half, with the worst sim/measured ratio per kernel class; ``simulate`` records the
simulated cycles and warp instructions of every case without a measurement.

    ncu --clock-control none --metrics <METRICS> --csv --log-file ncu.csv \
        python -m stcsim.experiments.calibrate run-suite --order order.csv              # on the GPU
    python -m stcsim.experiments.calibrate collect --ncu ncu.csv --order order.csv --out h100.csv --meta "..."
    python -m stcsim.experiments.calibrate compare \
        results/reference/h100_calibration_wide_run{1,2}.csv --config h100
    python -m stcsim.experiments.calibrate simulate --config h100 --out results/calibration/sim_h100.csv
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import yaml

from stcsim.config.errors import ConfigError
from stcsim.experiments.calibration_cases import CASES, KERNEL_DIR, Case, CaseCheckError, run_case
from stcsim.experiments.tc_style_cases import TC_CASES
from stcsim.kernels import GemmProblem, get_kernel, random_operands, run_gemm
from stcsim.kernels.verify import relative_error

HALVES_FILE = KERNEL_DIR.parent / "halves.yaml"

METRICS = (
    "gpc__cycles_elapsed.max",
    "sm__cycles_active.avg",
    "gpu__time_duration.sum",
    "smsp__inst_executed.sum",
)

# What explains a case's time (issue 43), measured beside METRICS where ncu knows the metric: the warp-state
# stall breakdown (average warps stalled per issued instruction, by reason), SASS instructions by pipe and
# memory-operation class, achieved occupancy and issue activity.
STALL_REASONS = ("long_scoreboard", "short_scoreboard", "mio_throttle", "lg_throttle", "math_pipe_throttle",
                 "wait", "not_selected", "selected", "barrier", "membar", "branch_resolving",
                 "no_instruction", "dispatch_stall", "drain", "imc_miss", "misc", "sleeping", "tex_throttle")
EXPLAIN_METRICS = (
    *(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALL_REASONS),
    "smsp__average_warp_latency_per_inst_issued.ratio",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.per_cycle_active",
    "smsp__inst_executed_pipe_tensor.sum",
    "smsp__inst_executed_pipe_lsu.sum",
    "smsp__inst_executed_pipe_alu.sum",
    "smsp__inst_executed_pipe_fma.sum",
    "smsp__inst_executed_pipe_uniform.sum",
    "smsp__inst_executed_op_ldsm.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum",
    "smsp__sass_inst_executed_op_global_red.sum",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
)
# What the L1TEX does with a warp's global loads (benchmarks/calibration/run_l1_metrics.sh): requests,
# sectors and their tag hits, data-stage wavefronts, fills from L2, and the LSU's writeback.
L1_METRICS = (
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_lg.sum",
    "l1tex__data_pipe_lsu_wavefronts.sum",
    "l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum",
    "l1tex__lsu_writeback_active.sum",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_global_op_ld.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
)

# (kernel, M, N, K): every kernel of the set at sizes from one wave of CTAs to several, plus ragged shapes.
GEMM_SUITE: tuple[tuple[str, int, int, int], ...] = (
    ("gemm_naive_f32_f32_tile16x16x1", 128, 128, 128),
    ("gemm_naive_f32_f32_tile16x16x1", 256, 256, 256),
    ("gemm_naive_f32_f32_tile16x16x1", 200, 136, 72),
    ("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", 256, 256, 256),
    ("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", 512, 512, 512),
    ("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", 200, 136, 72),
    ("gemm_wmma_global_f16_f32_tile32x32x16_warp16x16", 256, 256, 256),
    ("gemm_wmma_global_f16_f32_tile32x32x16_warp16x16", 512, 512, 512),
    ("gemm_wmma_f16_f32_tile64x64x32_warp32x32", 256, 256, 256),
    ("gemm_wmma_f16_f32_tile64x64x32_warp32x32", 512, 512, 512),
    ("gemm_wmma_f16_f32_tile64x64x32_warp32x32", 1024, 1024, 1024),
    ("gemm_wmma_f16_f32_tile64x64x32_warp32x32", 200, 136, 72),
    ("gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3", 256, 256, 256),
    ("gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3", 512, 512, 512),
    ("gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3", 1024, 1024, 1024),
    ("gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2", 256, 256, 256),
    ("gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2", 512, 512, 512),
    ("gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2", 1024, 1024, 1024),
    ("gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2", 200, 136, 72),
)


def halves() -> pd.DataFrame:
    """kernel -> half (tuning | validation) and class, as declared in benchmarks/calibration/halves.yaml."""
    spec = yaml.safe_load(HALVES_FILE.read_text())
    rows = []
    for kernel, entry in spec.items():
        half, group = (entry.get("half"), entry.get("class")) if isinstance(entry, dict) else (None, None)
        if half not in ("tuning", "validation") or not isinstance(group, str):
            msg = f"needs half (tuning or validation) and class, got {entry!r}"
            raise ConfigError(msg, key=kernel, where=str(HALVES_FILE))
        rows.append({"kernel": kernel, "half": half, "class": group})
    return pd.DataFrame(rows)


# The suite's groups: `base` (the GEMM kernel set and the memory, control and fragment kernels the model was
# tuned with through issue 11) and `tc-styles` (issue 43's Tensor Core styles,
# stcsim.experiments.tc_style_cases).
GROUPS = ("all", "base", "tc-styles")


def _cases(group: str) -> tuple[Case, ...]:
    return {"all": CASES + TC_CASES, "base": CASES, "tc-styles": TC_CASES}[group]


def suite(group: str = "all") -> list[tuple[str, str]]:
    """Every case of the suite (or of one of GROUPS) as (kernel, shape), GEMMs first (shape MxNxK)."""
    if group not in GROUPS:
        raise ValueError(f"unknown suite group {group!r}: one of {', '.join(GROUPS)}")
    gemms = [(k, f"{m}x{n}x{kk}") for k, m, n, kk in GEMM_SUITE] if group != "tc-styles" else []
    return gemms + [(c.kernel, c.shape) for c in _cases(group)]


def run(kernel: str, shape: str, engine: Any, rng: np.random.Generator, launches: int = 1) -> dict:
    """Runs one case of the suite on `engine`, its output checked against numpy (CaseCheckError); returns
    the engine's stats. KeyError for a case that is not in the suite."""
    for case in CASES + TC_CASES:
        if (case.kernel, case.shape) == (kernel, shape):
            return run_case(case, engine, rng, launches)
    if (kernel, shape) not in suite():
        raise KeyError(f"no calibration case {kernel} {shape}")
    m, n, k = (int(v) for v in shape.split("x"))
    a, b = random_operands(GemmProblem(m, n, k), rng)
    gemm = get_kernel(kernel)
    c, stats = run_gemm(gemm, engine, a, b)
    err = relative_error(c, a.astype(np.float64) @ b.astype(np.float64))
    if not err < gemm.tolerance:
        raise CaseCheckError(f"{kernel} {shape}: max|C - A@B| / max|A@B| = {err:.2e}")
    return stats


def run_suite(order_path: str, seed: int = 0, group: str = "all", kernels: tuple[str, ...] = ()) -> None:
    """Runs every case of `group` (only those of `kernels` when given) on the GPU (a warm-up launch and one
    measured launch each) and records the launch order, so that ncu's rows can be matched to cases, and
    whether the output matched numpy. Needs CuPy."""
    from stcsim.gpu.runner import GpuEngine

    eng = GpuEngine(repeats=1)
    with open(order_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["launch", "kernel", "shape", "role", "check"])
        for i, (kernel, shape) in enumerate(c for c in suite(group) if not kernels or c[0] in kernels):
            try:
                run(kernel, shape, eng, np.random.default_rng(seed), launches=1 + eng.repeats)
                check = "ok"
            except CaseCheckError as err:  # measured all the same; the row says the output was wrong
                print(err, file=sys.stderr)
                check = "failed"
            w.writerow([2 * i, kernel, shape, "warmup", check])
            w.writerow([2 * i + 1, kernel, shape, "measured", check])


def read_ncu_csv(text: str) -> pd.DataFrame:
    """ncu --csv output (one row per launch and metric) -> one row per launch with a column per metric."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    df = pd.read_csv(io.StringIO("\n".join(lines)))
    df["Metric Value"] = pd.to_numeric(df["Metric Value"].astype(str).str.replace(",", ""), errors="coerce")
    wide = df.pivot_table(index="ID", columns="Metric Name", values="Metric Value", aggfunc="first")
    names = df.groupby("ID")["Kernel Name"].first()
    wide["kernel_name"] = names
    return wide.reset_index().sort_values("ID").reset_index(drop=True)


def collect(ncu_csv: str, order_csv: str) -> pd.DataFrame:
    """Joins ncu's per-launch metrics with the launch order; keeps the measured launches."""
    order = pd.read_csv(order_csv)
    ncu = read_ncu_csv(open(ncu_csv).read())
    ncu = ncu[ncu["kernel_name"].isin(set(order["kernel"]))].reset_index(drop=True)  # drop helper kernels
    if len(ncu) != len(order):
        raise ValueError(f"ncu profiled {len(ncu)} launches but the suite made {len(order)}")
    both = pd.concat([order.reset_index(drop=True), ncu], axis=1)
    bad = both[both["kernel"] != both["kernel_name"]]
    if len(bad):
        raise ValueError(f"launch order mismatch at launch {int(bad.iloc[0]['launch'])}")
    out = both[both["role"] == "measured"].rename(
        columns={
            "gpc__cycles_elapsed.max": "measured_cycles",
            "sm__cycles_active.avg": "sm_cycles_active_avg",
            "gpu__time_duration.sum": "gpu_time_ns",
            "smsp__inst_executed.sum": "inst_executed",
        }
    )
    cols = ["kernel", "shape", "measured_cycles", "sm_cycles_active_avg", "gpu_time_ns", "inst_executed",
            "check"]
    cols = [c for c in cols if c in out.columns]  # a pass of launch__ metrics alone has no cycles
    # any further metrics ncu was asked for (EXPLAIN_METRICS: stall reasons, pipes, occupancy) as they are
    extra = sorted(c for c in out.columns if "__" in c and c not in cols)
    return out[cols + extra]


def read_measured(*paths: str) -> pd.DataFrame:
    """Measured CSVs (kernel, shape, measured_cycles, ...) of the same suite, one row per case; with several
    passes, measured_cycles and inst_executed are the mean over the passes and `spread` is (max - min) / mean
    of the measured cycles. Older files with m, n, k get shape MxNxK."""
    passes = []
    for path in paths:
        meas = pd.read_csv(path, comment="#")
        if "shape" not in meas.columns:
            meas["shape"] = [f"{r.m}x{r.n}x{r.k}" for r in meas.itertuples()]
        passes.append(meas)
    if len(passes) == 1:
        return passes[0]
    both = pd.concat(passes)
    numeric = [c for c in ("measured_cycles", "inst_executed") if c in both.columns]
    mean = both.groupby(["kernel", "shape"], sort=False)[numeric].mean().reset_index()
    cycles = both.groupby(["kernel", "shape"], sort=False)["measured_cycles"]
    mean["spread"] = ((cycles.max() - cycles.min()) / cycles.mean()).to_numpy()
    counts = both.groupby(["kernel", "shape"], sort=False).size().to_numpy()
    if (counts != len(passes)).any():
        raise ValueError(f"the measured files {', '.join(paths)} do not hold the same cases")
    return mean


# The simulator's side of EXPLAIN_METRICS, recorded by `simulate` (prefixed sim_): where its schedulers lost
# their cycles, occupancy, and the Tensor Core and LD/ST busy cycles.
SIM_EXPLAIN = ("issue_cycles", "stall_scoreboard", "stall_unit_busy", "stall_barrier", "stall_memory",
               "stall_control", "stall_fetch", "stall_idle", "achieved_occupancy", "tensor_busy_cycles",
               "unit_busy_cycles_LDST", "shared_carveout_bytes", "l1d_bytes", "l1d_hits", "l1d_misses")


def simulate(cases: list[tuple[str, str]], config: str = "h100") -> pd.DataFrame:
    """Simulates each (kernel, shape) on `config`: sim cycles, warp instructions, CPU seconds (setup, numpy
    check and simulation) and the SIM_EXPLAIN statistics per case."""
    from stcsim.sim import Engine

    rows = []
    for kernel, shape in cases:
        t0 = time.process_time()
        st = run(kernel, shape, Engine(config), np.random.default_rng(0))
        row = {"kernel": kernel, "shape": shape, "sim_cycles": st["gpu_sim_cycle"],
               "sim_warp_insts": st["warp_insts"], "cpu_seconds": round(time.process_time() - t0, 2)}
        row.update({f"sim_{k}": st[k] for k in SIM_EXPLAIN if k in st})
        rows.append(row)
    return pd.DataFrame(rows).merge(halves(), on="kernel", how="left")


@dataclass(frozen=True)
class HalfScore:
    """MAE and Pearson correlation of simulated vs measured cycles over one half of the suite."""

    half: str
    cases: int
    mae: float
    pearson: float


@dataclass(frozen=True)
class Comparison:
    """Simulated vs measured cycles over a suite: per case, per half, and the worst ratio per class."""

    rows: pd.DataFrame
    halves: tuple[HalfScore, ...]
    worst: pd.DataFrame  # class, kernel, shape, ratio (sim / measured) farthest from 1
    families: pd.DataFrame  # half, class, kernel (a family), cases, median and range of sim / measured

    def __str__(self) -> str:
        cols = ["half", "class", "kernel", "shape", "measured_cycles", "sim_cycles", "rel_error"]
        cols += ["sass_per_ptx"] if "sass_per_ptx" in self.rows.columns else []
        table = self.rows[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}")
        scores = "\n".join(f"{h.half:<10} MAE {h.mae:6.1%}  Pearson {h.pearson:.3f}  over {h.cases} cases"
                           for h in self.halves)
        worst = self.worst.to_string(index=False, float_format=lambda v: f"{v:.3f}")
        families = self.families.to_string(index=False, float_format=lambda v: f"{v:.3f}")
        return (f"{table}\n\n{scores}\n\nworst sim/measured ratio per class:\n{worst}\n\n"
                f"sim/measured ratio per family (kernel):\n{families}")


def _score(half: str, rows: pd.DataFrame) -> HalfScore:
    pearson = (float(np.corrcoef(rows["sim_cycles"], rows["measured_cycles"])[0, 1])
               if len(rows) > 1 else float("nan"))
    return HalfScore(half, len(rows), float(rows["rel_error"].abs().mean()), pearson)


def score(rows: pd.DataFrame) -> Comparison:
    """Per-half MAE / Pearson and the per-class worst ratio of rows with kernel, shape, half, class,
    measured_cycles and sim_cycles."""
    rows = rows.copy()
    rows["rel_error"] = (rows["sim_cycles"] - rows["measured_cycles"]) / rows["measured_cycles"]
    ratio = rows["sim_cycles"] / rows["measured_cycles"]
    rows["ratio"] = ratio
    far = np.abs(np.log(ratio))
    worst = rows.loc[far.groupby(rows["class"]).idxmax(), ["class", "kernel", "shape", "ratio"]]
    scores = tuple(_score(h, rows[rows["half"] == h]) for h in ("tuning", "validation"))
    everything = _score("all", rows)
    families = (rows.groupby(["half", "class", "kernel"])["ratio"]
                .agg(cases="size", median_ratio="median", min_ratio="min", max_ratio="max").reset_index())
    return Comparison(rows.reset_index(drop=True), (*scores, everything), worst.reset_index(drop=True),
                      families)


def compare(measured_csvs: list[str], config: str = "h100", simulated_csv: str | None = None) -> Comparison:
    """Simulates every measured case on `config` (or reads the cases from `simulated_csv`, a file written by
    ``simulate``) and compares gpu_sim_cycle with the measured cycles, the mean of the measured passes."""
    meas = read_measured(*measured_csvs)
    if simulated_csv is None:
        sim = simulate(list(zip(meas["kernel"], meas["shape"], strict=True)), config)
    else:
        sim = pd.read_csv(simulated_csv, comment="#").drop(columns=["half", "class"], errors="ignore")
        sim = sim.merge(halves(), on="kernel", how="left")
    both = meas.merge(sim[["kernel", "shape", "sim_cycles", "sim_warp_insts", "half", "class"]],
                      on=["kernel", "shape"])
    if "inst_executed" in both.columns:  # SASS warp instructions on silicon per simulated PTX one
        both["sass_per_ptx"] = both["inst_executed"] / both["sim_warp_insts"]
    if both["half"].isna().any():
        raise ValueError(f"{HALVES_FILE} gives no half for {both.loc[both['half'].isna(), 'kernel'].iloc[0]}")
    return score(both)


def main(argv: list[str] | None = None) -> int:
    """CLI: run-suite (GPU, under ncu) | collect | compare | simulate."""
    ap = argparse.ArgumentParser(prog="python -m stcsim.experiments.calibrate",
                                 description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run-suite")
    p.add_argument("--order", required=True)
    p.add_argument("--group", default="all", choices=GROUPS)
    p.add_argument("--kernel", action="append", default=[], help="only these kernels (repeatable)")
    p = sub.add_parser("collect")
    p.add_argument("--ncu", required=True)
    p.add_argument("--order", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--meta", action="append", default=[], help="a 'key: value' header line (repeatable)")
    p = sub.add_parser("compare")
    p.add_argument("measured", nargs="+", help="measured CSVs of the same suite (several passes: their mean)")
    p.add_argument("--config", default="h100")
    p.add_argument("--simulated", help="a CSV written by `simulate` instead of simulating now")
    p = sub.add_parser("simulate")
    p.add_argument("--config", default="h100")
    p.add_argument("--out", required=True)
    p.add_argument("--kernel", action="append", default=[], help="only these kernels (repeatable)")
    p.add_argument("--group", default="all", choices=GROUPS)
    a = ap.parse_args(argv)
    if a.cmd == "run-suite":
        run_suite(a.order, group=a.group, kernels=tuple(a.kernel))
    elif a.cmd == "collect":
        with open(a.out, "w", newline="") as f:
            f.writelines(f"# {line}\n" for line in a.meta)
            collect(a.ncu, a.order).to_csv(f, index=False)
    elif a.cmd == "compare":
        print(compare(a.measured, a.config, a.simulated))
    else:
        cases = [c for c in suite(a.group) if not a.kernel or c[0] in a.kernel]
        sim = simulate(cases, a.config)
        with open(a.out, "w", newline="") as f:
            f.write(f"# config: {a.config}; date: {time.strftime('%Y-%m-%d', time.gmtime())}\n")
            sim.to_csv(f, index=False)
        print(sim.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

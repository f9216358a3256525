"""Calibration of the simulator against silicon: the same PTX, simulated and measured.

On a GPU machine, ``run-suite`` runs the calibration suite (every case a warm-up launch and a measured one)
under Nsight Compute, and ``collect`` joins ncu's rows with the launch order into one row per case:
``gpc__cycles_elapsed.max`` (the kernel's cycles), ``sm__cycles_active.avg``, ``gpu__time_duration.sum`` and
``smsp__inst_executed.sum``, under ``#`` header lines that record the date, GPU, driver and clocks.
Anywhere, ``compare`` simulates every case of such a CSV on a config and reports the error of
``gpu_sim_cycle`` against the measured cycles per case, their mean absolute relative error and the Pearson
correlation over the whole suite (never a subset).

    ncu --clock-control none --metrics <METRICS> --csv --log-file ncu.csv \
        python -m stcsim.gpu.calibrate run-suite --order order.csv                      # on the GPU
    python -m stcsim.gpu.calibrate collect --ncu ncu.csv --order order.csv --out h100.csv --meta "..."
    python -m stcsim.gpu.calibrate compare results/reference/h100_calibration.csv --config h100
"""

from __future__ import annotations

import argparse
import csv
import io
from dataclasses import dataclass

import numpy as np
import pandas as pd

from stcsim.kernels import GemmProblem, get_kernel, random_operands, run_gemm

METRICS = (
    "gpc__cycles_elapsed.max",
    "sm__cycles_active.avg",
    "gpu__time_duration.sum",
    "smsp__inst_executed.sum",
)

# (kernel, M, N, K): every kernel of the set at sizes from one wave of CTAs to several, plus ragged shapes.
SUITE: tuple[tuple[str, int, int, int], ...] = (
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


@dataclass(frozen=True)
class Comparison:
    """Simulated vs measured cycles over a suite."""

    rows: pd.DataFrame
    mae: float
    pearson: float

    def __str__(self) -> str:
        cols = ["kernel", "m", "n", "k", "measured_cycles", "sim_cycles", "rel_error"]
        table = self.rows[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}")
        return (
            f"{table}\n\nmean absolute relative error {self.mae:.1%}, Pearson correlation {self.pearson:.3f} "
            f"over {len(self.rows)} cases"
        )


def run_suite(order_path: str, seed: int = 0) -> None:
    """Runs every case on the GPU (a warm-up launch and one measured launch each) and records the launch
    order, so that ncu's rows can be matched to cases. Needs CuPy."""
    from stcsim.gpu.runner import GpuEngine

    eng = GpuEngine(repeats=1)
    with open(order_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["launch", "kernel", "m", "n", "k", "role"])
        launch = 0
        for kernel, m, n, k in SUITE:
            a, b = random_operands(GemmProblem(m, n, k), np.random.default_rng(seed))
            run_gemm(get_kernel(kernel), eng, a, b)  # GpuEngine.launch = warm-up + 1 measured launch
            w.writerow([launch, kernel, m, n, k, "warmup"])
            w.writerow([launch + 1, kernel, m, n, k, "measured"])
            launch += 2


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
    return out[
        ["kernel", "m", "n", "k", "measured_cycles", "sm_cycles_active_avg", "gpu_time_ns", "inst_executed"]
    ]


def compare(measured_csv: str, config: str = "h100") -> Comparison:
    """Simulates every measured case on `config` and compares gpu_sim_cycle with the measured cycles."""
    from stcsim.sim import Engine

    meas = pd.read_csv(measured_csv, comment="#")
    sims = []
    for r in meas.itertuples():
        a, b = random_operands(GemmProblem(r.m, r.n, r.k), np.random.default_rng(0))
        _, st = run_gemm(get_kernel(r.kernel), Engine(config), a, b)
        sims.append(st["gpu_sim_cycle"])
    rows = meas.copy()
    rows["sim_cycles"] = sims
    rows["rel_error"] = (rows["sim_cycles"] - rows["measured_cycles"]) / rows["measured_cycles"]
    mae = float(rows["rel_error"].abs().mean())
    pearson = (
        float(np.corrcoef(rows["sim_cycles"], rows["measured_cycles"])[0, 1])
        if len(rows) > 1
        else float("nan")
    )
    return Comparison(rows, mae, pearson)


def main(argv: list[str] | None = None) -> int:
    """CLI: run-suite (GPU, under ncu) | collect | compare."""
    ap = argparse.ArgumentParser(prog="python -m stcsim.gpu.calibrate", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run-suite")
    p.add_argument("--order", required=True)
    p = sub.add_parser("collect")
    p.add_argument("--ncu", required=True)
    p.add_argument("--order", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--meta", action="append", default=[], help="a 'key: value' header line (repeatable)")
    p = sub.add_parser("compare")
    p.add_argument("measured")
    p.add_argument("--config", default="h100")
    a = ap.parse_args(argv)
    if a.cmd == "run-suite":
        run_suite(a.order)
    elif a.cmd == "collect":
        with open(a.out, "w", newline="") as f:
            f.writelines(f"# {line}\n" for line in a.meta)
            collect(a.ncu, a.order).to_csv(f, index=False)
    else:
        print(compare(a.measured, a.config))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

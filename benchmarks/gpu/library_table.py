"""Geomean time ratios of the library table (issue 44 item 2) from either view of it: the CUDA-event CSV of
benchmarks/gpu/library_baselines.py (``ms_median``) or the kernel-only CSV of
benchmarks/gpu/library_kernels.py (``us``, the sum of the GPU times of every kernel a call launched).

    python -m benchmarks.gpu.library_table results/reference/h100_library_kernels.csv

One row per pair (numerator / denominator, > 1: the numerator is slower) and shape subset: batch 1 (all,
N = 1, N > 1) and batch 32; each cell the geomean over the shapes that have both, with their count.
``ours_csrmv_best`` is the faster of the one- and eight-column library-class csrmm per shape (as the
per-shape kernel choice picks it); ``ours_tc_best`` the fastest of our dense WMMA and mma.sync GEMMs
per shape.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from benchmarks.calibration.tc_explain import markdown

PAIRS = (
    ("ours_simt_sgemm", "cublas_sgemm", "our SIMT SGEMM (fixed 64x64x8) / cuBLAS SGEMM"),
    ("ours_wmma", "cublas_hgemm", "our dense WMMA GEMM (fixed 64x64x32) / cuBLAS HGEMM"),
    ("ours_mma_stage2", "cublas_hgemm", "our mma.sync 64x64 2-stage / cuBLAS HGEMM"),
    ("ours_mma_stage3", "cublas_hgemm", "our mma.sync 128x128 3-stage / cuBLAS HGEMM"),
    ("ours_tc_best", "cublas_hgemm", "our best dense tensor-core GEMM (per shape) / cuBLAS HGEMM"),
    ("cublas_sgemm", "cublas_hgemm", "cuBLAS SGEMM / cuBLAS HGEMM (libraries' Tensor Core Dense speedup)"),
    ("ours_simt_sgemm", "ours_wmma", "our SIMT SGEMM / our WMMA GEMM (fixed: Tensor Core Dense speedup)"),
    ("ours_csr_spmm96", "cusparse_spmm96", "our CSR SpMM / cuSPARSE SpMM (96%)"),
    ("ours_csrmv_best", "cusparse_spmm96", "library-class csrmm / cuSPARSE SpMM (96%)"),
    ("ours_csrmv_best", "cublas_sgemm", "library-class csrmm (96%) / cuBLAS SGEMM"),
    ("cusparse_spmm96", "cublas_sgemm", "cuSPARSE SpMM (96%) / cuBLAS SGEMM"),
    ("ours_csr_spmm96", "ours_simt_sgemm", "our CSR SpMM (96%) / our SIMT SGEMM"),
    ("ours_channel50", "cublas_sgemm_channel50", "our channel-pruned (50%) / cuBLAS SGEMM on half the rows"),
    ("ours_vw75", "cublas_sgemm", "our vector-wise (75%) / cuBLAS SGEMM (dense)"),
)
KEYS = ["network", "layer", "batch", "m", "n", "k"]


def times(df: pd.DataFrame) -> pd.DataFrame:
    """One row per shape, one column per kernel label: its time (event median or kernel-only sum)."""
    column = "ms_median" if "ms_median" in df.columns else "us"
    wide = df.pivot_table(index=KEYS, columns="kernel", values=column, aggfunc="first")
    if {"ours_csrmv1_spmm96", "ours_csrmv8_spmm96"} <= set(wide.columns):
        wide["ours_csrmv_best"] = wide[["ours_csrmv1_spmm96", "ours_csrmv8_spmm96"]].min(axis=1)
    dense_tc = [k for k in ("ours_wmma", "ours_mma_stage2", "ours_mma_stage3") if k in wide.columns]
    if dense_tc:
        wide["ours_tc_best"] = wide[dense_tc].min(axis=1)
    return wide.reset_index()


def ratio_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per pair present in `df`: geomean ratio and shape count for batch 1, its N = 1 and N > 1 shapes, and
    batch 32."""
    wide = times(df)
    subsets = {
        "batch 1": wide.batch == 1,
        "b1, N = 1": (wide.batch == 1) & (wide.n == 1),
        "b1, N > 1": (wide.batch == 1) & (wide.n > 1),
        "batch 32": wide.batch == 32,
    }
    rows = []
    for num, den, label in PAIRS:
        if num not in wide.columns or den not in wide.columns:
            continue
        row: dict[str, object] = {"pair": label}
        for name, pick in subsets.items():
            r = (wide.loc[pick, num] / wide.loc[pick, den]).dropna()
            row[name] = f"{np.exp(np.log(r).mean()):.2f} ({len(r)})" if len(r) else "-"
        rows.append(row)
    return pd.DataFrame(rows)


SIM_PAIRS = ("ours_vw75", "ours_channel50", "ours_csr_spmm96", "ours_csrmv_best", "ours_wmma",
             "ours_mma_stage2", "ours_mma_stage3")
"""Our kernels whose time over our SIMT SGEMM (the fixed-tile bars of Fig. 16) is set beside simulation."""


def sim_vs_silicon(df: pd.DataFrame, sim: pd.DataFrame, base: str = "ours_simt_sgemm") -> pd.DataFrame:
    """Per kernel of SIM_PAIRS: the geomean over the shapes both files have of its time over `base`'s on
    silicon and in simulation (library_sim's cycles), their quotient and the mean absolute per-shape error
    of the simulated ratio."""
    measured = times(df).set_index(KEYS)
    simulated = times(sim.rename(columns={"sim_cycles": "us"})).set_index(KEYS)
    rows = []
    for label in SIM_PAIRS:
        if not {label, base} <= set(measured.columns) & set(simulated.columns):
            continue
        both = pd.concat([(measured[label] / measured[base]).rename("silicon"),
                          (simulated[label] / simulated[base]).rename("sim")], axis=1, join="inner").dropna()
        if both.empty:
            continue
        geo = np.exp(np.log(both).mean())
        rows.append({"kernel / " + base: label, "shapes": len(both), "silicon": f"{geo['silicon']:.2f}",
                     "simulated": f"{geo['sim']:.2f}",
                     "simulated / silicon": f"{geo['sim'] / geo['silicon']:.2f}",
                     "mean abs per-shape error": f"{(both.sim / both.silicon - 1).abs().mean():.1%}"})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """CLI: print the ratio table of a library CSV as markdown."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="a library_baselines or library_kernels CSV")
    ap.add_argument("--sim",
                    help="a library_sim CSV: our kernels' time over our SGEMM's, simulated and on silicon")
    a = ap.parse_args(argv)
    df = pd.read_csv(a.csv, comment="#")
    print(markdown(ratio_table(df)))
    if a.sim:
        print()
        print(markdown(sim_vs_silicon(df, pd.read_csv(a.sim, comment="#"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The library table's geomean ratios (benchmarks/gpu/library_table.py) on a hand-made CSV."""

import pandas as pd

from benchmarks.gpu.library_table import ratio_table, sim_vs_silicon, times


def _rows(kernel: str, values: dict[tuple[int, int], float]) -> list[dict[str, object]]:
    return [{"network": "net", "layer": f"l{n}", "batch": b, "m": 64, "n": n, "k": 64, "kernel": kernel,
             "us": v} for (b, n), v in values.items()]


def test_ratios_per_subset_and_the_best_csrmm():
    df = pd.DataFrame(
        _rows("cublas_sgemm", {(1, 1): 1.0, (1, 8): 2.0, (32, 8): 4.0})
        + _rows("ours_simt_sgemm", {(1, 1): 4.0, (1, 8): 2.0, (32, 8): 2.0})
        + _rows("ours_csrmv1_spmm96", {(1, 1): 3.0, (1, 8): 8.0})
        + _rows("ours_csrmv8_spmm96", {(1, 1): 5.0, (1, 8): 4.0})
    )
    assert times(df)["ours_csrmv_best"].dropna().tolist() == [3.0, 4.0]
    table = ratio_table(df).set_index("pair")
    simt = table.loc["our SIMT SGEMM (fixed 64x64x8) / cuBLAS SGEMM"]
    assert simt["batch 1"] == "2.00 (2)"  # geomean of 4 and 1
    assert simt["b1, N = 1"] == "4.00 (1)" and simt["b1, N > 1"] == "1.00 (1)"
    assert simt["batch 32"] == "0.50 (1)"
    csrmm = table.loc["library-class csrmm (96%) / cuBLAS SGEMM"]
    assert csrmm["batch 1"] == "2.45 (2)" and csrmm["batch 32"] == "-"  # sqrt(3 x 2)
    assert "our CSR SpMM / cuSPARSE SpMM (96%)" not in table.index  # pairs without both kernels are left out


def test_best_dense_tensor_core_gemm_per_shape():
    df = pd.DataFrame(
        _rows("cublas_hgemm", {(1, 1): 1.0, (1, 8): 1.0})
        + _rows("ours_wmma", {(1, 1): 4.0, (1, 8): 2.0})
        + _rows("ours_mma_stage2", {(1, 1): 3.0, (1, 8): 5.0})
        + _rows("ours_mma_stage3", {(1, 1): 6.0, (1, 8): 7.0})
    )
    assert times(df)["ours_tc_best"].tolist() == [3.0, 2.0]
    best = ratio_table(df).set_index("pair").loc["our best dense tensor-core GEMM (per shape) / cuBLAS HGEMM"]
    assert best["batch 1"] == "2.45 (2)"  # sqrt(3 x 2)


def test_simulated_ratios_beside_silicon():
    silicon = pd.DataFrame(
        _rows("ours_simt_sgemm", {(1, 1): 10.0, (1, 8): 10.0})
        + _rows("ours_vw75", {(1, 1): 5.0, (1, 8): 20.0})
    )
    sim = pd.DataFrame(
        _rows("ours_simt_sgemm", {(1, 1): 100.0, (1, 8): 100.0})
        + _rows("ours_vw75", {(1, 1): 100.0, (1, 8): 200.0})
    ).rename(columns={"us": "sim_cycles"})
    row = sim_vs_silicon(silicon, sim).set_index("kernel / ours_simt_sgemm").loc["ours_vw75"]
    assert row["shapes"] == 2 and row["silicon"] == "1.00" and row["simulated"] == "1.41"  # sqrt(2)
    assert row["mean abs per-shape error"] == "50.0%"  # 1.0 / 0.5 - 1 and 2.0 / 2.0 - 1

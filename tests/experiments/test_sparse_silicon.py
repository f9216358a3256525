"""The sparse silicon table's plumbing that runs anywhere: cases from the registry, ncu join, simulation on
tiny shapes, speedups and the summary."""

import numpy as np
import pandas as pd
import pytest

from stcsim.experiments.sparse_silicon import (
    CASE_COLUMNS,
    Case,
    build_cases,
    cases_of,
    collect,
    dense_kernels,
    kernel_pattern,
    layer_shapes,
    read_meta,
    run_case,
    simulate,
    sparsert_cases,
    speedup_table,
    summary,
    table_kernels,
    write_csv,
)
from stcsim.kernels import GemmProblem, get_kernel
from stcsim.kernels.descriptors.gemm_mma_sp import MMA_SP_KERNELS
from stcsim.kernels.descriptors.spmm_sparsert import SparseRtKernel
from stcsim.kernels.descriptors.spmm_tvw import TVW_KERNELS
from stcsim.kernels.registry import REGISTRY, runs_on_silicon
from stcsim.workloads import get_network, unique_gemm_shapes

HEADER = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'


def _ncu_rows(launches: list[tuple[int, str, float]]) -> str:
    """ncu --csv text: one gpc__cycles_elapsed.max row per launch, after a profiler banner line."""
    rows = [f'"{i}","{name}","gpc__cycles_elapsed.max","cycle","{c:,.0f}"' for i, name, c in launches]
    return "\n".join(["==PROF== Connected to process 1", HEADER, *rows])

SP = MMA_SP_KERNELS[1].procedural_name
DENSE = "gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2"


def test_research_kernels_are_not_silicon_kernels():
    assert not runs_on_silicon(get_kernel("gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32"))
    assert not runs_on_silicon(get_kernel("spmm_extensor_l32_f16_f32_tile32x32_warp16x16"))
    assert runs_on_silicon(MMA_SP_KERNELS[0]) and runs_on_silicon(get_kernel(DENSE))


def test_table_kernels_come_from_the_registry():
    kernels, skipped = table_kernels()
    names = [k.procedural_name for k, _ in kernels]
    assert {k.procedural_name for k in (*MMA_SP_KERNELS, *TVW_KERNELS)} <= set(names)
    assert not any("shmma" in n or "extensor" in n for n in names)
    assert names[-len(dense_kernels()):] == [k.procedural_name for k in dense_kernels()]
    assert all(k.instruction.startswith("mma.sync") for k in dense_kernels())
    sparse = [k for k in REGISTRY if k.pattern_name != "dense" and runs_on_silicon(k)]
    assert len(names) + len(skipped) == len(sparse) + len(dense_kernels())
    assert kernel_pattern(TVW_KERNELS[1]).spec().startswith("tvw:G=128")


def test_the_selector_takes_globs_and_exclusions():
    every = [k.procedural_name for k, _ in table_kernels()[0]]
    chosen = [k.procedural_name for k, _ in table_kernels("*mma_sp*,*tvw*,!*g128*")[0]]
    sparse = [n for n in chosen if n not in {k.procedural_name for k in dense_kernels()}]
    assert sparse and all(("mma_sp" in n or "tvw" in n) and "g128" not in n for n in sparse)
    assert "spmm_tvw_g128" not in " ".join(chosen) and len(chosen) < len(every)


def test_a_named_glob_brings_its_dense_kernels():
    """'gemm_wgmma*' picks the Hopper GEMMs, dense ones included (the baselines come too); '*' alone keeps
    the table's dense kernels to the mma.sync baselines."""
    chosen = [(k.procedural_name, p.name) for k, p in table_kernels("gemm_wgmma*")[0]]
    assert ("gemm_wgmma_f16_f32_tile128x256x64_stage4", "dense") in chosen
    assert ("gemm_wgmma_sp_f16_f32_tile128x128x64_stage5", "nm") in chosen
    assert not any(n.startswith("gemm_wgmma_f16") for n, _ in (
        (k.procedural_name, p) for k, p in table_kernels()[0]))


def test_sparsert_problems_are_three_kernels_each():
    cases = sparsert_cases(0.9)
    assert len(cases) == 60 and {c.layer for c in cases} == {f"problem {i}" for i in range(1, 21)}
    p11 = {c.pattern: c for c in cases if c.layer == "problem 11"}
    assert set(p11) == {"sparsert", "unstructured", "dense"}
    assert (p11["sparsert"].m, p11["sparsert"].k, p11["sparsert"].n) == (512, 512, 256)
    assert p11["dense"].sparsity == 0.0 and p11["sparsert"].sparsity == 0.9


def test_collect_matches_a_generated_kernel_by_its_entry(tmp_path):
    """ncu names the generated SparseRT module's entry, not the kernel's procedural name."""
    case = Case("sparsert_problems", "problem 1", SparseRtKernel().procedural_name, "sparsert", 0.9, 8, 8, 8)
    row = [*(getattr(case, c) for c in CASE_COLUMNS)]
    order = pd.DataFrame([[0, *row, "warmup", 1e-7, ""], [1, *row, "measured", 1e-7, 0.01]],
                         columns=["launch", *CASE_COLUMNS, "role", "rel_error", "gpu_time_ms"])
    order.to_csv(tmp_path / "order.csv", index=False)
    entry = SparseRtKernel.entry
    (tmp_path / "ncu.csv").write_text(_ncu_rows([(0, entry, 90.0), (1, entry, 70.0)]))
    out = collect(str(tmp_path / "ncu.csv"), str(tmp_path / "order.csv"))
    assert out["measured_cycles"].tolist() == [70.0] and cases_of(out) == [case]


def test_layer_shapes_are_the_prunable_network_shapes():
    shapes = layer_shapes(["bert_base"])
    expect = [s for s in unique_gemm_shapes(get_network("bert_base")) if s.prunable]
    assert [(p.m, p.n, p.k) for _, _, p in shapes] == [(s.m, s.n, s.k) for s in expect]
    assert all(net == "bert_base" for net, _, _ in shapes)


def test_cases_skip_what_a_pattern_cannot_prune_to():
    cases, skipped = build_cases([("toy", "l0", GemmProblem(64, 64, 64))], 0.75)
    assert {(c.kernel, c.sparsity) for c in cases if c.pattern == "dense"} == {(k.procedural_name, 0.0)
                                                                                for k in dense_kernels()}
    assert any("vw_l16k2" in line and "0.875" in line for line in skipped)
    assert SP in {c.kernel for c in cases}


def test_collect_joins_ncu_cycles_in_launch_order(tmp_path):
    case = Case("toy", "l0", SP, "nm:N=2,M=4", 0.75, 16, 16, 64)
    row = [*(getattr(case, c) for c in CASE_COLUMNS)]
    order = pd.DataFrame([[0, *row, "warmup", 1e-7, ""], [1, *row, "measured", 1e-7, 0.01]],
                         columns=["launch", *CASE_COLUMNS, "role", "rel_error", "gpu_time_ms"])
    order.to_csv(tmp_path / "order.csv", index=False)
    (tmp_path / "ncu.csv").write_text(_ncu_rows([(0, SP, 900.0), (1, "memset", 3.0), (2, SP, 800.0)]))
    out = collect(str(tmp_path / "ncu.csv"), str(tmp_path / "order.csv"))
    assert out["measured_cycles"].tolist() == [800.0] and cases_of(out) == [case]


def test_speedups_and_summary_from_random_cycles():
    rng = np.random.default_rng()
    rows = []
    for kernel, pattern in ((SP, "nm:N=2,M=4"), (DENSE, "dense"), ("other_dense", "dense")):
        for m in (64, 128):
            rows.append({"kernel": kernel, "pattern": pattern, "m": m, "n": 32, "k": 64,
                         "measured_cycles": rng.uniform(1e3, 1e4), "sim_cycles": rng.uniform(1e3, 1e4)})
    frame = pd.DataFrame(rows)
    table = speedup_table(frame)
    sp = table[table.kernel == SP].set_index("m")
    for m in (64, 128):
        dense = frame[(frame.pattern == "dense") & (frame.m == m)]
        silicon = dense.measured_cycles.min() / sp.loc[m, "measured_cycles"]
        assert sp.loc[m, "speedup_silicon"] == pytest.approx(silicon)
        assert sp.loc[m, "speedup_sim"] == pytest.approx(dense.sim_cycles.min() / sp.loc[m, "sim_cycles"])
    summ = summary(table).set_index("kernel")
    assert summ.loc[SP, "cases"] == 2
    assert summ.loc[SP, "mean_abs_sim_error"] == pytest.approx(float(sp["sim_error"].abs().mean()))
    assert summ.loc[SP, "speedup_sim_geomean"] == pytest.approx(float(np.sqrt(sp["speedup_sim"].prod())))


def test_simulation_side_on_tiny_shapes(tmp_path):
    cases = [Case("toy", "l0", SP, "nm:N=2,M=4", 0.75, 40, 24, 96),
             Case("toy", "l0", DENSE, "dense", 0.0, 40, 24, 96)]
    cycles = simulate(cases, "h100")
    assert all(c > 0 for c in cycles)
    rows = [{**vars(c), "measured_cycles": 1e3, "sim_cycles": s} for c, s in zip(cases, cycles, strict=True)]
    frame = pd.DataFrame(rows)
    write_csv(speedup_table(frame), str(tmp_path / "t.csv"), ["gpu: test", "date: today"])
    assert read_meta(str(tmp_path / "t.csv")) == ["gpu: test", "date: today"]
    back = pd.read_csv(tmp_path / "t.csv", comment="#")
    assert back["speedup_silicon"].tolist() == [1.0, 1.0]
    assert back.loc[0, "speedup_sim"] == pytest.approx(cycles[1] / cycles[0], rel=1e-5)


class _RepeatingEngine:
    """The simulator launched as the CuPy runner launches: a warm-up and `repeats` timed launches."""

    def __init__(self, repeats: int) -> None:
        from stcsim.sim import Engine

        self.repeats = repeats
        self._engine = Engine("v100")

    def __getattr__(self, name: str):
        return getattr(self._engine, name)

    def launch(self, *args, **kwargs):
        for _ in range(self.repeats):
            self._engine.launch(*args, **kwargs)
        return self._engine.launch(*args, **kwargs)


@pytest.mark.parametrize("repeats", [0, 1, 3])
def test_a_split_k_case_checks_against_every_launch_the_runner_made(repeats):
    # split-K adds its slices into C; the runner launched it 1 + repeats times (silicon reported 1.0 before)
    kernel = "gemm_simt_vw_l16k8_f32_f32_tile64x64x8_warp32x16_thread4x4_splitk2"
    assert get_kernel(kernel).splits == 2
    case = Case("test", "split", kernel, "vw:L=16,K=8,axis=row", 0.75, 64, 32, 256)
    err, _ = run_case(case, _RepeatingEngine(repeats), seed=3)
    assert err < 1e-5


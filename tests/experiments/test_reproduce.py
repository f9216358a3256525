"""`invoke reproduce`: the figures' data, the plan (unavailable bars listed, not dropped), the table next to
the paper's numbers, the PNG, and the expected time."""

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest

from stcsim.experiments import paper_figures, reproduce
from stcsim.experiments.paper_figures import Bar, Figure, Panel, get_figure
from stcsim.workloads.papers import PaperWorkload


def test_the_papers_numbers_are_those_of_the_digests():
    fig16 = get_figure("paper001-fig16")
    assert [w.spec for w in fig16.networks] == ["alexnet:variant=tf-slim", "vgg16", "resnet50",
                                                "resnext50_32x4d", "show_and_tell:layers=lstm", "nmt_wmt16"]
    bars = {b.label: b for b in fig16.bars}
    assert bars["CUDA Core Generic (96%)"].paper[0] == 0.89 and bars["Tensor Core Dense"].paper[2] == 2.06
    assert bars["Tensor Core Vector-wise (75%)"].paper_geomean == 2.57
    assert (bars["Tensor Core Vector-wise (75%)"].config, bars["CUDA Core Vector-wise (75%)"].kernel) == \
        ("v100+stc-pingpong", "cuda-core")
    library = bars["CUDA Core Generic (96%), library-class csrmm"]  # the Generic bar as the paper ran it
    assert (library.paper, library.kernel) == (bars["CUDA Core Generic (96%)"].paper, "spmm_csrmv_*")
    fig6 = get_figure("paper004-fig6")
    assert [p.baseline for p in fig6.panels] == ["smma.16 only (90%)", "smma.16 only (96%)"]
    assert [b.paper_geomean for b in fig6.bars if b.label.startswith("dynamic")] == [1.36, 1.37]
    assert "1.36x" in fig6.source and "Fig. 16" in fig16.source
    with pytest.raises(ValueError, match="choose one of: paper001-fig16, paper004-fig6, "
                                         "paper000-transformer, paper002-fig10, paper003-table1"):
        get_figure("paper002-fig1")


def test_every_bar_is_planned_or_listed_with_its_reason():
    plan = reproduce.plan_figure(get_figure("paper004-fig6"), layers=1)
    labels = {b.label for b in plan.figure.bars}
    assert set(plan.variants) | set(plan.unavailable) == labels
    assert not set(plan.variants) & set(plan.unavailable)
    assert all(why.startswith("pattern ") for why in plan.unavailable.values())
    planned = {j.variant.label for j in plan.jobs}
    assert planned == set(plan.variants) and len(plan.jobs) == 3 * len(plan.variants)
    assert all(j.variant.config == "titanv+extensor" for j in plan.jobs)
    schemes = {j.variant.kernel for j in plan.jobs if j.variant.pattern.startswith("extensor")}
    assert schemes == {f"spmm_extensor_{s}_*" for s in ("l16", "l32", "l64", "static", "dynamic")}


@pytest.mark.parametrize("name", ["paper001-fig16", "paper004-fig6"])
def test_every_bar_finds_its_kernel_in_the_registry(name):
    """The figures name kernels by pattern, math units or a glob of names: a renamed kernel or a pattern
    without kernels shows up here as a dense fallback."""
    plan = reproduce.plan_figure(get_figure(name), layers=1)
    assert not plan.unavailable
    assert [(j.variant.label, j.fallback) for j in plan.jobs if j.fallback] == []


def test_expected_time_grows_with_work_and_shrinks_with_workers():
    plan = reproduce.plan_figure(get_figure("paper004-fig6"), layers=1)
    one, two = reproduce.expected_seconds(plan.jobs, 1), reproduce.expected_seconds(plan.jobs, 2)
    assert one > 0 and np.isclose(one, 2 * two)
    bigger = reproduce.plan_figure(get_figure("paper004-fig6"), layers=2)
    assert reproduce.expected_seconds(bigger.jobs, 1) > one


@pytest.fixture
def tiny_figure(monkeypatch):
    """A two-network figure of small layers with a runnable, a fallback and an unavailable bar."""
    networks = (PaperWorkload("001", "MobileNet", "mobilenet_v1:image_size=32", 1, "test"),
                PaperWorkload("001", "ResNet", "resnet18:image_size=32", 1, "test"))
    bars = (Bar("CUDA dense", "dense", 0.0, "v100", "cuda-core", (1.0, 1.0), 1.0),
            Bar("TC dense", "dense", 0.0, "v100", "tensor-core", (2.0, None), 2.5),
            Bar("TC vw", "vw:L=16,K=4", 0.75, "v100+stc", "tensor-core", (None, None), None),
            Bar("TC future", "extensor:planner=future", 0.9, "v100", "tensor-core", (None, None), 3.0))
    panels = (Panel("", "CUDA dense", bars),)
    figure = Figure("tiny-fig", "001", "Tiny", "test source", 1, "", networks, panels)
    monkeypatch.setattr(paper_figures, "figures", lambda: {"tiny-fig": figure})
    return figure


def test_reproduce_writes_csv_table_and_png(dense_only, tiny_figure, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["tiny-fig", "--layers", "1", "--out", str(out), "--jobs", "1", "--no-progress"]
    assert reproduce.main(args) == 0
    text = capsys.readouterr().out
    assert "expected time about" in text and "MobileNet: mobilenet_v1:image_size=32 (test)" in text
    table = (out / "table.md").read_text()
    assert "| configuration | MobileNet | ResNet | GeoMean | dense-fallback layers |" in table
    row = next(line for line in table.splitlines() if line.startswith("| TC dense |"))
    assert row.count("(paper ") == 2 and row.endswith("| 0 of 2 |")
    assert re.search(r"\| \d\.\d\d \(paper 2\.00, ratio \d\.\d\d\) \|", row) and "(paper 2.50, ratio " in row
    assert next(line for line in table.splitlines() if line.startswith("| TC vw |")).endswith("| 2 of 2 |")
    assert "| TC future | n/a | n/a | n/a (paper 3.00) | - |" in table
    assert table.startswith("Scope: quick: the 1 unique layer shapes per network cheapest to simulate; "
                            "batch 1; full-detail simulation (no sampling); configs v100, v100+stc; kernels "
                            "chosen per shape among each family's tiles and K splits.")
    assert "Kernel choice per bar" in table
    assert "- CUDA dense: 2 only; ran gemm_simt_f32_f32_tile64x64x8" in table  # dense_only: one SIMT tile
    assert "TC future: pattern 'extensor:planner=future'" in table and "wall time" in table
    assert (out / "results.csv").exists()
    assert (out / "tiny-fig.png").read_bytes()[:4] == b"\x89PNG"
    ours, _ = reproduce.panel_tables(reproduce.plan_figure(tiny_figure, 1), tiny_figure.panels[0],
                                     reproduce.run_jobs(reproduce.plan_figure(tiny_figure, 1).jobs, out,
                                                        progress=False).frame)
    assert np.allclose(ours["CUDA dense"], 1.0) and (ours["TC dense"] > 1.0).all()


def test_fallback_shares_are_per_network_and_over_all_layers(tiny_figure):
    plan = reproduce.plan_figure(tiny_figure, 1)
    frame = pd.DataFrame({"row_type": ["layer"] * 4 + ["total"],
                          "variant": ["TC vw", "TC vw", "TC vw", "TC dense", "TC vw"],
                          "network": ["mobilenet_v1:image_size=32"] * 2 + ["resnet18:image_size=32"] * 3,
                          "fallback": [True, False, False, False, True]})
    shares = reproduce.fallback_shares(plan, frame)
    assert shares.at["MobileNet", "TC vw"] == 0.5 and shares.at["ResNet", "TC vw"] == 0.0
    assert np.isclose(shares.at[reproduce.GEOMEAN, "TC vw"], 1 / 3)
    assert (shares["TC dense"] == 0).all() and (shares["CUDA dense"] == 0).all()


def test_a_sensitivity_run_puts_every_network_at_its_batch_and_says_so(tiny_figure):
    at8 = tiny_figure.at_batch(8)
    assert at8.batch == 8 and all(w.batch == 8 for w in at8.networks) and "--batch" in at8.batch_note
    plan = reproduce.plan_figure(at8, 1, fixed=True)
    assert plan.jobs and {j.batch for j in plan.jobs} == {8} and "batch 8" in plan.scope()
    with pytest.raises(ValueError, match="at least 1"):
        tiny_figure.at_batch(0)


def test_a_figure_of_fixed_problems_has_no_batch_to_change():
    with pytest.raises(ValueError, match="fixed problem shapes"):
        get_figure("paper003-table1").at_batch(8)
    assert reproduce.main(["paper003-table1", "--batch", "8"]) == 2


def test_the_scope_says_full_or_quick_batch_sampling_configs_and_the_kernel_choice(tiny_figure):
    full = reproduce.plan_figure(tiny_figure).scope()
    assert full.startswith("full: every unique layer shape of each network; batch 1; full-detail")
    fixed = reproduce.plan_figure(tiny_figure, 1, fixed=True)
    assert "kernels chosen by the fixed rule" in fixed.scope()
    assert {j.variant.kernel for j in fixed.jobs} == {"fixed:cuda-core", "fixed:tensor-core"}


@pytest.mark.parametrize("name", ["paper001-fig16", "paper004-fig6", "paper000-transformer", "paper002-fig10",
                                  "paper003-table1"])
def test_the_papers_are_cited_by_title_and_section_never_by_a_file(name):
    source = get_figure(name).source
    assert not re.search(r"/\w+/|\.txt|\.md\b", source)
    assert "Sec. " in source and "\"" in source  # the title in quotes


def test_the_numbers_of_papers_000_002_003_are_those_of_the_digests():
    shfl = get_figure("paper000-transformer")
    assert [w.spec for w in shfl.networks] == ["transformer_base"]
    bars = {b.label: b for b in shfl.bars}
    assert [bars[f"Shfl-BW V=64 ({gpu}, 75%)"].paper_geomean for gpu in ("V100", "A100", "T4")] == \
        [1.81, 1.90, 4.18]
    assert bars["Shfl-BW V=32 (T4, 75%)"].paper == (3.17,)
    assert {b.config for b in shfl.bars} == {"v100", "a100", "t4"}
    tw = get_figure("paper002-fig10")
    assert [w.label for w in tw.networks] == ["VGG16", "ResNet-18", "ResNet-50", "NMT", "BERT"]
    bars = {b.label: b for b in tw.bars}
    assert (bars["TW (75%)"].paper_geomean, bars["TVW (75%)"].paper_geomean) == (1.70, 1.85)
    assert bars["TW (75%)"].on("VGG16") == ("tw:G=64", 0.75)
    assert bars["TVW (75%)"].on("BERT") == ("tvw:G=128", 0.75)
    rt = get_figure("paper003-table1")
    assert len(rt.problems) == 20 and rt.problems[11].shape == (64, 12544, 32)  # problem 12: M, N, K
    bars = {b.label: b for b in rt.bars}
    ninety, ninety_five = bars["SparseRT (90%)"], bars["SparseRT (95%)"]
    assert ninety.paper_problems[0] == 4.3 and ninety.paper_problems_geomean == 3.4
    assert ninety_five.paper_problems[10] == 9.0 and ninety_five.paper_problems[11] is None
    assert {b.config for b in rt.bars} == {"t4"} and rt.shapes("Transformer") == {
        (2048, 256, 512), (512, 256, 2048), (512, 256, 512)}


def test_paper000_runs_every_panel_on_the_kernels_its_gpu_has():
    """Paper 000's V100 and T4 panels run the WMMA Shfl-BW SpMM (sm_70+: no cp.async, no mma.sync), the A100
    panel the mma.sync one; no bar is unavailable, none falls back."""
    plan = reproduce.plan_figure(get_figure("paper000-transformer"), layers=1)
    assert plan.unavailable == {} and len(plan.variants) == 9
    assert [(j.variant.label, j.fallback) for j in plan.jobs if j.fallback] == []
    for job in plan.jobs:
        if job.variant.pattern.startswith("shflbw"):
            wmma = job.choice.kernel.startswith("spmm_shflbw_wmma_")
            assert wmma == (job.variant.config in ("v100", "t4")), (job.variant.label, job.choice.kernel)


def test_bars_the_gpu_cannot_run_are_listed_with_the_instructions_they_lack():
    """A bar whose every kernel the GPU refuses (here the sm_80 Shfl-BW family, selected by its glob, on the
    V100) is unavailable, with the sm_80 instructions the kernels use and where."""
    why = reproduce.refusal("shflbw:V=64", 0.75, "v100", "spmm_shflbw_f16_f32_*")
    assert why.startswith("not runnable on v100: every shflbw:V=64 kernel")
    assert "cp.async, mma.sync m16n8k16: sm_80+" in why and "(spmm_shflbw.ptx:" in why
    assert reproduce.refusal("shflbw:V=64", 0.75, "v100", "tensor-core") == ""


def test_a_bar_runs_its_per_network_pattern():
    plan = reproduce.plan_figure(get_figure("paper002-fig10"), layers=1)
    assert not plan.unavailable
    patterns = {(j.network, j.variant.label): j.variant.pattern.split(",")[0] for j in plan.jobs}
    assert patterns[("vgg16", "TW (75%)")] == "tw:G=64" and patterns[("bert_base", "TW (75%)")] == "tw:G=128"
    assert patterns[("nmt_iwslt", "TVW (75%)")] == "tvw:G=128"
    assert [(j.variant.label, j.fallback) for j in plan.jobs if j.fallback] == []


def test_a_figure_of_problems_runs_only_their_shapes_and_tables_them(tmp_path, monkeypatch):
    """Paper 003 on its MobileNet V1 problems alone (--layers 1: the cheapest of them), run: the network
    table and the per-problem table with the paper's numbers."""
    full = get_figure("paper003-table1")
    plan = reproduce.plan_figure(full, layers=2)
    shapes = {p.shape for p in full.problems}
    assert {(j.layer.m, j.layer.n, j.layer.k) for j in plan.jobs} <= shapes
    assert {j.network for j in plan.jobs} == {w.spec for w in full.networks}
    assert len(plan.jobs) == 2 * 3 * 3 and plan.scope().startswith(
        "quick: the 2 of the paper's problems per network cheapest to simulate")
    keep = [i for i, p in enumerate(full.problems) if p.network == "MobileNet V1"]
    panels = tuple(dataclasses.replace(panel, bars=tuple(
        dataclasses.replace(bar, paper=bar.paper[2:],
                            paper_problems=tuple(bar.paper_problems[i] for i in keep))
        for bar in panel.bars)) for panel in full.panels)
    mobilenet = dataclasses.replace(full, networks=full.networks[2:], panels=panels,
                                    problems=tuple(full.problems[i] for i in keep))
    monkeypatch.setattr(paper_figures, "figures", lambda: {"paper003-table1": mobilenet})
    out = tmp_path / "out"
    assert reproduce.main(["paper003-table1", "--quick", "--layers", "1", "--out", str(out), "--jobs", "1",
                           "--no-progress"]) == 0
    table = (out / "table.md").read_text()
    assert "| problem (M x N x K) | network | SparseRT (90%) | SparseRT (95%) |" in table
    row = next(line for line in table.splitlines() if line.startswith("| #19 (1024x49x512) |"))
    assert re.search(r"\| \d+\.\d\d \(paper 2\.60, ratio \d\.\d\d\) \| \d+\.\d\d \|$", row)
    assert "| #12 (64x12544x32) | MobileNet V1 | - (paper 1.40) | - |" in table
    assert re.search(r"\| GeoMean \|  \| \d+\.\d\d \(paper 3\.40, ratio", table)
    assert (out / "paper003-table1.png").read_bytes()[:4] == b"\x89PNG"


@pytest.fixture
def sampled_figure(monkeypatch):
    """One small network and two dense bars: a run cheap enough to sample and check against full detail."""
    networks = (PaperWorkload("001", "ResNet", "resnet18:image_size=32", 1, "test"),)
    bars = (Bar("CUDA dense", "dense", 0.0, "v100", "cuda-core", (1.0,), 1.0),
            Bar("TC dense", "dense", 0.0, "v100", "tensor-core", (2.0,), 2.0))
    figure = Figure("sampled-fig", "001", "Sampled", "test source", 1, "", networks,
                    (Panel("", "CUDA dense", bars),))
    monkeypatch.setattr(paper_figures, "figures", lambda: {"sampled-fig": figure})
    return figure


def test_a_sampled_run_states_its_scope_and_the_error_measured_against_full_detail(dense_only, sampled_figure,
                                                                                    tmp_path):
    """Sampling forced on for a --quick run: the table says so with its tolerance, how many layer runs the
    sampler shortened, and the error of the checked ones against their full-detail re-run (under
    full_detail/), each within its stated estimate."""
    out = tmp_path / "out"
    args = ["sampled-fig", "--quick", "--layers", "2", "--sample", "0.02", "--check-layers", "1", "--out",
            str(out), "--jobs", "1", "--no-progress"]
    assert reproduce.main(args) == 0
    table = (out / "table.md").read_text()
    assert table.startswith("Scope: quick: the 2 unique layer shapes per network cheapest to simulate; "
                            "batch 1; sampled simulation (tolerance 0.02);")
    line = next(line for line in table.splitlines() if line.startswith("Sampling: on, tolerance 0.02"))
    frame = pd.read_csv(out / "results.csv")
    shortened = int(frame["sample_mode"].isin(reproduce.SAMPLED_MODES).sum())
    assert f"{shortened} of {len(frame[frame['row_type'] == 'layer'])} layer runs were shortened" in line
    assert shortened >= 1, "the test needs a layer the sampler shortens"
    assert "measured against full detail on 1 of them" in line
    assert "every one within its stated estimate" in line
    full = pd.read_csv(out / reproduce.FULL_DETAIL_FOLDER / "results.csv")
    full = full[full["row_type"] == "layer"]
    assert len(full) == 1 and ("sample_mode" not in full or full["sample_mode"].isna().all())
    row = next(line for line in table.splitlines() if line.startswith("| resnet18:image_size=32 |"))
    assert row.endswith("| yes |")


def test_full_runs_sample_by_default_and_full_detail_turns_it_off(monkeypatch, sampled_figure):
    seen = {}

    def plan(figure, layers=None, check=True, fixed=False, sample=0.0):
        seen[layers] = sample
        raise ValueError("stop")

    monkeypatch.setattr(reproduce, "plan_figure", plan)
    assert reproduce.main(["sampled-fig"]) == 2 and seen[None] == reproduce.SAMPLE_TOLERANCE
    assert reproduce.main(["sampled-fig", "--full-detail"]) == 2 and seen[None] == 0.0
    assert reproduce.main(["sampled-fig", "--quick"]) == 2 and seen[reproduce.QUICK_LAYERS] == 0.0
    assert reproduce.main(["sampled-fig", "--quick", "--sample", "0.05"]) == 2
    assert seen[reproduce.QUICK_LAYERS] == 0.05


def test_the_sampling_paragraph_says_off_and_names_runs_beyond_their_estimate():
    assert reproduce.format_sampling(reproduce.SamplingCheck(0.0)).startswith("Sampling: off")
    runs = (reproduce.CheckedRun("net", "l1", "bar", 1010.0, 1000.0, 0.02),
            reproduce.CheckedRun("net", "l2", "bar", 970.0, 1000.0, 0.01))
    check = reproduce.SamplingCheck(0.02, 10, 4, runs)
    text = reproduce.format_sampling(check)
    assert "4 of 10 layer runs were shortened" in text and "max |error| 3.00% (net l2, bar)" in text
    assert "max stated estimate 2.00%" in text and "1 beyond its stated estimate: net l2 bar" in text
    assert "| net | l1 | bar | 1,010 | 1,000 | +1.00% | 2.00% | yes |" in text
    assert "error vs full detail on 2 runs max 3.00%" in check.title()

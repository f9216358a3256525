"""The microbenchmark registry, the templates and the generated docs/microbenchmarks.md stay in sync."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.micro import BENCHES, CONFIGS, Check, Result
from benchmarks.micro.launch import HERE, render
from benchmarks.micro.report import GROUP_TITLES, cell, table

DOC = Path(__file__).resolve().parents[2] / "docs" / "microbenchmarks.md"


def test_every_template_is_used_and_every_bench_has_one() -> None:
    """Each benchmarks/micro/*.ptx backs at least one benchmark; each benchmark names an existing template."""
    templates = {p.stem for p in HERE.glob("*.ptx")}
    used = {b.template for b in BENCHES}
    assert used <= templates
    assert templates <= used


def test_ids_unique_and_grouped() -> None:
    """Benchmark ids are unique and every group has a section title."""
    ids = [b.id for b in BENCHES]
    assert len(ids) == len(set(ids))
    assert {b.group for b in BENCHES} <= set(GROUP_TITLES)


def test_render_unrolls_the_chain() -> None:
    """The templates unroll chains in the PTX text."""
    ptx = render("alu_chain", op="add.s32 %r0, %r0, %r1;", n=5, nregs=8)
    assert ptx.count("add.s32 %r0, %r0, %r1;") == 6  # 5 in the body, 1 in the header comment


@pytest.mark.skipif(not DOC.exists(), reason="docs/microbenchmarks.md not generated yet")
def test_doc_lists_every_benchmark() -> None:
    """docs/microbenchmarks.md has a row for every benchmark (`python -m benchmarks.micro.report`)."""
    text = DOC.read_text()
    missing = [b.id for b in BENCHES if f"| `{b.id}` " not in text]
    assert not missing, f"regenerate docs/microbenchmarks.md: missing rows {missing}"


def test_cells() -> None:
    """Table cells show the value, or the mismatch, or the bandwidth fraction."""
    exact = Result("x", "v100", 4.0, 4.0, "cycles")
    bad = Result("x", "v100", 37.0, 400.0, "cycles", at_least=True)
    bw = Result("x", "v100", 580.0, 588.0, "B/cycle", rel_tol=0.1)
    chk = Result("x", "v100", 4.0, 4.0, "cycles", checks={"hits": Check(1, 0)})
    assert cell(exact) == "4"
    assert cell(bad) == "**37** < 400 ✗"
    assert cell(bw).startswith("580 / 588 (99%)")
    assert "✗ hits" in cell(chk)
    assert cell(Result("x", "v100", None, None, "cycles")) == "n/a"
    md = table([b for b in BENCHES if b.id == "lat.add.s32"], CONFIGS[:1], {("lat.add.s32", "v100"): exact})
    assert "| `lat.add.s32` (alu_chain.ptx, cycles) |" in md

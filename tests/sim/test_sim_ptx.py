"""The committed PTX of tests/sim/cuda: one per CUDA source, equal to a fresh compile where nvcc exists."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from simkit import CUDA_DIR, compile_ptx, cuda_sources, find_nvcc, nvcc_version, ptx_version


def test_every_source_has_its_committed_ptx():
    sources = {p.stem for p in cuda_sources()}
    ptx = {p.stem for p in CUDA_DIR.glob("*.ptx")}
    assert sources == ptx
    assert len(sources) >= 7


def test_committed_ptx_equals_a_fresh_compile(tmp_path: Path):
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not installed: the committed PTX is used as it is")
    version = nvcc_version(nvcc)
    committed = {ptx_version(p.read_text()) for p in CUDA_DIR.glob("*.ptx")}
    if committed != {version}:
        pytest.skip(f"the committed PTX is from nvcc {committed}, this nvcc is {version}")
    sources = cuda_sources()
    with ThreadPoolExecutor(max_workers=2) as pool:
        diags = list(pool.map(lambda s: compile_ptx(s, tmp_path / f"{s.stem}.ptx", nvcc), sources))
    assert {s.name: d for s, d in zip(sources, diags, strict=True) if d} == {}, "nvcc warnings"
    stale = [
        s.stem
        for s in sources
        if (tmp_path / f"{s.stem}.ptx").read_text() != s.with_suffix(".ptx").read_text()
    ]
    assert stale == [], "regenerate with: python tests/sim/simkit.py"

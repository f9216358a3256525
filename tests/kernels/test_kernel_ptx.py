"""The committed PTX: up to date with the CUDA sources, entries and opcodes as the simulator expects."""

from pathlib import Path

import pytest

from stcsim.kernels import GEMM_KERNELS, KERNEL_SET
from stcsim.kernels import build as ptx_build
from stcsim.kernels.paths import PTX_DIR
from stcsim.kernels.protocol import GeneratedKernel
from stcsim.kernels.ptx_info import PtxParam, entry_params, opcodes

DOC = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"
PTX_FILES = sorted(PTX_DIR.glob("*.ptx"))
GEMM_PARAM_TYPES = ["u64"] * 3 + ["u32"] * 6


def test_every_source_has_its_ptx():
    assert [p.stem for p in PTX_FILES] == [s.stem for s in ptx_build.sources()]


def test_committed_ptx_matches_a_fresh_compile():
    nvcc = ptx_build.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not installed")
    version = ptx_build.nvcc_version(nvcc)
    committed = {ptx_build.ptx_compiler_version(p.read_text()) for p in PTX_FILES}
    if committed != {version}:
        pytest.skip(f"committed PTX is from nvcc {committed}, this nvcc is {version}")
    assert ptx_build.stale_ptx(nvcc) == [], "run: python -m stcsim.kernels.build"


def test_sources_compile_without_warnings(tmp_path):
    nvcc = ptx_build.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not installed")
    diagnostics = ptx_build.build_all(tmp_path, nvcc)
    assert {path.name: text for path, text in diagnostics.items() if text} == {}


def test_build_without_nvcc_keeps_the_committed_ptx(monkeypatch, capsys):
    monkeypatch.setattr(ptx_build, "find_nvcc", lambda: None)
    assert ptx_build.main([]) == 0
    assert "nvcc not found" in capsys.readouterr().out


def test_every_entry_is_a_registered_kernel_and_dense_ones_have_the_gemm_signature():
    entries = {}
    for path in PTX_FILES:
        entries.update(entry_params(path.read_text()))
    assert set(entries) == {k.entry for k in KERNEL_SET if not isinstance(k, GeneratedKernel)}
    for kernel in GEMM_KERNELS:
        assert [p.ptx_type for p in entries[kernel.entry]] == GEMM_PARAM_TYPES, kernel.entry


def test_entry_params_parses_pointer_attributes():
    ptx = (
        ".visible .entry k(\n\t.param .u64 .ptr .global .align 16 k_param_0,\n"
        "\t.param .f32 k_param_1\n)\n{ ret; }"
    )
    assert entry_params(ptx) == {"k": [PtxParam("k_param_0", "u64"), PtxParam("k_param_1", "f32")]}
    with pytest.raises(ValueError, match="unsupported parameter"):
        entry_params(".entry k(.param .u32 .bogus k_param_0)")


def test_entry_params_reads_array_parameters():
    ptx = ".entry k(.param .align 64 .b8 tmap[128], .param .u64 out)"
    assert entry_params(ptx) == {"k": [PtxParam("tmap", "b8", 128), PtxParam("out", "u64")]}


def test_opcodes_strip_guards_labels_and_braces():
    ptx = (
        "$L1:\n\t@%p1 bra $L2; // x\n\t{  cvt.rn.f16.f32 %rs1, %f1;}\n"
        "\t.reg .b32 %r<4>;\n\tmov.u32 %r1, %tid.x;"
    )
    assert opcodes(ptx) == {"bra", "cvt.rn.f16.f32", "mov.u32"}


@pytest.mark.parametrize("path", PTX_FILES, ids=lambda p: p.name)
def test_ptx_avoids_what_the_simulator_does_not_need(path):
    ptx = path.read_text()
    found = opcodes(ptx)
    assert not {op for op in found if op.split(".")[0] in {"call", "tex", "suld", "sust", "vprintf"}}
    assert ".local" not in ptx, "fragment arrays spilled to local memory"
    assert not [op for op in found if ".local" in op or "generic" in op]


def test_docs_list_every_opcode():
    doc = DOC.read_text()
    found = set().union(*(opcodes(p.read_text()) for p in PTX_FILES))
    assert [op for op in sorted(found) if f"`{op}`" not in doc] == []

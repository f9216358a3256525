"""Reading a PTX file: bytes that are not ASCII (UTF-8 or not, comments included, as ptxas has it) are a
PtxError with file and line, not a decode error."""

from __future__ import annotations

import pytest

from stcsim.sim import Engine, PtxError

pytestmark = pytest.mark.sim_only

PTX = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k()
{
\tret; // NOTE
}
"""


def test_a_ptx_file_that_is_not_ascii_is_a_ptx_error(tmp_path):
    path = tmp_path / "latin1.ptx"
    path.write_bytes(PTX.replace("NOTE", "caf\xe9").encode("latin-1"))
    with pytest.raises(PtxError, match=r"latin1\.ptx:7: non-ASCII character \\xe9: `\\x09ret; // caf\\xe9`$"):
        Engine().load_ptx(path)
    path.write_bytes(PTX.replace("NOTE", "caf\xe9").encode("utf-8"))
    utf8 = r"latin1\.ptx:7: non-ASCII character \\xc3\\xa9: `\\x09ret; // caf\\xc3\\xa9`$"
    with pytest.raises(PtxError, match=utf8):
        Engine().load_ptx(path)
    path.write_bytes(PTX.replace("NOTE", "cafe").encode("ascii"))
    assert Engine().load_ptx(path) == ["k"]


def _store(value: str) -> str:
    """A module whose entry `put` stores `value` (an f32 literal) to its pointer argument."""
    return (".version 8.0\n.target sm_80\n.address_size 64\n\n.visible .entry put(.param .u64 p)\n{\n"
            "\t.reg .b64 %rd<2>;\n\t.reg .f32 %f<2>;\n\tld.param.u64 %rd1, [p];\n"
            f"\tmov.f32 %f1, {value};\n\tst.global.f32 [%rd1], %f1;\n\tret;\n}}\n")


def test_a_module_loaded_again_takes_its_entries_back():
    """Generated kernels (SparseRT) share one entry name: loading A, B, then A again must launch A."""
    import numpy as np

    eng = Engine()
    first, second = _store("0f3F800000"), _store("0f40000000")  # 1.0, 2.0
    out = eng.malloc(4)
    for text, expected in ((first, 1.0), (second, 2.0), (first, 1.0), (second, 2.0)):
        assert eng.load_ptx(text) == ["put"]
        eng.launch("put", (1, 1, 1), (1, 1, 1), [out], timing=False)
        assert eng.copy_from(out, (1,), np.float32)[0] == expected

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

"""Reading a PTX file: bytes that are not UTF-8 are a PtxError with file and line, not a decode error."""

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


def test_a_ptx_file_that_is_not_utf8_is_a_ptx_error(tmp_path):
    path = tmp_path / "latin1.ptx"
    path.write_bytes(PTX.replace("NOTE", "caf\xe9").encode("latin-1"))
    with pytest.raises(PtxError, match=r"latin1\.ptx:7: not UTF-8 text \(bytes e9\): `ret; // caf\\xe9`$"):
        Engine().load_ptx(path)
    path.write_bytes(PTX.replace("NOTE", "caf\xe9").encode("utf-8"))
    assert Engine().load_ptx(path) == ["k"]

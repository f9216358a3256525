"""The example extension (engine/ext/example): a new instruction with its own timing class and config
section, added without touching a core file."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from stcsim.sim import Engine, LaunchError, PtxError


def _ptx(n: int, dependent: bool) -> str:
    body = []
    for i in range(n):
        src = "%r1" if dependent else "%r2"
        body.append(f"  example.popc3.b32 %r{3 + (0 if dependent else i)}, {src}, %r2, %r2;"
                    if not dependent else "  example.popc3.b32 %r1, %r1, %r2, %r2;")
    return f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 x, .param .u32 y)
{{
  .reg .b32 %r<{n + 4}>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [x];
  ld.param.u32 %r2, [y];
  mov.u32 %r3, %tid.x;
  add.u32 %r1, %r1, %r3;
  mov.u64 %rd2, %clock64;
{chr(10).join(body)}
  mov.u64 %rd3, %clock64;
  sub.s64 %rd4, %rd3, %rd2;
  cvt.u64.u32 %rd5, %r3;
  shl.b64 %rd5, %rd5, 2;
  add.s64 %rd6, %rd1, %rd5;
  st.global.u32 [%rd6], %r1;
  st.global.u64 [%rd1+128], %rd4;
  ret;
}}
"""


def _popc(v: np.ndarray) -> np.ndarray:
    return np.array([bin(int(x)).count("1") for x in v.ravel()], np.uint32).reshape(v.shape)


def _run(config: str | None, n: int, dependent: bool, x: int, y: int):
    eng = Engine(config)
    eng.load_ptx(_ptx(n, dependent))
    buf = eng.malloc(256)
    stats = eng.launch("k", 1, 32, [buf, x, y])
    return eng.copy_from(buf, 32, np.uint32), int(eng.copy_from(buf + 128, 1, np.uint64)[0]), stats


@pytest.fixture
def enabled(tmp_path: Path) -> str:
    path = tmp_path / "example.yaml"
    path.write_text("example:\n  enabled: true\n")
    return f"v100+{path}"


def test_semantics_match_numpy(request: pytest.FixtureRequest) -> None:
    rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
    x, y = (int(v) for v in rng.integers(1, 2**32, 2))
    out, _, _ = _run(None, 1, True, x, y)
    r1 = (np.uint32(x) + np.arange(32, dtype=np.uint32)).astype(np.uint32)
    np.testing.assert_array_equal(out, _popc(r1) + 2 * _popc(np.array([y], np.uint32)))


def test_its_own_timing_class(enabled: str) -> None:
    """A dependent chain of n costs n x example.latency (6), a stream n x example.issue_interval (3)."""
    chain = {n: _run(enabled, n, True, 5, 7)[1] for n in (8, 16)}
    stream = {n: _run(enabled, n, False, 5, 7)[1] for n in (8, 16)}
    assert (chain[16] - chain[8]) / 8 == 6
    assert (stream[16] - stream[8]) / 8 == 3


def test_refused_where_not_enabled() -> None:
    with pytest.raises(LaunchError, match=r"example\.enabled: true"):
        _run("v100", 1, True, 5, 7)


def test_malformed_is_a_ptx_error() -> None:
    with pytest.raises(PtxError, match=r"takes exactly \.b32"):
        Engine().load_ptx(_ptx(1, True).replace("example.popc3.b32", "example.popc3.u64"))

"""The one statistics registry: unique names, every reported stat declared, docs/stats.md current."""

from __future__ import annotations

from pathlib import Path

from stcsim.sim import Engine
from stcsim.sim.engine import stat_info
from stcsim.tools.stats_docs import render

DOCS = Path(__file__).resolve().parents[2] / "docs" / "stats.md"
PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p) {
  .reg .b32 %r<4>; .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd1, %rd1, %rd2;
  add.s32 %r2, %r1, 7;
  st.global.u32 [%rd1], %r2;
  ret;
}
"""


def _launch(config: str | None) -> dict:
    eng = Engine(config)
    eng.load_ptx(PTX)
    buf = eng.malloc(4 * 64)
    return eng.launch("k", 2, 32, [buf])


def test_names_are_unique_and_kinds_known() -> None:
    names = [s.name for s in stat_info()]
    assert len(names) == len(set(names))
    assert {s.kind for s in stat_info()} <= {"counter", "value", "formula"}
    assert {"gpu_sim_cycle", "gpu_sim_insn", "gpu_ipc", "warp_insts"} <= set(names)
    assert "thread_insts" not in names  # the duplicate of gpu_sim_insn is gone


def test_a_timing_launch_reports_exactly_the_registry() -> None:
    stats = _launch("v100")
    python_side = {"config", "regs_source", "wgmma_serialized", "copy_group"}
    assert set(stats) - python_side == {s.name for s in stat_info() if s.group != "sampling"}
    assert stats["gpu_ipc"] == stats["gpu_sim_insn"] / stats["gpu_sim_cycle"]
    assert stats["gpu_sim_insn"] == 32 * stats["warp_insts"] == 32 * 2 * 7


def test_a_functional_launch_reports_launch_and_functional_groups() -> None:
    stats = _launch(None)
    expected = {s.name for s in stat_info() if s.group in ("launch", "functional")}
    assert set(stats) == expected
    assert stats["warp_insts"] == 2 * 7 and stats["gpu_sim_insn"] == 2 * 7 * 32


def test_regs_per_thread_is_what_occupancy_uses() -> None:
    """The stat is the register count the occupancy limit was computed with (at least 16, capped)."""
    stats = _launch("v100")
    assert stats["regs_per_thread"] >= 16


def test_docs_are_current() -> None:
    assert DOCS.read_text() == render(), "regenerate: python -m stcsim.tools.stats_docs > docs/stats.md"

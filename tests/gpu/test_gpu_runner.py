"""GpuEngine pieces that need no GPU: argument packing and the error when CuPy is missing."""

import importlib.util

import numpy as np
import pytest

from stcsim.gpu import GpuEngine, pack_args
from stcsim.kernels.ptx_info import PtxParam


def test_pack_args_uses_the_param_types():
    params = [PtxParam("p0", "u64"), PtxParam("p1", "s32"), PtxParam("p2", "f32"), PtxParam("p3", "u32")]
    packed = pack_args(params, [0x7F0000001000, -3, 0.5, 7])
    assert [type(x) for x in packed] == [np.uint64, np.int32, np.float32, np.uint32]
    assert [x.item() for x in packed] == [0x7F0000001000, -3, 0.5, 7]


@pytest.mark.parametrize(
    ("ptx_type", "value", "match"),
    [
        ("u32", -1, "in range"),
        ("s32", 2**31, "in range"),
        ("u64", 1.5, "in range"),
        ("pred", 1, "unsupported"),
    ],
)
def test_pack_args_rejects_bad_values(ptx_type, value, match):
    with pytest.raises(ValueError, match=match):
        pack_args([PtxParam("p", ptx_type)], [value])


def test_pack_args_passes_an_aggregate_by_value():
    """A `.b8 name[128]` parameter (a __grid_constant__ CUtensorMap) takes exactly its bytes, as np.void."""
    raw = np.random.default_rng(7).integers(1, 256, 128, dtype=np.uint8).tobytes()
    packed = pack_args([PtxParam("tmap", "b8", 128), PtxParam("out", "u64")], [raw, 4096])
    assert packed[0].dtype == np.dtype((np.void, 128)) and packed[0].tobytes() == raw
    with pytest.raises(ValueError, match="128-byte aggregate"):
        pack_args([PtxParam("tmap", "b8", 128)], [raw[:64]])
    with pytest.raises(ValueError, match="128-byte aggregate"):
        pack_args([PtxParam("tmap", "b8", 128)], [5])


def test_pack_args_checks_the_count():
    with pytest.raises(ValueError, match="takes 1 parameters, got 2"):
        pack_args([PtxParam("p", "u32")], [1, 2])


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_missing_cupy_gives_a_clear_error():
    with pytest.raises(RuntimeError, match="needs CuPy"):
        GpuEngine()


INCREMENT_PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry increment(.param .u64 p)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.u32 %r1, [%rd2];
  add.s32 %r2, %r1, 1;
  st.global.u32 [%rd2], %r2;
  ret;
}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("repeats,launches", [(0, 1), (3, 4)])
def test_repeats_zero_launches_exactly_once(repeats: int, launches: int):
    pytest.importorskip("cupy")
    eng = GpuEngine(repeats=repeats)
    eng.load_ptx(INCREMENT_PTX)
    addr = eng.malloc(4)
    start = np.array([7], np.uint32)
    eng.copy_to(addr, start)
    timing = eng.launch("increment", (1, 1, 1), (1, 1, 1), [addr])
    assert eng.copy_from(addr, (1,), np.uint32)[0] == 7 + launches
    assert timing["repeats"] == repeats and timing["gpu_time_ms"] > 0


@pytest.mark.gpu
def test_graph_mode_replays_the_captured_launches():
    """graph=True: one warm-up launch, then `repeats` launches captured once (not run) and the graph
    replayed once to warm up and GRAPH_REPLAYS times timed; the time is per launch."""
    pytest.importorskip("cupy")
    eng = GpuEngine(repeats=3, graph=True)
    eng.load_ptx(INCREMENT_PTX)
    addr = eng.malloc(4)
    eng.copy_to(addr, np.array([7], np.uint32))
    timing = eng.launch("increment", (1, 1, 1), (1, 1, 1), [addr])
    launches = 1 + 3 * (1 + GpuEngine.GRAPH_REPLAYS)
    assert eng.copy_from(addr, (1,), np.uint32)[0] == 7 + launches
    assert timing["graph"] == 1.0 and timing["repeats"] == 3
    assert 0 < timing["gpu_time_ms_min"] <= timing["gpu_time_ms"] < 0.05  # back to back: no host latency

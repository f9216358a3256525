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


def test_pack_args_checks_the_count():
    with pytest.raises(ValueError, match="takes 1 parameters, got 2"):
        pack_args([PtxParam("p", "u32")], [1, 2])


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_missing_cupy_gives_a_clear_error():
    with pytest.raises(RuntimeError, match="needs CuPy"):
        GpuEngine()

"""Hopper wgmma.mma_async (engine/ext/hopper) on the engine vs numpy: random f16/bf16 inputs, both A sources,
every swizzle, both majornesses, the scale and negate immediates, dense and 2:4 sparse; malformed
descriptors and a missing wgmma.fence are errors. With ``STCSIM_TEST_BACKEND=gpu`` the numeric tests run
the same PTX on an sm_90 GPU (CuPy)."""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest
from hopper_ptx import (
    Layout,
    a_rowcol,
    d_rowcol,
    default_layout,
    descriptor,
    mma_ptx,
    place,
)

from stcsim.sim import Engine, LaunchError, PtxError, SimFault

BACKEND = os.environ.get("STCSIM_TEST_BACKEND", "sim")
SWIZZLES = ["none", "32B", "64B", "128B"]
A_START, B_START = 0, 16384
SMEM = 49152


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def _engine(config: str | None = None):
    if BACKEND == "gpu":
        from stcsim.gpu.runner import GpuEngine

        return GpuEngine(repeats=0)  # one launch: the kernel accumulates into D in place
    return Engine(config)


def _as(dtype: str, x: np.ndarray) -> np.ndarray:
    """Values rounded to the input type (bf16 by truncating f32 mantissa bits after rounding to f16 range)."""
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float64)
    bits = x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32).astype(np.float64)


def _bits16(dtype: str, x: np.ndarray) -> np.ndarray:
    if dtype == "f16":
        return x.astype(np.float16).view(np.uint16)
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _place16(image: np.ndarray, start: int, lay: Layout, mat: np.ndarray, dtype: str) -> None:
    """`place` for either 16-bit type (the bit patterns go through an f16 view)."""
    place(image, start, lay, _bits16(dtype, mat).view(np.float16))


def _sparse_a(rng: np.random.Generator, dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 64 x 32 2:4 sparse A: its dense form, the 64 x 16 kept values and the 2-bit index of each."""
    idx = np.sort(np.stack([[rng.choice(4, 2, replace=False) for _ in range(8)] for _ in range(64)]), axis=2)
    vals = _as(dtype, rng.uniform(-2, 2, (64, 8, 2)))
    dense = np.zeros((64, 8, 4))
    np.put_along_axis(dense, idx, vals, axis=2)
    return dense.reshape(64, 32), vals.reshape(64, 16), idx.reshape(64, 16)


def _metadata(idx: np.ndarray, sel: int = 0) -> np.ndarray:
    """Per-thread metadata words: rows 16w + g and +8 of warp w come from lanes 4g + 2 sel + j
    (chunks 4j..4j+3)."""
    meta = np.zeros(128, np.uint32)
    for t in range(128):
        w, lane = divmod(t, 32)
        g, q = divmod(lane, 4)
        if q // 2 != sel:
            continue
        j = q % 2
        word = 0
        for half in range(2):
            row = 16 * w + g + 8 * half
            for c in range(4):
                ch = 4 * j + c
                nib = int(idx[row, 2 * ch]) | (int(idx[row, 2 * ch + 1]) << 2)
                word |= nib << (16 * half + 4 * c)
        meta[t] = word
    return meta


def run_wgmma(rng: np.random.Generator, n: int, dtype: str, a_regs: bool, swz_a: str, swz_b: str, ta: int,
              tb: int, sparse: bool = False, scale_d: int = 1, sa: int = 1, sb: int = 1,
              config: str | None = None):
    """One wgmma on random inputs; returns (engine D, numpy D)."""
    k = 32 if sparse else 16
    if sparse:
        a_dense, a_kept, idx = _sparse_a(rng, dtype)
    else:
        a_dense = a_kept = _as(dtype, rng.uniform(-2, 2, (64, 16)))
        idx = None
    b = _as(dtype, rng.uniform(-2, 2, (k, n)))
    d0 = rng.uniform(-4, 4, (64, n)).astype(np.float32)
    image = np.zeros(SMEM, np.uint8)
    lay_a = default_layout(bool(ta), swz_a, 64, 16)
    lay_b = default_layout(bool(tb), swz_b, n, k)
    if not a_regs:
        _place16(image, A_START, lay_a, a_kept, dtype)
    _place16(image, B_START, lay_b, b.T, dtype)
    rows, cols = d_rowcol(n)
    ar, ak = a_rowcol()
    a_bits = _bits16(dtype, a_kept)[ar, ak].astype(np.uint32)  # [thread, 8]
    aregs = (a_bits[:, 0::2] | (a_bits[:, 1::2] << 16)).astype(np.uint32)
    meta = _metadata(idx) if sparse else rng.integers(0, 2**32, 128, dtype=np.uint32)
    eng = _engine(config)
    eng.load_ptx(mma_ptx(n, dtype, a_regs, sparse, scale_d, sa, sb, ta, tb, SMEM))
    bufs = []
    for arr in (image.view(np.uint32), d0[rows, cols], aregs, meta):
        p = eng.malloc(arr.nbytes)
        eng.copy_to(p, np.ascontiguousarray(arr))
        bufs.append(p)
    stats = eng.launch("wg", (1, 1, 1), (128, 1, 1), [bufs[0], SMEM // 4, bufs[1], descriptor(A_START, lay_a),
                                      descriptor(B_START, lay_b), bufs[2], bufs[3]])
    out = eng.copy_from(bufs[1], (128, n // 2), np.float32)
    got = np.zeros((64, n), np.float32)
    got[rows, cols] = out
    want = sa * sb * (a_dense @ b) + (d0.astype(np.float64) if scale_d else 0.0)
    return got, want, stats


@pytest.mark.parametrize("swizzle", SWIZZLES)
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 1), (0, 1)])
def test_dense_descriptors_every_swizzle(rng: np.random.Generator, swizzle: str, ta: int, tb: int) -> None:
    n = int(rng.choice([8, 24, 64]))
    got, want, _ = run_wgmma(rng, n, "f16", False, swizzle, swizzle, ta, tb)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("n", [8, 16, 120, 256])
def test_dense_a_from_registers_every_width(rng: np.random.Generator, n: int) -> None:
    got, want, _ = run_wgmma(rng, n, "bf16", True, "none", "128B", 0, int(rng.integers(0, 2)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("scale_d,sa,sb", [(0, 1, 1), (1, -1, 1), (1, 1, -1), (0, -1, -1)])
def test_scale_and_negate_immediates(rng: np.random.Generator, scale_d: int, sa: int, sb: int) -> None:
    got, want, _ = run_wgmma(rng, 32, "f16", False, "64B", "32B", 0, 0, scale_d=scale_d, sa=sa, sb=sb)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("a_regs", [False, True])
@pytest.mark.parametrize("swizzle", ["none", "64B", "128B"])
def test_sparse_2_4(rng: np.random.Generator, a_regs: bool, swizzle: str) -> None:
    tb = int(rng.integers(0, 2))
    got, want, _ = run_wgmma(rng, 16, "f16", a_regs, swizzle, swizzle, 0, tb, sparse=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.sim_only
def test_malformed_descriptor_is_an_error(rng: np.random.Generator) -> None:
    eng = Engine()
    eng.load_ptx(mma_ptx(8, "f16", False, False, 1, 1, 1, 0, 0, SMEM))
    buf = eng.malloc(SMEM)
    lay = default_layout(False, "128B", 64, 16)
    bad = descriptor(A_START, lay) | (1 << 50)  # base offset 2 with a 1024-aligned start
    with pytest.raises(SimFault, match="malformed matrix descriptor for A: base offset 2"):
        eng.launch("wg", 1, 128, [buf, 16, buf, bad, descriptor(B_START, lay), buf, buf])
    reserved = descriptor(A_START, lay) | (1 << 47)
    with pytest.raises(SimFault, match="reserved bits"):
        eng.launch("wg", 1, 128, [buf, 16, buf, reserved, descriptor(B_START, lay), buf, buf])


@pytest.mark.sim_only
def test_missing_fence_is_an_error() -> None:
    eng = Engine()
    eng.load_ptx(mma_ptx(8, "f16", False, False, 1, 1, 1, 0, 0, SMEM, fence=False))
    buf = eng.malloc(SMEM)
    lay = default_layout(False, "none", 64, 16)
    with pytest.raises(SimFault, match="no wgmma.fence before the warp's first wgmma.mma_async"):
        eng.launch("wg", 1, 128, [buf, 16, buf, descriptor(A_START, lay), descriptor(B_START, lay), buf, buf])


@pytest.mark.sim_only
def test_incomplete_warpgroup_is_an_error() -> None:
    eng = Engine()
    eng.load_ptx(mma_ptx(8, "f16", False, False, 1, 1, 1, 0, 0, SMEM))
    buf = eng.malloc(SMEM)
    lay = default_layout(False, "none", 64, 16)
    with pytest.raises(SimFault, match="warpgroup 0 is incomplete"):
        eng.launch("wg", 1, 96, [buf, 16, buf, descriptor(A_START, lay), descriptor(B_START, lay), buf, buf])


@pytest.mark.sim_only
def test_other_configs_refuse_it(rng: np.random.Generator) -> None:
    with pytest.raises(LaunchError, match="hopper.enabled"):
        run_wgmma(rng, 8, "f16", False, "none", "none", 0, 0, config="a100")


@pytest.mark.sim_only
@pytest.mark.parametrize("target", ["sm_90", "sm_100a"])
def test_wgmma_needs_the_sm_90a_target(target: str) -> None:
    """As ptxas ("Instruction 'wgmma.fence' not supported on .target 'sm_90'"): only .target sm_90a."""
    text = mma_ptx(8, "f16", False, False, 1, 1, 1, 0, 0, SMEM).replace(".target sm_90a", f".target {target}")
    text = text.replace(".version 8.7", ".version 8.8")
    with pytest.raises(PtxError, match=r"'wgmma\..*' requires \.target sm_90a"):
        Engine().load_ptx(text)

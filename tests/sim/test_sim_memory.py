"""Memory instructions: global widths and vectors, shared (static, dynamic, generic), local, constant and
device variables, atomics under contention (tests/sim/cuda/memory.cu)."""

from __future__ import annotations

import numpy as np
import pytest
from simkit import BACKEND, assert_bits, kernels


@pytest.fixture(scope="module")
def k():
    return kernels("memory")


def test_narrow_loads_extend_and_narrow_stores_truncate(k, rng):
    n = 200
    s8 = rng.integers(-128, 128, size=n).astype(np.int8)
    u8 = rng.integers(0, 256, size=n).astype(np.uint8)
    s16 = rng.integers(-(2**15), 2**15, size=n).astype(np.int16)
    u16 = rng.integers(0, 2**16, size=n).astype(np.uint16)
    s8[:2], u8[:2], s16[:2], u16[:2] = [-128, -1], [255, 128], [-32768, -1], [65535, 32768]
    out, o8, o16 = np.zeros((n, 5), np.int32), np.zeros(n, np.uint8), np.zeros(n, np.int16)
    *_, got, g8, g16 = k.launch("narrow", 4, 64, s8, u8, s16, u16, out, o8, o16, np.int32(n))
    want = np.stack([s8, u8, s16, u16, s16[(np.arange(n) * 7) % n]], axis=1).astype(np.int32)
    assert_bits(got, want, "sign / zero extension")
    assert_bits(g8, (u8.astype(np.int64) + 5 * s8.astype(np.int64)).astype(np.uint8), "st.u8")
    assert_bits(g16, (3 * s16.astype(np.int64) - u16).astype(np.int16), "st.u16")


def test_vector_loads_and_stores(k, rng):
    n = 96
    a = rng.standard_normal((n, 4)).astype(np.float32)
    c = rng.integers(-(2**31), 2**31 - 1, size=(n, 2)).astype(np.int32)
    e = rng.standard_normal((n, 2))
    b, d, f = np.zeros((2 * n, 4), np.float32), np.zeros((n, 2), np.int32), np.zeros((n, 2))
    _, gb, _, gd, _, gf = k.launch("vectors", 2, 64, a, b, c, d, e, f, np.int32(n))
    assert_bits(gb[:n], np.stack([a[:, 3], a[:, 2] + np.float32(1), a[:, 1], a[:, 0]], axis=1), "v4.f32")
    assert_bits(gb[n:], np.roll(a, -1, axis=0), "ld.global.nc.v4.f32")
    assert_bits(gd, np.stack([c[:, 1], c[:, 0] + np.int32(1)], axis=1), "v2.u32")
    assert_bits(gf, np.stack([e[:, 1] * 2.0, e[:, 0]], axis=1), "v2.f64")


def test_static_shared_arrays(k, rng):
    grid, block = 3, 160
    a = rng.standard_normal(grid * block).astype(np.float32)
    d = rng.standard_normal(grid * block)
    out, dout = np.zeros_like(a), np.zeros_like(d)
    *_, got, gd = k.launch("shared_static", grid, block, a, d, out, dout)
    rev = np.arange(grid * block).reshape(grid, block)[:, ::-1].reshape(-1)
    assert_bits(got, a[rev] * np.float32(2), "float tile")
    assert_bits(gd, d[rev] + 1.0, "double tile")


@pytest.mark.parametrize("block", [64, 100])
def test_dynamic_shared_memory(k, rng, block):
    grid = 2
    a = rng.integers(-(2**20), 2**20, size=grid * block).astype(np.int32)
    out = np.zeros_like(a)
    *_, got = k.launch("shared_dynamic", grid, block, a, out, shared_bytes=2 * block * 4)
    want = np.zeros((grid, block), np.int64)
    t = np.arange(block)
    for b in range(grid):
        x = a[b * block : (b + 1) * block].astype(np.int64)
        second = (3 * x)[::-1]
        want[b] = x[(t + 5) % block] + second + (t % 32) * 1000
    assert_bits(got, want.reshape(-1).astype(np.int32), "dynamic shared")


def test_local_array_with_dynamic_indices(k, rng):
    n = 160
    x = rng.integers(0, 2**31, size=n).astype(np.int32)
    out = np.zeros((n, 2), np.int32)
    *_, got = k.launch("local_array", 3, 64, x, out, np.int32(n))
    want = np.zeros((n, 2), np.int64)
    for i, v in enumerate(x.tolist()):
        arr = [((v * (j + 1)) & 0xFFFFFFFF) ^ j for j in range(24)]
        arr[v & 15] += 5
        arr[(v >> 4) % 24] -= 3
        want[i, 0] = arr[(v >> 8) % 24] + arr[(v >> 12) % 24]
        want[i, 1] = sum(arr[j] for j in range(0, 24, (v & 3) + 1))
    assert_bits(got, (want & 0xFFFFFFFF).astype(np.uint32).view(np.int32), "local array")
    if BACKEND != "gpu":
        assert "ld.local" in k.path.read_text()


def test_constant_and_device_variables(k, rng):
    n = 200
    idx = rng.integers(0, 1000, size=n).astype(np.int32)
    out, dout = np.zeros((n, 3), np.float32), np.zeros(n)
    *_, got, gd = k.launch("variables", 4, 64, idx, out, dout, np.int32(n))
    table = np.array([1.5, -2.0, 3.25, 0.0, -0.5, 100.0, 7.0, -8.125], np.float32)
    dtable = np.array([0.5, 1.5, 2.5, 3.5], np.float32)
    small = np.array([-1, 2, -3], np.float32)
    big = 0x0123456789ABCDEF
    generic = np.where(idx & 8, table[idx & 3], dtable[idx & 3])
    assert_bits(got[:, 0], table[idx & 7] * np.float32(3) + generic, "__constant__ data, direct and generic")
    assert_bits(got[:, 1], dtable[idx & 3] + small[idx % 3], "__device__ float[] + __constant__ short[]")
    assert_bits(got[:, 2], np.array([(big >> (8 * (v & 7))) & 0xFF for v in idx.tolist()], np.float32), "u64")
    assert_bits(gd, 3.141592653589793 * idx.astype(np.float64), "__constant__ double")
    (state,) = k.launch("read_variables", 1, 256, np.zeros(257, np.int32))
    assert state[0] == n, "atomicAdd on a __device__ int, seen by the next launch"
    want = np.zeros(256, np.int64)
    want[np.arange(n) & 255] = idx + 1
    assert_bits(state[1:], want.astype(np.int32), "__device__ array written by one launch, read by the next")


def test_generic_pointers_into_shared_and_global(k, rng):
    grid, block = 2, 128
    n = grid * block
    g = rng.standard_normal(n).astype(np.float32)
    out, out2 = np.zeros(n, np.float32), np.full(n, -1.0, np.float32)
    *_, got, got2 = k.launch("generic_ptr", grid, block, g, out, out2, np.int32(n))
    want, want2 = np.zeros(n, np.float32), np.full(n, -1.0, np.float32)
    for b in range(grid):
        sh = g[b * block : (b + 1) * block] * np.float32(2)
        new = sh.copy()
        for t in range(block):
            i = b * block + t
            val = (sh[(t * 7) % block] if t & 1 else g[(i + 3) % n]) + np.float32(1)
            if t & 2:
                new[t] = val
            else:
                want2[i] = val
        want[b * block : (b + 1) * block] = new
    assert_bits(got, want, "values through generic pointers (shared side)")
    assert_bits(got2, want2, "values through generic pointers (global side)")


def test_atomics_under_contention(k, rng):
    grid, block, n = 3, 128, 350
    a = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    f = (rng.integers(-64, 64, size=n) / 8).astype(np.float32)  # sums exact in any order
    d = rng.integers(-(2**20), 2**20, size=n) / 16.0
    ctr = np.array([5, 0, 2**31 - 1, -(2**31), -1, 0, -1, -77, -(2**31), -(2**31)], np.int32)
    uctr = np.array([0xFFFFFFFF, 0, 0, 10, 0], np.uint32)
    fsum, dsum, qsum = np.array([0.5, 0.0], np.float32), np.array([0.25]), np.array([7], np.uint64)
    old, hist = np.full((n, 3), -5, np.int32), np.zeros(16, np.int32)
    res = k.launch("atomics", grid, block, a, f, d, ctr, uctr, fsum, dsum, qsum, old, hist, np.int32(n))
    *_, gctr, guctr, gfsum, gdsum, gqsum, gold, ghist = res
    a64, au = a.astype(np.int64), a.view(np.uint32).astype(np.int64)
    assert gctr[0] == np.int64(5 + a64.sum()).astype(np.int32)
    assert sorted(gold[:, 0].tolist()) == list(range(n)), "atomicAdd returns each old value once"
    assert gctr[1] == n
    assert gctr[2] == a.min() and gctr[3] == a.max()
    assert guctr[0] == au.min() and guctr[1] == au.max()
    assert guctr[2] == n % 38, "atomicInc wraps to 0 after the limit"
    assert guctr[3] == (10 - n) % 51, "atomicDec wraps to the limit at 0"
    assert gctr[4] == np.bitwise_xor.reduce(np.append(a, np.int32(-1)))
    assert gctr[5] == np.bitwise_or.reduce(a & 0x01010101)
    assert gctr[6] == np.bitwise_and.reduce(np.append(a | 0x10000000, np.int32(-1)))
    exch = sorted(gold[:, 1].tolist() + [int(gctr[7])])
    assert exch == sorted([-77, *range(n)]), "atomicExch hands every value on exactly once"
    assert gctr[8] == max(int(v) ^ 0x5555 for v in a.tolist()), "max from an atomicCAS loop"
    assert (gold[:, 2] >= -(2**31)).all()
    assert gfsum[0] == np.float32(0.5 + f.astype(np.float64).sum())
    assert gfsum[1] == np.float32((2 * f.astype(np.float64)).sum()), "red.global.add.f32"
    assert gdsum[0] == 0.25 + d.sum()
    assert gqsum[0] == 7 + au.sum()
    assert guctr[4] == (au & 0xFF).sum(), "red.global.add.u32"
    assert gctr[9] == a.max(), "red.global.max.s32"
    want_hist = np.bincount(a & 15, minlength=16) + 2 * np.bincount((a >> 4) & 15, minlength=16)
    assert_bits(ghist, want_hist.astype(np.int32), "shared-memory atom.add and red.add")


def test_half_atomics_and_f32_atomic_add_of_subnormals(k, rng):
    n = 200
    v = rng.integers(-8, 9, size=n).astype(np.float32)  # f16 sums of these stay exact
    h2, h = np.array([0x3C00_4000], np.uint32), np.array([0x3800], np.uint16)  # (2.0, 1.0) and 0.5
    f = np.zeros(2, np.float32)
    gh2, gh, gf, _ = k.launch("half_atomics", 4, 64, h2, h, f, v, np.int32(n))
    lo = np.float16(2.0 + v.astype(np.float64).sum())
    hi = np.float16(1.0 - 2.0 * v.astype(np.float64).sum())
    assert gh2[0] == int(lo.view(np.uint16)) | (int(hi.view(np.uint16)) << 16), "atom.add.noftz.f16x2"
    assert gh[0] == np.float16(0.5 + 0.5 * v.astype(np.float64).sum()).view(np.uint16), "atom.add.noftz.f16"
    assert gf[0] == 0, "atom.add.f32 flushes subnormal inputs and results to zero (PTX ISA; so does an H100)"


def test_one_warp_accessing_two_allocations(k, rng):
    # Lanes alternate between two source and two destination buffers: each warp instruction's accesses span
    # two allocations, which the engine's warp-level address path declines (it resolves one range inside one
    # allocation); lane by lane the values must be the same.
    n = 256
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x, y = np.full(n, 7.0, np.float32), np.full(n, -7.0, np.float32)
    *_, gx, gy = k.launch("two_buffers", 2, 128, a, b, x, y, np.int32(n))
    lane = np.arange(n) % 128
    src = np.where(lane & 1, a, b).astype(np.float64)
    val = (src * 3.0 + 1.0).astype(np.float32)  # nvcc fuses it: fma.rn.f32 (exact in double, then rounded)
    assert_bits(gx, np.where(lane & 2, val, x), "x (lanes with bit 1 set)")
    assert_bits(gy, np.where(lane & 2, y, val), "y (lanes with bit 1 clear)")

"""Integer instruction families against numpy / Python integers, bit for bit (tests/sim/cuda/int_ops.cu)."""

from __future__ import annotations

import numpy as np
import pytest
from simkit import assert_bits, kernels

N = 256
GRID, BLOCK = 3, 96  # 288 threads: the last 32 take the i >= n early exit

M32, M64 = (1 << 32) - 1, (1 << 64) - 1


@pytest.fixture(scope="module")
def k():
    return kernels("int_ops")


def wrap(v: int, nbits: int, signed: bool) -> int:
    """v modulo 2**nbits, as a signed or unsigned Python int."""
    v &= (1 << nbits) - 1
    return v - (1 << nbits) if signed and v >> (nbits - 1) else v


def tdiv(x: int, y: int) -> int:
    """C division: truncates toward zero."""
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def ints(rng: np.random.Generator, dtype: type, n: int = N, nonzero: bool = False) -> np.ndarray:
    """Random integers over the whole range of dtype, with the extremes and small values mixed in."""
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    small = rng.integers(-40 if info.min < 0 else 0, 40, size=n).astype(dtype)
    v = np.where(rng.random(n) < 0.25, small, v)
    v[:6] = np.array([info.min, info.max, 0, 1, info.max // 2, info.min + 1 if info.min else 2], dtype=dtype)
    if nonzero:
        v[v == 0] = 7
        if info.min < 0:
            v[v == -1] = -3
    return v


def per_thread(fn, *cols: np.ndarray, dtype: type) -> np.ndarray:
    """Applies fn to the Python ints of each row and collects the results as `dtype`."""
    rows = [fn(*(int(c[i]) for c in cols)) for i in range(len(cols[0]))]
    return np.array(rows, dtype=object).astype(dtype)


@pytest.mark.parametrize("signed", [True, False], ids=["s32", "u32"])
def test_int32_arithmetic(k, rng, signed):
    dt = np.int32 if signed else np.uint32
    a, b, c = ints(rng, dt), ints(rng, dt, nonzero=True), ints(rng, dt)
    name, width = ("int32_ops", 18) if signed else ("uint32_ops", 16)
    out = np.full((N, width), 0x5A5A5A5A, dtype=dt)
    *_, got = k.launch(name, GRID, BLOCK, a, b, c, out, np.int32(N))

    def w(v: int) -> int:
        return wrap(v, 32, signed)

    if signed:
        ref = {
            0: lambda x, y, z: w(x + y),
            1: lambda x, y, z: w(x - y),
            2: lambda x, y, z: w(x * y),
            3: lambda x, y, z: (x * y) >> 32,
            4: lambda x, y, z: w(x * y),
            5: lambda x, y, z: w((x * y) >> 32),
            6: lambda x, y, z: w(x * y + z),
            7: lambda x, y, z: w(tdiv(x, y)),
            8: lambda x, y, z: w(x - tdiv(x, y) * y),
            9: lambda x, y, z: min(x, y),
            10: lambda x, y, z: max(x, y),
            11: lambda x, y, z: w(abs(x)),
            12: lambda x, y, z: w(-x),
            13: lambda x, y, z: x >> (z & 31),
            14: lambda x, y, z: w(x << (z & 31)),
            15: lambda x, y, z: w(((x * y) >> 32) + z),
            16: lambda x, y, z: (x & y) | (~x ^ z),
            17: lambda x, y, z: w((x ^ z) + (y | z)),
        }
    else:
        ref = {
            0: lambda x, y, z: w(x + y),
            1: lambda x, y, z: w(x - y),
            2: lambda x, y, z: w(x * y),
            3: lambda x, y, z: (x * y) >> 32,
            4: lambda x, y, z: w(x * y),
            5: lambda x, y, z: (x * y) >> 32,
            6: lambda x, y, z: w(x * y + z),
            7: lambda x, y, z: x // y,
            8: lambda x, y, z: x % y,
            9: lambda x, y, z: min(x, y),
            10: lambda x, y, z: max(x, y),
            11: lambda x, y, z: x >> (z & 31),
            12: lambda x, y, z: w(x << (z & 31)),
            13: lambda x, y, z: x & y,
            14: lambda x, y, z: x | y,
            15: lambda x, y, z: w(~(x ^ z)),
        }
    for col, fn in ref.items():
        assert_bits(got[:, col], per_thread(fn, a, b, c, dtype=dt), f"{name} column {col}")


@pytest.mark.parametrize("signed", [True, False], ids=["s64", "u64"])
def test_int64_arithmetic(k, rng, signed):
    dt = np.int64 if signed else np.uint64
    a, b, c = ints(rng, dt), ints(rng, dt, nonzero=True), ints(rng, dt)
    # Divisors that fit 32 bits take nvcc's fast path (div.u32), the others div.s64 / div.u64.
    b[N // 2 :: 3] = ints(rng, np.int32 if signed else np.uint32, nonzero=True)[: len(b[N // 2 :: 3])]
    name, width = ("int64_ops", 14) if signed else ("uint64_ops", 12)
    out = np.zeros((N, width), dtype=dt)
    *_, got = k.launch(name, GRID, BLOCK, a, b, c, out, np.int32(N))

    def w(v: int) -> int:
        return wrap(v, 64, signed)

    common = {
        0: lambda x, y, z: w(x + y),
        1: lambda x, y, z: w(x - y),
        2: lambda x, y, z: w(x * y),
        3: lambda x, y, z: (x * y) >> 64,
        4: lambda x, y, z: w(x * y + z),
        5: lambda x, y, z: w(tdiv(x, y)),
        6: lambda x, y, z: w(x - tdiv(x, y) * y),
        7: lambda x, y, z: min(x, y),
        8: lambda x, y, z: max(x, y),
    }
    if signed:
        extra = {
            9: lambda x, y, z: w(abs(x)),
            10: lambda x, y, z: w(-x),
            11: lambda x, y, z: x >> (z & 63),
            12: lambda x, y, z: w(x << (z & 63)),
            13: lambda x, y, z: (x ^ y) & ~z,
        }
    else:
        extra = {
            9: lambda x, y, z: x >> (z & 63),
            10: lambda x, y, z: w(x << (z & 63)),
            11: lambda x, y, z: w(~x | (y & z)),
        }
    for col, fn in {**common, **extra}.items():
        assert_bits(got[:, col], per_thread(fn, a, b, c, dtype=dt), f"{name} column {col}")


def test_shifts_clamp_amounts_at_the_width(k, rng):
    a, b = ints(rng, np.uint32), ints(rng, np.uint64)
    s = rng.integers(0, 80, size=N).astype(np.uint32)
    s[:8] = [0, 15, 16, 17, 31, 32, 63, 64]
    s[8:12] = [65, 200, 0xFFFF, 0xFFFFFFFF]
    o32, o64 = np.zeros((N, 6), np.uint32), np.zeros((N, 3), np.uint64)
    *_, g32, g64 = k.launch("shifts", GRID, BLOCK, a, b, s, o32, o64, np.int32(N))

    def shl(x: int, n: int, bits: int) -> int:
        return 0 if n >= bits else (x << n) & ((1 << bits) - 1)

    def shr(x: int, n: int, bits: int, signed: bool) -> int:
        sx = wrap(x, bits, signed)
        return wrap(sx >> min(n, bits), bits, False) if signed else (0 if n >= bits else x >> n)

    h = a & 0xFFFF
    want32 = {
        0: lambda x, n: shl(x, n, 32),
        1: lambda x, n: shr(x, n, 32, False),
        2: lambda x, n: shr(x, n, 32, True),
    }
    for col, fn in want32.items():
        assert_bits(g32[:, col], per_thread(fn, a, s, dtype=np.uint32), f"shift32 column {col}")
    want16 = {
        3: lambda x, n: shl(x, n, 16),
        4: lambda x, n: shr(x, n, 16, False),
        5: lambda x, n: shr(x, n, 16, True),
    }
    for col, fn in want16.items():
        assert_bits(g32[:, col] & 0xFFFF, per_thread(fn, h, s, dtype=np.uint32), f"shift16 column {col}")
    want64 = {
        0: lambda x, n: shl(x, n, 64),
        1: lambda x, n: shr(x, n, 64, False),
        2: lambda x, n: shr(x, n, 64, True),
    }
    for col, fn in want64.items():
        assert_bits(g64[:, col], per_thread(fn, b, s, dtype=np.uint64), f"shift64 column {col}")


def lop3(a: int, b: int, c: int, lut: int) -> int:
    """lop3 by its definition: bit i of the result is lut[(a_i << 2) | (b_i << 1) | c_i]."""
    r = 0
    for i in range(32):
        idx = (((a >> i) & 1) << 2) | (((b >> i) & 1) << 1) | ((c >> i) & 1)
        r |= ((lut >> idx) & 1) << i
    return r


PRMT_MODES = {  # byte index of the source for result bytes 0..3, per selector value 0..3
    "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


def prmt(a: int, b: int, sel: int, mode: str | None = None) -> int:
    """prmt.b32 per the PTX ISA: bytes of {b, a} picked by the selector (msb of a nibble: sign replicate)."""
    x = a | (b << 32)

    def byte(i: int) -> int:
        return (x >> (8 * i)) & 0xFF

    r = 0
    for i in range(4):
        if mode is None:
            s = (sel >> (4 * i)) & 0xF
            v = byte(s & 7)
            if s & 8:
                v = 0xFF if v & 0x80 else 0
        else:
            v = byte(PRMT_MODES[mode][sel & 3][i])
        r |= v << (8 * i)
    return r


def funnel(lo: int, hi: int, n: int, left: bool, clamp: bool) -> int:
    n = min(n, 32) if clamp else n & 31
    x = lo | (hi << 32)
    return ((x << n) >> 32) & M32 if left else (x >> n) & M32


def brev(x: int, bits: int) -> int:
    return int(f"{x:0{bits}b}"[::-1], 2)


def clz(x: int, bits: int) -> int:
    return bits - x.bit_length()


def test_bit_manipulation(k, rng):
    a, b, c = ints(rng, np.uint32), ints(rng, np.uint32), ints(rng, np.uint32)
    c[: N // 2] = rng.integers(0, 70, size=N // 2)  # funnel-shift amounts around the clamp
    w = ints(rng, np.uint64)
    out = np.zeros((N, 28), np.uint32)
    *_, got = k.launch("bit_ops", GRID, BLOCK, a, b, c, w, out, np.int32(N))
    luts = [0x96, 0xE8, 0xCA, 0x1E, 0x80, 0xFE, 0x00, 0x6C]
    ref: dict[int, object] = {
        i: (lambda x, y, z, v, lut=lut: lop3(x, y, z, lut)) for i, lut in enumerate(luts)
    }
    ref[8] = lambda x, y, z, v: prmt(x, y, z & 0x7777)  # __byte_perm masks its selector
    for i, mode in enumerate(PRMT_MODES):
        ref[9 + i] = lambda x, y, z, v, mode=mode: prmt(x, y, z, mode)
    ref.update(
        {
            15: lambda x, y, z, v: funnel(x, y, z, True, False),
            16: lambda x, y, z, v: funnel(x, y, z, False, False),
            17: lambda x, y, z, v: funnel(x, y, z & 63, True, True),
            18: lambda x, y, z, v: funnel(x, y, z & 63, False, True),
            19: lambda x, y, z, v: brev(x, 32),
            20: lambda x, y, z, v: clz(x >> (z & 31), 32),
            21: lambda x, y, z, v: bin(x).count("1"),
            22: lambda x, y, z, v: brev(v, 64) & M32,
            23: lambda x, y, z, v: brev(v, 64) >> 32,
            24: lambda x, y, z, v: clz(v >> (z & 63), 64),
            25: lambda x, y, z, v: bin(v).count("1"),
            26: lambda x, y, z, v: prmt(x, y, z),
            27: lambda x, y, z, v: (x & y) | (x & z) | (y & z),
        }
    )
    for col, fn in ref.items():
        assert_bits(got[:, col], per_thread(fn, a, b, c, w, dtype=np.uint32), f"bit_ops column {col}")


def bfe(a: int, pos: int, length: int, bits: int, signed: bool) -> int:
    """bfe per the PTX ISA pseudo-code."""
    pos, length = pos & 0xFF, length & 0xFF
    msb = bits - 1
    sbit = ((a >> min(pos + length - 1, msb)) & 1) if signed and length else 0
    r = 0
    for i in range(bits):
        bit = (a >> (pos + i)) & 1 if i < length and pos + i <= msb else sbit
        r |= bit << i
    return r


def bfi(a: int, b: int, pos: int, length: int, bits: int) -> int:
    """bfi per the PTX ISA pseudo-code: insert the low `length` bits of a into b at `pos`."""
    pos, length = pos & 0xFF, length & 0xFF
    r = b
    i = 0
    while i < length and pos + i <= bits - 1:
        r = (r & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
        i += 1
    return r


def test_bfe_bfi(k, rng):
    a, b = ints(rng, np.uint32), ints(rng, np.uint32)
    wa, wb = ints(rng, np.uint64), ints(rng, np.uint64)
    pos = rng.integers(0, 72, size=N).astype(np.uint32)
    length = rng.integers(0, 72, size=N).astype(np.uint32)
    pos[:6], length[:6] = [0, 31, 32, 5, 0x105, 60], [0, 1, 4, 0x120, 3, 8]  # only bits 7:0 count
    o32, o64 = np.zeros((N, 3), np.uint32), np.zeros((N, 3), np.uint64)
    *_, g32, g64 = k.launch("bfe_bfi", GRID, BLOCK, a, b, wa, wb, pos, length, o32, o64, np.int32(N))
    cols = (a, b, wa, wb, pos, length)
    assert_bits(
        g32[:, 0], per_thread(lambda x, y, u, v, p, n: bfe(x, p, n, 32, False), *cols, dtype=np.uint32)
    )
    assert_bits(
        g32[:, 1], per_thread(lambda x, y, u, v, p, n: bfe(x, p, n, 32, True), *cols, dtype=np.uint32)
    )
    assert_bits(g32[:, 2], per_thread(lambda x, y, u, v, p, n: bfi(x, y, p, n, 32), *cols, dtype=np.uint32))
    assert_bits(
        g64[:, 0], per_thread(lambda x, y, u, v, p, n: bfe(u, p, n, 64, False), *cols, dtype=np.uint64)
    )
    assert_bits(
        g64[:, 1], per_thread(lambda x, y, u, v, p, n: bfe(u, p, n, 64, True), *cols, dtype=np.uint64)
    )
    assert_bits(g64[:, 2], per_thread(lambda x, y, u, v, p, n: bfi(u, v, p, n, 64), *cols, dtype=np.uint64))


def s16(v: int) -> int:
    return wrap(v, 16, True)


def test_16_bit_saturating_and_widening_integer_ops(k, rng):
    a, b, c = ints(rng, np.int32), ints(rng, np.int32), ints(rng, np.int32)
    a[6:12] = [300, -200, 127, -128, 65536 + 5, -70000]
    out = np.zeros((N, 16), np.uint64)
    *_, got = k.launch("narrow_ops", GRID, BLOCK, a, b, c, out, np.int32(N))
    m64 = (1 << 64) - 1
    ref = {
        0: lambda x, y, z: max(-(2**31), min(2**31 - 1, x + y)) & M32,
        1: lambda x, y, z: max(-(2**31), min(2**31 - 1, x - y)) & M32,
        2: lambda x, y, z: (x * y + 7 * z) & m64,
        3: lambda x, y, z: ((((x & M32) * (y & M32)) >> 32) + (z & M32)) & M32,
        4: lambda x, y, z: (s16(x) * s16(y)) & M32,
        5: lambda x, y, z: ((x & 0xFFFF) * (y & 0xFFFF)) & 0xFFFF,
        6: lambda x, y, z: max(-128, min(127, x)) & 0xFFFF,  # sign-extended into the 16-bit register
        7: lambda x, y, z: max(0, min(65535, x)),
        8: lambda x, y, z: wrap(x, 8, True) & 0xFFFF,
        9: lambda x, y, z: min(s16(x), s16(y)) & 0xFFFF,
        10: lambda x, y, z: abs(s16(x)) & 0xFFFF,
        11: lambda x, y, z: tdiv(s16(x), s16(y | 1)) & 0xFFFF,
        12: lambda x, y, z: (x & 0xFFFF) % ((y | 1) & 0xFFFF),
        13: lambda x, y, z: x & 0xFF,
        14: lambda x, y, z: (s16(x) * s16(y) + s16(z)) & 0xFFFF,
        15: lambda x, y, z: s16(x) & m64,
    }
    for col, fn in ref.items():
        assert_bits(got[:, col], per_thread(fn, a, b, c, dtype=np.uint64), f"narrow_ops column {col}")

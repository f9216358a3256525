"""Floating-point instruction families against exact references (tests/sim/cuda/float_ops.cu).

Correctly rounded operations are compared bit for bit with `fpref` (exact rational arithmetic rounded once,
in each rounding mode); only the approximate forms (sin/cos/ex2/lg2/rcp/sqrt .approx) get a tolerance.
"""

from __future__ import annotations

import math
from fractions import Fraction

import fpref
import numpy as np
import pytest
from simkit import assert_bits, kernels

N = 256
GRID, BLOCK = 4, 64

# The inputs hold infinities, NaN and extremes on purpose: numpy's overflow / invalid warnings are expected.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(scope="module")
def k():
    return kernels("float_ops")


def floats(rng: np.random.Generator, dtype: type = np.float32, n: int = N, span: int = 40) -> np.ndarray:
    """Random values over many binades with subnormals, signed zeros, infinities and NaN mixed in."""
    info = np.finfo(dtype)
    v = rng.standard_normal(n) * np.exp2(rng.integers(-span, span, size=n))
    pick = rng.random(n)
    v = np.where(pick < 0.1, rng.integers(-20, 20, size=n) / 4, v)  # exact quarters: ties and cancellation
    v = np.where(
        (pick >= 0.1) & (pick < 0.14), rng.standard_normal(n) * float(info.smallest_subnormal) * 64, v
    )
    v = v.astype(dtype)
    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, info.max, -info.max, info.smallest_subnormal], dtype
    )
    v[rng.choice(n, size=len(specials), replace=False)] = specials
    # NaNs with payloads, negative and signaling ones: the GPU answers all of them with its canonical NaN
    payloads = (
        [0x7FC01234, 0xFFC00001, 0x7F800001, 0xFF812345] if dtype == np.float32 else [0xFFF8000000000000]
    )
    payloads += [0x7FF0000000000001, 0x7FF8000000001234] if dtype == np.float64 else []
    idx = rng.choice(n, size=len(payloads), replace=False)
    v.view(np.uint32 if dtype == np.float32 else np.uint64)[idx] = payloads
    return v


def paired(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """A second operand: partly independent, partly equal to -x or x (cancellation, ties, equality)."""
    y = floats(rng, x.dtype, len(x))
    sel = rng.random(len(x))
    y = np.where(sel < 0.15, -x, y)
    y = np.where((sel >= 0.15) & (sel < 0.25), x, y)
    return y.astype(x.dtype)


def minnum(x: float, y: float, is_max: bool, nan_prop: bool = False) -> float:
    """PTX min/max: a NaN operand yields the other one (.NaN: yields NaN); -0 orders below +0."""
    if math.isnan(x) or math.isnan(y):
        return math.nan if nan_prop or (math.isnan(x) and math.isnan(y)) else (y if math.isnan(x) else x)
    if x == 0 and y == 0:
        neg, pos = (
            math.copysign(1, x) < 0 or math.copysign(1, y) < 0,
            math.copysign(1, x) > 0 or math.copysign(1, y) > 0,
        )
        return (0.0 if pos else -0.0) if is_max else (-0.0 if neg else 0.0)
    return max(x, y) if is_max else min(x, y)


def f64_nan(*operands: np.float64) -> int:
    """The NaN of an f64 result on an H100: the first NaN operand quieted (sign kept, also by neg / abs;
    fma looks at its addend first), else the default NaN 0xfff8000000000000."""
    for v in operands:
        if np.isnan(v):
            return int(np.array(v).view(np.uint64)) | (1 << 51)
    return 0xFFF8000000000000


def sat(x: float) -> float:
    """.sat: clamp to [+0, 1]; NaN and -0 give +0."""
    return 0.0 if math.isnan(x) or x <= 0 else min(x, 1.0)


def canon(a: np.ndarray) -> np.ndarray:
    """The array with every NaN replaced by the GPU's canonical NaN of its type (f32 / f16)."""
    a = np.array(a)
    nan_bits = {4: 0x7FFFFFFF, 2: 0x7FFF}[a.dtype.itemsize]
    a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint16)[np.isnan(a)] = nan_bits
    return a


def test_f32_arithmetic_in_every_rounding_mode(k, rng):
    a = floats(rng)
    b = paired(rng, a)
    c = paired(rng, a * b)
    out = np.zeros((N, 32), np.float32)
    *_, got = k.launch("f32_ops", GRID, BLOCK, a, b, c, out, np.int32(N))
    e = fpref.elementwise
    f = "f32"
    want = {
        0: e(fpref.add, f, a, b),
        1: e(lambda x, y, fmt: fpref.add(x, -y, fmt), f, a, b),
        2: e(fpref.mul, f, a, b),
        3: e(fpref.fma, f, a, b, c),
        4: e(fpref.div, f, a, b),
        5: e(lambda x, y, fmt: minnum(x, y, False), f, a, b),
        6: e(lambda x, y, fmt: minnum(x, y, True), f, a, b),
        7: e(lambda x, fmt: abs(x), f, a),
        8: e(lambda x, fmt: -x, f, a),
        9: e(fpref.sqrt, f, a),
        10: e(lambda x, fmt: fpref.div(1.0, x, fmt), f, a),
        11: (a.view(np.uint32) & 0x7FFFFFFF) | (b.view(np.uint32) & 0x80000000),  # bits, NaN payload kept
        28: e(lambda x, y, fmt: minnum(x, y, False, True), f, a, b),
        29: e(lambda x, y, fmt: minnum(x, y, True, True), f, a, b),
        31: e(lambda x, fmt: sat(x), f, a),
    }
    for i, mode in enumerate(["rz", "rm", "rp"]):
        want[12 + i] = e(fpref.add, f, a, b, mode=mode)
        want[15 + i] = e(fpref.mul, f, a, b, mode=mode)
        want[18 + i] = e(fpref.fma, f, a, b, c, mode=mode)
        want[21 + i] = e(fpref.div, f, a, b, mode=mode)
    want[24] = e(fpref.sqrt, f, a, mode="rz")
    want[25] = e(fpref.sqrt, f, a, mode="rp")
    want[26] = e(lambda x, fmt, mode: fpref.div(1.0, x, fmt, mode), f, a, mode="rm")
    want[27] = e(lambda x, fmt, mode: fpref.div(1.0, x, fmt, mode), f, a, mode="rp")
    want[30] = e(lambda x, y, fmt, mode: fpref.add(x, -y, fmt, mode), f, a, b, mode="rz")
    for col, w in sorted(want.items()):
        assert_bits(got[:, col], w.view(np.float32), f"f32_ops column {col}")


def test_f64_arithmetic_in_every_rounding_mode(k, rng):
    a = floats(rng, np.float64, span=300)
    b = paired(rng, a)
    b[np.isnan(a) & np.isnan(b)] = 1.5  # one NaN operand at most among a, b (their order is not pinned down)
    c = paired(rng, a * b)
    out = np.zeros((N, 24), np.float64)
    *_, got = k.launch("f64_ops", GRID, BLOCK, a, b, c, out, np.int32(N))
    e = fpref.elementwise
    f = "f64"
    want = {
        0: e(fpref.add, f, a, b),
        1: e(lambda x, y, fmt: fpref.add(x, -y, fmt), f, a, b),
        2: e(fpref.mul, f, a, b),
        3: e(fpref.fma, f, a, b, c),
        4: e(fpref.div, f, a, b),
        5: e(lambda x, y, fmt: minnum(x, y, False), f, a, b),
        6: e(lambda x, y, fmt: minnum(x, y, True), f, a, b),
        7: e(lambda x, fmt: abs(x), f, a),
        8: e(lambda x, fmt: -x, f, a),
        9: e(fpref.sqrt, f, a),
        10: e(lambda x, fmt: fpref.div(1.0, x, fmt), f, a),
        11: (a.view(np.uint64) & ~np.uint64(1 << 63)) | (b.view(np.uint64) & np.uint64(1 << 63)),
        12: e(fpref.add, f, a, b, mode="rz"),
        13: e(fpref.add, f, a, b, mode="rm"),
        14: e(fpref.add, f, a, b, mode="rp"),
        15: e(fpref.mul, f, a, b, mode="rz"),
        16: e(fpref.mul, f, a, b, mode="rm"),
        17: e(fpref.mul, f, a, b, mode="rp"),
        18: e(fpref.fma, f, a, b, c, mode="rz"),
        19: e(fpref.fma, f, a, b, c, mode="rm"),
        20: e(fpref.div, f, a, b, mode="rz"),
        21: e(fpref.div, f, a, b, mode="rp"),
        22: e(fpref.sqrt, f, a, mode="rm"),
        23: e(fpref.sqrt, f, a, mode="rp"),
    }
    unary = {7, 8, 9, 10, 22, 23}
    for col, w in sorted(want.items()):
        w = w.view(np.uint64).copy()
        ops = (a,) if col in unary else (c, a, b) if col in (3, 18, 19) else (a, b)
        for i in np.flatnonzero(np.isnan(w.view(np.float64))):
            if col not in (11,):
                w[i] = f64_nan(*(o[i] for o in ops))
        assert_bits(got[:, col], w.view(np.float64), f"f64_ops column {col}")


def test_f32_approximate_functions_within_tolerance(k, rng):
    a = rng.uniform(-np.pi, np.pi, N).astype(np.float32)
    a[np.abs(a) < 1e-3] = 0.5
    out = np.zeros((N, 8), np.float32)
    *_, got = k.launch("f32_approx", GRID, BLOCK, a, out, np.int32(N))
    x = a.astype(np.float64)
    np.testing.assert_allclose(got[:, 0], np.sin(x), rtol=0, atol=2e-6)
    np.testing.assert_allclose(got[:, 1], np.cos(x), rtol=0, atol=2e-6)
    np.testing.assert_allclose(got[:, 2], np.exp2(x), rtol=2e-6)
    np.testing.assert_allclose(got[:, 3], np.log2(np.abs(x)), rtol=0, atol=2e-6)
    np.testing.assert_allclose(got[:, 4], 1 / x, rtol=2e-6)
    np.testing.assert_allclose(got[:, 5], np.sqrt(np.abs(x)), rtol=2e-6)
    np.testing.assert_allclose(got[:, 6], 1 / np.sqrt(np.abs(x)), rtol=2e-6)
    np.testing.assert_allclose(got[:, 7], 1 / x, rtol=2e-6)


def to_int(v: float, mode: str, nbits: int, signed: bool, from_f64: bool = False) -> int:
    """cvt float -> integer: round in `mode`, saturate to the range. NaN gives 0 from f32 to 32 bits and,
    as on an H100, the integer with only the sign bit set from f64 or to 64 bits."""
    if math.isnan(v):
        return (1 << (nbits - 1)) if from_f64 or nbits == 64 else 0
    lo, hi = (-(1 << (nbits - 1)), (1 << (nbits - 1)) - 1) if signed else (0, (1 << nbits) - 1)
    if math.isinf(v):
        return hi if v > 0 else lo
    q = Fraction(v)
    r = {"rn": round(q), "rz": math.trunc(q), "rm": math.floor(q), "rp": math.ceil(q)}[mode]
    return min(max(r, lo), hi)


def conversion_inputs(rng: np.random.Generator) -> np.ndarray:
    """Values around every integer range's limits, halves (ties), negatives, NaN and infinities."""
    v = rng.standard_normal(N) * np.exp2(rng.integers(0, 70, size=N))
    v[: N // 4] = rng.integers(-40, 40, size=N // 4) / 2  # ties of rni
    edges = [2.0**31, -(2.0**31), 2.0**31 - 128, 2.0**32, 2.0**63, -(2.0**63), 2.0**64, 1e30, -1e30]
    edges += [np.nan, np.inf, -np.inf, -0.5, -0.0, 0.5, 1.5, 2.5, -2.5, 4294967040.0, 1.8446743e19]
    v[N // 4 : N // 4 + len(edges)] = edges
    return v


def test_cvt_float_to_integer_rounds_and_saturates(k, rng):
    d = conversion_inputs(rng)
    d[N // 2 :] += rng.uniform(-1, 1, N - N // 2)  # doubles with fractions f32 cannot hold
    a = d.astype(np.float32)
    s32, u32 = np.zeros((N, 8), np.int32), np.zeros((N, 6), np.uint32)
    s64, u64, fi = np.zeros((N, 6), np.int64), np.zeros((N, 6), np.uint64), np.zeros((N, 4), np.float32)
    *_, gs32, gu32, gs64, gu64, gfi = k.launch(
        "cvt_to_int", GRID, BLOCK, a, d, s32, u32, s64, u64, fi, np.int32(N)
    )

    def col(src: np.ndarray, mode: str, nbits: int, signed: bool, dt: type) -> np.ndarray:
        f64 = src.dtype == np.float64
        vals = [to_int(float(v), mode, nbits, signed, f64) & ((1 << nbits) - 1) for v in src]
        return np.array(vals, dtype=np.uint64).astype(np.uint32 if nbits == 32 else np.uint64).view(dt)

    for i, m in enumerate(fpref.MODES):
        assert_bits(gs32[:, i], col(a, m, 32, True, np.int32), f"f32->s32 {m}")
        assert_bits(gs32[:, 4 + i], col(d, m, 32, True, np.int32), f"f64->s32 {m}")
        assert_bits(gu32[:, i], col(a, m, 32, False, np.uint32), f"f32->u32 {m}")
        assert_bits(gs64[:, i], col(a, m, 64, True, np.int64), f"f32->s64 {m}")
        assert_bits(gu64[:, i], col(a, m, 64, False, np.uint64), f"f32->u64 {m}")
    for i, m in enumerate(["rn", "rz"]):
        assert_bits(gu32[:, 4 + i], col(d, m, 32, False, np.uint32), f"f64->u32 {m}")
        assert_bits(gs64[:, 4 + i], col(d, m, 64, True, np.int64), f"f64->s64 {m}")
        assert_bits(gu64[:, 4 + i], col(d, m, 64, False, np.uint64), f"f64->u64 {m}")
    with np.errstate(invalid="ignore"):
        for i, fn in enumerate([np.rint, np.trunc, np.floor, np.ceil]):
            assert_bits(gfi[:, i], canon(fn(a)), f"f32 integral rounding {fn.__name__}")


def test_cvt_integer_to_float_in_every_rounding_mode(k, rng):
    x = rng.integers(-(2**31), 2**31, size=N, dtype=np.int64).astype(np.int32)
    u = rng.integers(0, 2**32, size=N, dtype=np.uint64).astype(np.uint32)
    lo = rng.integers(-(2**63), 2**63 - 1, size=N, dtype=np.int64)
    q = rng.integers(0, 2**64 - 1, size=N, dtype=np.uint64)
    # Exact ties and values one past a tie: rounding them through a double first gets them wrong.
    lo[:6] = [
        2**60 + 2**36 + 1,
        2**60 + 2**36,
        -(2**60) - 2**36 - 1,
        2**62 + 2**38 + 2**10,
        -(2**63),
        2**53 + 1,
    ]
    q[:4] = [2**63 + 2**39 + 1, 2**64 - 1, 2**64 - 2**39, 2**53 + 1]
    x[:3] = [2**24 + 1, 2**25 + 2, -(2**31)]
    u[:2] = [2**32 - 1, 2**24 + 3]
    of, od = np.zeros((N, 16), np.float32), np.zeros((N, 8), np.float64)
    *_, gf, gd = k.launch("cvt_from_int", GRID, BLOCK, x, u, lo, q, of, od, np.int32(N))

    def col(src: np.ndarray, fmt: str, mode: str) -> np.ndarray:
        bits = [fpref.to_bits(fpref.round_exact(Fraction(int(v)), fmt, mode), fmt) for v in src]
        return np.array(bits, dtype=fpref.FORMATS[fmt][3]).view(np.float32 if fmt == "f32" else np.float64)

    for i, m in enumerate(fpref.MODES):
        assert_bits(gf[:, i], col(x, "f32", m), f"s32->f32 {m}")
        assert_bits(gf[:, 4 + i], col(u, "f32", m), f"u32->f32 {m}")
        assert_bits(gf[:, 8 + i], col(lo, "f32", m), f"s64->f32 {m}")
        assert_bits(gf[:, 12 + i], col(q, "f32", m), f"u64->f32 {m}")
    for c, (src, m) in enumerate(
        [(x, "rn"), (u, "rn"), (lo, "rn"), (lo, "rz"), (lo, "rm"), (q, "rn"), (q, "rp")]
    ):
        assert_bits(gd[:, c], col(src, "f64", m), f"int->f64 column {c} {m}")
    assert_bits(gd[:, 7], col(q, "f64", "rz"), "u64->f64 rz")


def from_f64(d: np.ndarray, want: np.ndarray, ebits: int, mbits: int) -> np.ndarray:
    """`want` with the NaN results of converting f64 NaNs as an H100 does: sign and the top of the payload
    kept, quieted (not the canonical NaN that f32 -> f16 gives)."""
    out = want.copy()
    for i in np.flatnonzero(np.isnan(d)):
        b = int(d[i : i + 1].view(np.uint64)[0])
        out[i] = (b >> 63 << (ebits + mbits)) | (((1 << ebits) - 1) << mbits) | (1 << (mbits - 1))
        out[i] |= (b & ((1 << 52) - 1)) >> (52 - mbits)
    return out


def half_inputs(rng: np.random.Generator) -> np.ndarray:
    """f32 values across the f16 range: subnormals, overflow, and exact f16 / bf16 rounding ties."""
    v = (rng.standard_normal(N) * np.exp2(rng.integers(-27, 18, size=N))).astype(np.float32)
    ties = [
        1 + 2.0**-11,
        1 + 3 * 2.0**-11,
        -(1 + 2.0**-11),
        2.0**-25,
        3 * 2.0**-25,
        65504.0,
        65519.0,
        65520.0,
    ]
    ties += [1e9, -1e9, 2.0**-24, 2.0**-26, 1 + 2.0**-8, 1 + 3 * 2.0**-8, np.nan, -np.inf, -0.0, 6.1e-5]
    v[: len(ties)] = ties
    v.view(np.uint32)[len(ties) : len(ties) + 2] = [0x7FC01234, 0xFF800001]  # NaNs with payloads
    return v


def test_cvt_between_f32_f64_and_f16_bf16(k, rng):
    a = half_inputs(rng)
    b = half_inputs(rng)[::-1].copy()
    d = a.astype(np.float64) * (1 + rng.uniform(-1e-6, 1e-6, N))  # doubles between the f32 values
    h = rng.integers(0, 1 << 16, size=N).astype(np.uint16)
    h[:8] = [0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x0001, 0x83FF, 0x8000, 0x3C00]
    o16, o32 = np.zeros((N, 8), np.uint16), np.zeros((N, 2), np.uint32)
    of, od = np.zeros((N, 4), np.float32), np.zeros((N, 2), np.float64)
    *_, g16, g32, gf, gd = k.launch("cvt_half", GRID, BLOCK, a, b, d, h, o16, o32, of, od, np.int32(N))

    def rounded(src: np.ndarray, fmt: str, mode: str = "rn") -> np.ndarray:
        e = fpref.elementwise

        def fn(v: float, f: str, mode: str) -> float:
            if math.isnan(v) or math.isinf(v):
                return v
            return fpref.round_exact(Fraction(v), f, mode, int(math.copysign(1, v)))

        return e(fn, fmt, src, mode=mode)

    def half_eq(got: np.ndarray, want: np.ndarray, what: str) -> None:
        assert_bits(got.astype(np.uint16), want.astype(np.uint16), what)  # NaN: the canonical 0x7fff

    for i, m in enumerate(fpref.MODES):
        half_eq(g16[:, i], rounded(a, "f16", m), f"f16 from f32 {m}")
    half_eq(g16[:, 4], from_f64(d, rounded(d, "f16"), 5, 10), "f16 from f64 (NaN: payload kept)")
    half_eq(g16[:, 5], rounded(a, "bf16"), "bf16 from f32")
    half_eq(g16[:, 6], rounded(d, "bf16"), "bf16 from f64")
    half_eq(g16[:, 7], rounded(a, "bf16", "rz"), "bf16 from f32 rz")
    packed_h = rounded(a, "f16").astype(np.uint32) | (rounded(b, "f16").astype(np.uint32) << 16)
    half_eq(g32[:, 0] & 0xFFFF, packed_h & 0xFFFF, "f16x2 low = first argument")
    half_eq(g32[:, 0] >> 16, packed_h >> 16, "f16x2 high = second argument")
    packed_b = rounded(a, "bf16").astype(np.uint32) | (rounded(b, "bf16").astype(np.uint32) << 16)
    half_eq(g32[:, 1] & 0xFFFF, packed_b & 0xFFFF, "bf16x2 low")
    half_eq(g32[:, 1] >> 16, packed_b >> 16, "bf16x2 high")
    assert_bits(gf[:, 0], canon(h.view(np.float16).astype(np.float32)), "f16 -> f32: canonical NaN")
    assert_bits(gf[:, 1], (h.astype(np.uint32) << 16).view(np.float32), "bf16 -> f32: a bit move, NaN kept")
    assert_bits(gf[:, 2], from_f64(d, rounded(d, "f32"), 8, 23).view(np.float32), "f64 -> f32 rn")
    assert_bits(gf[:, 3], from_f64(d, rounded(d, "f32", "rz"), 8, 23).view(np.float32), "f64 -> f32 rz")
    assert_bits(gd[:, 0], a.astype(np.float64), "f32 -> f64: exact, NaN payload kept")
    assert_bits(
        gd[:, 1], canon(h.view(np.float16).astype(np.float32)).astype(np.float64), "f16 -> f32 -> f64"
    )


def half_words(rng: np.random.Generator, fmt: str) -> np.ndarray:
    """Packed pairs of random f16 / bf16 values with some zeros, infinities, NaN and subnormals."""
    v = (rng.standard_normal(2 * N) * np.exp2(rng.integers(-6, 6, size=2 * N))).astype(np.float32)
    v[rng.choice(2 * N, 12, replace=False)] = [
        0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        3e-6,
        -5e-7,
        1,
        -1,
        2,
        0.5,
        7,
    ]
    if fmt == "f16":
        hv = v.astype(np.float16).view(np.uint16).astype(np.uint32)
    else:
        hv = np.array(
            [
                fpref.to_bits(fpref.round_exact(Fraction(float(x)), "bf16") if np.isfinite(x) else x, "bf16")
                for x in v
            ],
            dtype=np.uint32,
        )
    return hv[0::2] | (hv[1::2] << 16)


def test_packed_and_scalar_half_arithmetic(k, rng):
    a, b, c = half_words(rng, "f16"), half_words(rng, "f16"), half_words(rng, "f16")
    ba, bb, bc = half_words(rng, "bf16"), half_words(rng, "bf16"), half_words(rng, "bf16")
    # bf16 columns read the same words as bf16x2: give the kernel words whose halves are valid in both views
    mix = np.arange(N) % 2 == 1
    a, b, c = (np.where(mix, p, q).astype(np.uint32) for p, q in [(ba, a), (bb, b), (bc, c)])
    # bf16 fma traps: a * b is exactly a tie of bf16 that rounds down to even, and a tiny c of the same sign
    # must round it up; a sum first rounded to double (53 bits) would lose c and round down.
    for lane, (ma, mb) in zip(
        range(1, 16, 2), [(130, 160), (131, 192), (132, 144), (134, 224)] * 2, strict=False
    ):
        neg = 0x8000 if lane > 8 else 0
        a[lane] = (a[lane] & 0xFFFF0000) | neg | 0x3F80 | (ma - 128)
        b[lane] = (b[lane] & 0xFFFF0000) | 0x3F80 | (mb - 128)
        c[lane] = (c[lane] & 0xFFFF0000) | neg | (57 << 7)  # +-2^-70
    out = np.zeros((N, 15), np.uint32)
    *_, got = k.launch("half_ops", GRID, BLOCK, a, b, c, out, np.int32(N))

    def per_half(fn, fmt: str, *words: np.ndarray) -> np.ndarray:
        res = []
        for h in range(2):
            vals = [fpref.halves(w, fmt)[h] for w in words]
            res.append(fpref.elementwise(fn, fmt, *vals).astype(np.uint32))
        return res[0] | (res[1] << 16)

    def heq(got_w: np.ndarray, want_w: np.ndarray, fmt: str, what: str) -> None:
        assert_bits(got_w, want_w.astype(np.uint32), f"{what} ({fmt}; NaN: the canonical 0x7fff)")

    def sign_op(words: np.ndarray, flip: bool) -> np.ndarray:
        """neg / abs of f16 halves: a sign-bit operation, except that a NaN becomes 0x7fff."""
        out = np.zeros_like(words)
        for h in range(2):
            x = (words >> (16 * h)) & 0xFFFF
            r = x ^ 0x8000 if flip else x & 0x7FFF
            out |= np.where((x & 0x7FFF) > 0x7C00, 0x7FFF, r).astype(np.uint32) << (16 * h)
        return out

    f = "f16"
    heq(got[:, 0], per_half(fpref.add, f, a, b), f, "hadd2")
    heq(got[:, 1], per_half(lambda x, y, fmt: fpref.add(x, -y, fmt), f, a, b), f, "hsub2")
    heq(got[:, 2], per_half(fpref.mul, f, a, b), f, "hmul2")
    heq(got[:, 3], per_half(fpref.fma, f, a, b, c), f, "hfma2")
    assert_bits(got[:, 4], sign_op(a, True), "hneg2")
    assert_bits(got[:, 5], sign_op(a, False), "habs2")
    heq(got[:, 6], per_half(lambda x, y, fmt: minnum(x, y, False), f, a, b), f, "hmin2")
    heq(got[:, 7], per_half(lambda x, y, fmt: minnum(x, y, True), f, a, b), f, "hmax2")
    bf = "bf16"
    heq(got[:, 8], per_half(fpref.fma, bf, a, b, c), bf, "bf16 hfma2")
    heq(got[:, 9], per_half(fpref.mul, bf, a, b), bf, "bf16 hmul2")
    heq(got[:, 10], per_half(fpref.add, bf, a, b), bf, "bf16 hadd2")
    lo_a, hi_a = fpref.halves(a, f)
    lo_b, hi_b = fpref.halves(b, f)
    _, hi_c = fpref.halves(c, f)
    heq(got[:, 11], fpref.elementwise(fpref.fma, f, lo_a, lo_b, hi_c).astype(np.uint32), f, "hfma")
    heq(got[:, 12], fpref.elementwise(fpref.add, f, hi_a, lo_b).astype(np.uint32), f, "hadd")
    heq(got[:, 13], fpref.elementwise(fpref.mul, f, hi_a, hi_b).astype(np.uint32), f, "hmul")
    hexp = (got[:, 14] & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64)
    want = np.exp(lo_a)
    fin = np.isfinite(want) & (want < 60000) & (want > 1e-4)
    np.testing.assert_allclose(hexp[fin], want[fin], rtol=2e-3)  # approximate: ex2.approx, then f16
    assert np.isnan(hexp[np.isnan(lo_a)]).all()


CMPS = {
    "eq": lambda x, y: x == y,
    "ne": lambda x, y: x != y and not (math.isnan(x) or math.isnan(y)),
    "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y,
    "gt": lambda x, y: x > y,
    "ge": lambda x, y: x >= y,
    "equ": lambda x, y: not (x < y or x > y),
    "neu": lambda x, y: x != y,
    "ltu": lambda x, y: not x >= y,
    "leu": lambda x, y: not x > y,
    "gtu": lambda x, y: not x <= y,
    "geu": lambda x, y: not x < y,
    "num": lambda x, y: not (math.isnan(x) or math.isnan(y)),
    "nan": lambda x, y: math.isnan(x) or math.isnan(y),
}


def test_setp_set_selp_slct_with_nan(k, rng):
    a = floats(rng)
    b = paired(rng, a)
    b[:4], a[:4] = [0.0, -0.0, np.nan, 1.0], [-0.0, 0.0, np.nan, np.nan]
    c = floats(rng, np.float64, span=300)
    d = paired(rng, c)
    e = rng.integers(-(2**31), 2**31, size=N, dtype=np.int64).astype(np.int32)
    f = np.where(rng.random(N) < 0.2, e, rng.integers(-(2**31), 2**31, size=N, dtype=np.int64)).astype(
        np.int32
    )
    out, fout = np.zeros((N, 32), np.uint32), np.zeros((N, 4), np.float32)
    *_, got, gf = k.launch("compare", GRID, BLOCK, a, b, c, d, e, f, out, fout, np.int32(N))
    x, y = a.astype(np.float64), b.astype(np.float64)

    def col(fn, *cols: np.ndarray) -> np.ndarray:
        return np.array([int(bool(fn(*(float(v[i]) for v in cols)))) for i in range(N)], dtype=np.uint32)

    for i, (name, fn) in enumerate(CMPS.items()):
        assert_bits(got[:, i], col(fn, x, y), f"setp.{name}.f32")
    assert_bits(got[:, 14], col(lambda p, q: p > 0 and p < q, x, y), "setp.lt.and")
    assert_bits(got[:, 15], col(lambda p, q: CMPS["ltu"](p, q) != (not p > 0), x, y), "setp.ltu.xor with !p")
    assert_bits(got[:, 16], 2 * col(CMPS["le"], x, y) + (1 - col(CMPS["le"], x, y)), "setp p|q")
    assert_bits(got[:, 17], col(CMPS["gtu"], x, y) * np.uint32(0xFFFFFFFF), "set.gtu.u32.f32")
    assert_bits(gf[:, 0], col(CMPS["eq"], x, y).astype(np.float32), "set.eq.or.f32.f32")
    assert_bits(gf[:, 1], np.where(a < b, a, canon(b * np.float32(2))), "selp (NaN from the mul: canonical)")
    assert_bits(gf[:, 2], np.where(canon(a - b) >= 0, a, b), "slct.f32.f32 (selected operand unchanged)")
    hx, hy = a.astype(np.float16).astype(np.float64), b.astype(np.float16).astype(np.float64)
    assert_bits(got[:, 18], col(CMPS["lt"], hx, hy), "__hlt")
    assert_bits(got[:, 19], col(CMPS["geu"], hx, hy), "__hgeu")
    assert_bits(got[:, 20], col(lambda p: math.isnan(p), hx), "__hisnan")
    assert_bits(gf[:, 3], np.isnan(a).astype(np.float32), "x != x")
    for i, name in enumerate(["lt", "equ", "nan", "ge"]):
        assert_bits(got[:, 21 + i], col(CMPS[name], c, d), f"setp.{name}.f64")
    eu, fu = e.view(np.uint32), f.view(np.uint32)
    assert_bits(got[:, 25], (e < f).astype(np.uint32), "setp.lt.s32")
    assert_bits(got[:, 26], (e >= f).astype(np.uint32), "setp.ge.s32")
    assert_bits(got[:, 27], (eu < fu).astype(np.uint32), "setp.lo.u32")
    assert_bits(got[:, 28], (eu >= fu).astype(np.uint32), "setp.hs.u32")
    assert_bits(got[:, 29], (eu > fu).astype(np.uint32), "setp.hi.u32")
    assert_bits(got[:, 30], (eu != fu).astype(np.uint32), "setp.ne.b32")
    assert_bits(got[:, 31], np.where((e ^ f) >= 0, e, f).view(np.uint32), "slct.u32.s32")

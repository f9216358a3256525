"""Exact floating-point references: IEEE rounding of exact rational results in any of the four rounding
modes and any binary format (f16, bf16, f32, f64), with subnormals, signed zeros and overflow.

Every result is computed on `fractions.Fraction` values and rounded once, so the references do not depend on
the host's floating-point unit or on double rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

# name: (precision incl. the implicit bit, exponent of the smallest normal, largest exponent, bits dtype)
FORMATS: dict[str, tuple[int, int, int, type]] = {
    "f16": (11, -14, 15, np.uint16),
    "bf16": (8, -126, 127, np.uint16),
    "f32": (24, -126, 127, np.uint32),
    "f64": (53, -1022, 1023, np.uint64),
}
MODES = ("rn", "rz", "rm", "rp")


CANONICAL_NAN = {
    "f16": 0x7FFF,
    "bf16": 0x7FFF,
    "f32": 0x7FFFFFFF,
}  # what NVIDIA GPUs produce for any NaN result


def to_bits(v: float, fmt: str) -> int:
    """Bit pattern of a Python float that is exactly representable in `fmt` (inf included); a NaN gives the
    GPU's canonical NaN of f16 / bf16 / f32 (f64: numpy's NaN, compare those with NaN-agnostic checks)."""
    if math.isnan(v) and fmt in CANONICAL_NAN:
        return CANONICAL_NAN[fmt]
    if fmt == "f64":
        return int(np.array(v, np.float64).view(np.uint64))
    if fmt == "f32":
        return int(np.array(v, np.float32).view(np.uint32))
    if fmt == "f16":
        return int(np.array(v, np.float16).view(np.uint16))
    return int(np.array(v, np.float32).view(np.uint32)) >> 16  # bf16: the top half of the f32


def from_bits(b: int, fmt: str) -> float:
    """Value of a bit pattern of `fmt` as a Python float."""
    if fmt == "f64":
        return float(np.array(b, np.uint64).view(np.float64))
    if fmt == "f32":
        return float(np.array(b, np.uint32).view(np.float32))
    if fmt == "f16":
        return float(np.array(b, np.uint16).view(np.float16))
    return float(np.array(b << 16, np.uint32).view(np.float32))


def _floor_log2(q: Fraction) -> int:
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    elif Fraction(2) ** (e + 1) <= q:
        e += 1
    return e


def round_exact(q: Fraction, fmt: str, mode: str = "rn", zero_sign: int = 1) -> float:
    """The value of `fmt` that the exact rational q rounds to under `mode` ('rn', 'rz', 'rm', 'rp').

    Returns a Python float (±inf on overflow where the mode rounds there). A zero result takes the sign of q,
    or `zero_sign` (+1 / -1) when q itself is zero.
    """
    p, emin, emax, _ = FORMATS[fmt]
    if q == 0:
        return math.copysign(0.0, zero_sign)
    sign = -1 if q < 0 else 1
    a = abs(q)
    e = max(_floor_log2(a), emin)
    quantum = Fraction(2) ** (e - p + 1)
    m = a / quantum
    fl = math.floor(m)
    rem = m - fl
    up = {
        "rn": rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2 == 1),
        "rz": False,
        "rp": rem > 0 and sign > 0,
        "rm": rem > 0 and sign < 0,
    }[mode]
    mag = (fl + up) * quantum
    max_finite = (2**p - 1) * Fraction(2) ** (emax - p + 1)
    if mag > max_finite:
        to_inf = mode == "rn" or (mode == "rp" and sign > 0) or (mode == "rm" and sign < 0)
        return sign * math.inf if to_inf else sign * float(max_finite)
    return math.copysign(float(mag), sign)


def round_exact_value(x: float, fmt: str, mode: str = "rn") -> float:
    """A float (inf and NaN included) rounded to fmt under mode: the value of a conversion."""
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    return round_exact(Fraction(x), fmt, mode)


def _special(*xs: float) -> bool:
    return any(math.isinf(x) or math.isnan(x) for x in xs)


def add(x: float, y: float, fmt: str, mode: str = "rn") -> float:
    """x + y rounded to fmt."""
    if _special(x, y):
        return x + y
    q = Fraction(x) + Fraction(y)
    if q == 0:  # x = -y: +0 (-0 rounding down), except that zeros of one sign keep it
        same = x == 0 and y == 0 and math.copysign(1, x) == math.copysign(1, y)
        return math.copysign(0.0, math.copysign(1, x) if same else (-1 if mode == "rm" else 1))
    return round_exact(q, fmt, mode)


def mul(x: float, y: float, fmt: str, mode: str = "rn") -> float:
    """x * y rounded to fmt."""
    if _special(x, y):
        return x * y
    return round_exact(Fraction(x) * Fraction(y), fmt, mode, int(math.copysign(1, x) * math.copysign(1, y)))


def fma(x: float, y: float, z: float, fmt: str, mode: str = "rn") -> float:
    """x * y + z with a single rounding to fmt."""
    if _special(x, y, z):
        return x * y + z
    prod_sign = math.copysign(1, x) * math.copysign(1, y)
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    if exact == 0:
        if (x == 0 or y == 0) and z == 0 and prod_sign == math.copysign(1, z):
            zs = int(prod_sign)
        else:
            zs = -1 if mode == "rm" else 1
        return math.copysign(0.0, zs)
    return round_exact(exact, fmt, mode)


def div(x: float, y: float, fmt: str, mode: str = "rn") -> float:
    """x / y rounded to fmt (IEEE: x/0 is ±inf, 0/0 NaN)."""
    if _special(x, y) or y == 0:
        with np.errstate(all="ignore"):
            return float(np.float64(x) / np.float64(y))
    return round_exact(Fraction(x) / Fraction(y), fmt, mode, int(math.copysign(1, x) * math.copysign(1, y)))


def sqrt(x: float, fmt: str, mode: str = "rn") -> float:
    """The square root of x rounded to fmt (sqrt(-0) = -0, negative -> NaN)."""
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0 or math.isinf(x):
        return x
    q = Fraction(x)
    k = 1200  # fractional bits of the integer square root: far below any rounding boundary (f64 too)
    scaled = q * Fraction(2) ** (2 * k)
    n = scaled.numerator // scaled.denominator
    s = math.isqrt(n)
    r = Fraction(s, 2**k)
    if Fraction(s * s) != scaled:  # inexact: nudge strictly between s and s + 1 (a sticky bit)
        r += Fraction(1, 2 ** (k + 1))
    return round_exact(r, fmt, mode)


def elementwise(fn: Callable[..., float], fmt: str, *cols: np.ndarray, **kw: str) -> np.ndarray:
    """Applies a scalar reference to every element; returns the results as bit patterns of fmt."""
    dt = FORMATS[fmt][3]
    out = [to_bits(fn(*(float(c[i]) for c in cols), fmt, **kw), fmt) for i in range(len(cols[0]))]
    return np.array(out, dtype=dt)


def halves(words: np.ndarray, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """The low and high 16-bit values of packed f16x2 / bf16x2 words, as float64 arrays."""
    lo = (words & 0xFFFF).astype(np.uint32)
    hi = (words >> 16).astype(np.uint32)
    if fmt == "f16":
        return lo.astype(np.uint16).view(np.float16).astype(np.float64), hi.astype(np.uint16).view(
            np.float16
        ).astype(np.float64)
    return (lo << 16).view(np.float32).astype(np.float64), (hi << 16).view(np.float32).astype(np.float64)

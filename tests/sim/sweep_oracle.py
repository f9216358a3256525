"""What each instruction of the modifier sweep must compute, per the PTX ISA: random inputs per operand type
(with the edge cases the modifiers are about) and a reference for every form the engine accepts.

Values travel as raw bit patterns (Python ints). Correctly rounded forms are exact (`fpref`: rationals rounded
once); the approximate ones (.approx, div.full) get a tolerance, stated where they are checked. NaN results
of f32 / f16 / bf16 are the GPU's canonical NaNs; f64 NaN results are compared as "a NaN".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import fpref
import numpy as np
from modsweep import TYPE_BYTES, Combo, outputs, sources, uses_carry_in

FLOAT_FMT = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "f16x2": "f16", "bf16x2": "bf16"}
ROUNDING = ("rn", "rz", "rm", "rp")
INT_ROUNDING = {"rni": math.floor, "rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil}


def is_float(t: str) -> bool:
    """Floating-point instruction types (incl. packed pairs)."""
    return t in FLOAT_FMT


def is_signed(t: str) -> bool:
    """Signed integer types."""
    return t.startswith("s")


def nbits(t: str) -> int:
    """Width of a type in bits (pred: 1)."""
    return 1 if t == "pred" else 8 * TYPE_BYTES[t]


def to_signed(v: int, bits: int) -> int:
    """The two's complement value of the low `bits` of v."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


# ---- inputs ----------------------------------------------------------------------------------------------
def _float_bits(rng: np.random.Generator, fmt: str, n: int, moderate: bool) -> list[int]:
    p, emin, emax, _ = fpref.FORMATS[fmt]
    out = []
    for _ in range(n):
        r = rng.random()
        if moderate:  # normal values of moderate size, for the approximate functions
            e = int(rng.integers(max(emin, -20), min(emax, 20)))
        elif r < 0.15:  # subnormals
            e = emin - 1 - int(rng.integers(0, p - 1))
        elif r < 0.25:  # near overflow
            e = emax - int(rng.integers(0, 3))
        else:
            e = int(rng.integers(max(emin, -40), min(emax, 40)))
        m = int(rng.integers(1 << (p - 1), 1 << p))
        v = math.ldexp(m, e - p + 1) * (1 if rng.random() < 0.5 else -1)
        q = fpref.round_exact(Fraction(v), fmt, "rz")
        out.append(fpref.to_bits(q, fmt) if not math.isinf(q) else fpref.to_bits(math.copysign(1.5, q), fmt))
    specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5]
    idx = rng.choice(n, size=min(n, len(specials)), replace=False)
    for i, s in zip(idx, specials, strict=False):
        out[int(i)] = fpref.to_bits(s, fmt) if not math.isnan(s) else fpref.to_bits(math.nan, fmt)
    return out


def _int_bits(rng: np.random.Generator, bits: int, n: int) -> list[int]:
    edges = [0, 1, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1, 2, (1 << bits) - 2]
    vals = [int(x) for x in rng.integers(0, 1 << min(bits, 63), size=n, dtype=np.uint64)]
    if bits == 64:
        vals = [v | (int(rng.integers(0, 2)) << 63) for v in vals]
    small = rng.random(n) < 0.3
    vals = [
        int(rng.integers(-40, 40)) & ((1 << bits) - 1) if s else v for v, s in zip(vals, small, strict=True)
    ]
    for i, e in zip(rng.choice(n, size=len(edges), replace=False), edges, strict=True):
        vals[int(i)] = e
    return vals


def operand_bits(rng: np.random.Generator, c: Combo, i: int, n: int) -> list[int]:
    """Random bit patterns for operand i of combination c: floats over many binades with subnormals,
    signed zeros, infinities and NaN; integers with their edge values; shift amounts, bit positions and
    lengths around the width; predicates and carries 0 / 1."""
    t = c.operand_types()[i]
    if t == "pred":
        return [int(x) for x in rng.integers(0, 2, size=n)]
    if c.op in ("shl", "shr", "bfe", "bfi", "shf") and t == "u32" and i >= (3 if c.op == "bfi" else 2):
        return [int(x) for x in rng.integers(0, 72, size=n)]
    if c.op == "prmt" and i == 3:
        return [int(x) for x in rng.integers(0, 1 << 16, size=n)]
    if is_float(t):
        fmt = FLOAT_FMT[t]
        moderate = "approx" in c.mods or "full" in c.mods
        halves = 2 if t.endswith("x2") else 1
        cols = [_float_bits(rng, fmt, n, moderate) for _ in range(halves)]
        return [sum(col[k] << (16 * h) for h, col in enumerate(cols)) for k in range(n)]
    if t.endswith("x2"):
        lo, hi = _int_bits(rng, 16, n), _int_bits(rng, 16, n)
        return [a | (b << 16) for a, b in zip(lo, hi, strict=True)]
    return _int_bits(rng, nbits(t), n)


def inputs(rng: np.random.Generator, c: Combo, n: int) -> list[list[int]]:
    """Every input column of the numeric kernel of c: its source operands, then the carry flag in."""
    cols = [operand_bits(rng, c, i, n) for i in sources(c)]
    if uses_carry_in(c):
        cols.append([int(x) for x in rng.integers(0, 2, size=n)])
    return cols


# ---- expected values -------------------------------------------------------------------------------------
@dataclass
class Want:
    """One expected output value: its bits, or (for approximate forms) a check of the bits obtained."""

    bits: int | None = None
    check: Callable[[int], bool] | None = None
    nan64: bool = False  # an f64 NaN (any payload)

    def accepts(self, got: int) -> bool:
        """Whether the bits the instruction produced are right."""
        if self.check is not None:
            return self.check(got)
        if self.nan64:
            return math.isnan(fpref.from_bits(got, "f64"))
        return got == self.bits


def fval(bits: int, fmt: str) -> float:
    """The value of a float bit pattern."""
    return fpref.from_bits(bits, fmt)


def flush(x: float, fmt: str) -> float:
    """.ftz: a subnormal becomes a zero of its sign."""
    _, emin, _, _ = fpref.FORMATS[fmt]
    return math.copysign(0.0, x) if x != 0 and abs(x) < math.ldexp(1.0, emin) else x


def fbits(v: float, fmt: str) -> Want:
    """The expected bits of a float result (f64 NaN: any NaN)."""
    if math.isnan(v) and fmt == "f64":
        return Want(nan64=True)
    return Want(fpref.to_bits(v, fmt))


def saturate(x: float) -> float:
    """.sat: clamp to [+0, 1]; NaN and -0 give +0."""
    return 0.0 if math.isnan(x) or x <= 0 else min(x, 1.0)


def relu(x: float) -> float:
    """.relu of a float: negative values and -0 become +0, NaN stays NaN."""
    return 0.0 if not math.isnan(x) and math.copysign(1, x) < 0 else x


def _rounding(c: Combo) -> str:
    return next((m for m in c.mods if m in ROUNDING), "rn")


def _minmax(c: Combo, x: float, y: float) -> float:
    xs, ys = math.copysign(1, x) < 0, math.copysign(1, y) < 0
    if "abs" in c.mods:
        x, y = abs(x), abs(y)
    if math.isnan(x) or math.isnan(y):
        r = math.nan if "NaN" in c.mods or (math.isnan(x) and math.isnan(y)) else (y if math.isnan(x) else x)
    elif x == y == 0:
        neg = math.copysign(1, x) < 0, math.copysign(1, y) < 0
        r = -0.0 if (any(neg) if c.op == "min" else all(neg)) else 0.0
    else:
        r = min(x, y) if c.op == "min" else max(x, y)
    if "xorsign" in c.mods and not math.isnan(r):
        r = math.copysign(r, -1.0 if xs != ys else 1.0)
    return r


def _float_scalar(c: Combo, fmt: str, xs: list[float]) -> Want:
    """One element of a float arithmetic / min-max / exact special-function instruction."""
    ftz = "ftz" in c.mods and not (c.op == "rcp" and fmt == "f64")  # the H100 keeps f64 subnormals there
    if ftz:
        xs = [flush(x, fmt) for x in xs]
    mode, op = _rounding(c), c.op
    if op in ("abs", "neg"):
        r = abs(xs[0]) if op == "abs" else -xs[0]
    elif op in ("min", "max"):
        r = _minmax(c, xs[0], xs[1])
    elif op == "add":
        r = fpref.add(xs[0], xs[1], fmt, mode)
    elif op == "sub":
        r = fpref.add(xs[0], -xs[1], fmt, mode)
    elif op == "mul":
        r = fpref.mul(xs[0], xs[1], fmt, mode)
    elif op in ("fma", "mad"):
        r = fpref.fma(xs[0], xs[1], xs[2], fmt, mode)
    elif op == "div":
        r = fpref.div(xs[0], xs[1], fmt, mode)
    elif op == "rcp":
        r = fpref.div(1.0, xs[0], fmt, mode)
    elif op == "sqrt":
        r = fpref.sqrt(xs[0], fmt, mode)
    else:
        raise AssertionError(f"no reference for {c.name}")
    if ftz:
        r = flush(r, fmt)
    if "sat" in c.mods:
        r = saturate(r)
    if "relu" in c.mods:
        r = relu(r)
    return fbits(r, fmt)


APPROX = ("rcp", "sqrt", "rsqrt", "sin", "cos", "ex2", "lg2", "tanh", "div")


def _approx_fn(op: str) -> Callable[..., float]:
    def call(*xs: float) -> float:
        x = xs[0]
        with np.errstate(all="ignore"):
            return {
                "rcp": lambda: float(np.float64(1.0) / np.float64(x)),
                "sqrt": lambda: math.sqrt(x) if x >= 0 else math.nan,
                "rsqrt": lambda: float(np.float64(1.0) / np.sqrt(np.float64(x))) if x >= 0 else math.nan,
                "sin": lambda: math.sin(x) if math.isfinite(x) else math.nan,
                "cos": lambda: math.cos(x) if math.isfinite(x) else math.nan,
                "ex2": lambda: float(np.exp2(np.float64(x))),
                "lg2": lambda: float(np.log2(np.float64(x))) if x >= 0 or math.isnan(x) else math.nan,
                "tanh": lambda: math.tanh(x),
                "div": lambda: float(np.float64(x) / np.float64(xs[1])),
            }[op]()

    return call


# Tolerances of the approximate forms (relative, and absolute for sin / cos / lg2), per format: the PTX ISA's
# bounds with a margin (tanh.approx.f32 has 2^-10.987 relative error; f16 / bf16 forms are within 1-2 ulp).
_REL = {"f32": 2.0**-20, "f64": 2.0**-18, "f16": 2.0**-9, "bf16": 2.0**-6}
_ABS = {"sin": 2.0**-20, "cos": 2.0**-20, "lg2": 2.0**-21}


def _approx_want(c: Combo, fmt: str, xs: list[float]) -> Want:
    ftz = "ftz" in c.mods or (fmt == "bf16" and c.op == "ex2")
    if ftz:
        xs = [flush(x, fmt) for x in xs]
    exact = _approx_fn(c.op)(*xs)
    rel = 2.0**-10 if c.op == "tanh" and fmt == "f32" else _REL[fmt]
    atol = _ABS.get(c.op, 0.0) if fmt == "f32" else 0.0
    if c.op in ("sin", "cos") and abs(xs[0]) > 100 * math.pi:  # the ISA bounds the error within +-100 pi only
        atol = 2.0
    elif c.op in ("sin", "cos") and abs(xs[0]) > math.pi:  # fp32 range reduction: error grows with |x|
        atol += abs(xs[0]) * 2.0**-22
    tiny = math.ldexp(1.0, fpref.FORMATS[fmt][1])

    big = fpref.from_bits(fpref.to_bits(math.inf, fmt) - 1, fmt)  # the largest finite value

    def check(got: int) -> bool:
        g = fval(got, fmt)
        if math.isfinite(exact) and abs(exact) > big * (1 - rel):  # at the top of the range: inf is fine too
            return g == math.copysign(math.inf, exact) or (
                math.isfinite(g) and abs(g - exact) <= rel * abs(exact)
            )
        if math.isnan(exact) or math.isinf(exact):
            return (math.isnan(g) and math.isnan(exact)) or g == exact
        if abs(exact) < tiny * 2:  # around the subnormal range: any tiny value (or zero) of the right sign
            return abs(g) <= tiny * 2 and (g == 0 or math.copysign(1, g) == math.copysign(1, exact))
        return math.isfinite(g) and abs(g - exact) <= atol + rel * abs(exact)

    return Want(check=check)


def _half_lanes(c: Combo, cols: list[int], fn: Callable[[list[int]], Want]) -> Want:
    """A packed f16x2 / bf16x2 (or u16x2 / s16x2) result: fn on each 16-bit half."""
    parts = [fn([(v >> (16 * h)) & 0xFFFF for v in cols]) for h in range(2)]
    if all(p.check is None for p in parts):
        return Want(parts[0].bits | (parts[1].bits << 16))

    def check(got: int) -> bool:
        return all(p.accepts((got >> (16 * h)) & 0xFFFF) for h, p in enumerate(parts))

    return Want(check=check)


def float_arith(c: Combo, cols: list[int]) -> Want:
    """add sub mul mad fma div abs neg min max copysign rcp sqrt rsqrt sin cos ex2 lg2 tanh on floats."""
    t = c.type
    fmt = FLOAT_FMT[t]
    if t.endswith("x2"):
        return _half_lanes(c, cols, lambda halves: float_arith(Combo(c.op, c.mods, fmt), halves))
    if c.op == "copysign":
        sign = 1 << (nbits(t) - 1)
        return Want((cols[1] & ~sign) | (cols[0] & sign))
    xs = [fval(v, fmt) for v in cols]
    approx = "approx" in c.mods or "full" in c.mods or c.op in ("rsqrt", "sin", "cos", "ex2", "lg2", "tanh")
    if approx:
        if c.op == "div" and "approx" in c.mods and abs(xs[1]) > 2.0**126 and math.isfinite(xs[1]):
            return fbits(math.nan if math.isinf(xs[0]) else 0.0 * xs[0] * xs[1], fmt)  # 1/b flushes to 0
        return _approx_want(c, fmt, xs)
    return _float_scalar(c, fmt, xs)


def _int_arith(c: Combo, cols: list[int], cin: int) -> list[Want]:
    t, op, m = c.type, c.op, c.mods
    bits = nbits(t)
    mask = (1 << bits) - 1
    sign = is_signed(t)
    val = [to_signed(v, bits) if sign else v & mask for v in cols]
    a = val[0]
    b = val[1] if len(val) > 1 else 0
    carry = None
    if op in ("add", "sub", "addc", "subc"):
        # A subtraction adds the complement (a + ~b + CF, sub: CF = 1): subc subtracts 1 - CF, and the
        # carry out is NOT borrow, as on silicon.
        minus = op in ("sub", "subc")
        borrow = 1 - cin if op == "subc" else 0
        ua, ub = cols[0] & mask, cols[1] & mask
        exact = ua - ub - borrow if minus else ua + ub + cin
        carry = int(exact >= 0) if minus else exact >> bits
        r = (a - b - borrow if minus else a + b + cin) if "sat" in m else exact
        if "sat" in m:
            r = max(-(1 << 31), min((1 << 31) - 1, r))
    elif op in ("mul", "mad", "madc"):
        p = a * b
        if "wide" in m:
            r = p + (cols[2] if op != "mul" else 0)
            return [Want(r & ((1 << (2 * bits)) - 1))]
        part = (p >> bits) if "hi" in m else p & mask
        if op == "mul":
            r = part
        else:
            addend = cols[2] & mask
            if "sat" in m:
                r = max(-(1 << 31), min((1 << 31) - 1, part + to_signed(addend, 32) + cin))
            else:
                exact = (part & mask) + addend + cin
                carry, r = exact >> bits, exact
    elif op == "div":
        r = mask if b == 0 else (abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1)
    elif op == "rem":
        if b == 0:  # all ones at every width, as the H100 gives
            r = mask
        else:
            r = a - b * ((abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1))
    elif op in ("min", "max"):
        r = min(a, b) if op == "min" else max(a, b)
        if "relu" in m:
            r = max(r, 0)
    elif op == "abs":
        r = abs(a)
    elif op == "neg":
        r = -a
    else:
        raise AssertionError(f"no reference for {c.name}")
    out = [Want(r & mask)]
    if "cc" in m:
        out.append(Want(carry & 1))
    return out


def _packed_int(c: Combo, cols: list[int]) -> Want:
    sign = c.type.startswith("s")

    def half(v: list[int]) -> Want:
        a, b = (to_signed(x, 16) if sign else x for x in v)
        r = a + b if c.op == "add" else min(a, b) if c.op == "min" else max(a, b)
        return Want(max(r, 0) & 0xFFFF if "relu" in c.mods else r & 0xFFFF)

    return _half_lanes(c, cols, half)


def _bits_op(c: Combo, cols: list[int]) -> int:
    t, op = c.type, c.op
    bits = nbits(t)
    mask = (1 << bits) - 1
    a = cols[0] & mask
    if op in ("and", "or", "xor"):
        return {"and": a & cols[1], "or": a | cols[1], "xor": a ^ cols[1]}[op] & mask
    if op == "not":
        return ~a & mask
    if op == "cnot":
        return int(a == 0)
    if op == "shl":
        return (a << cols[1]) & mask if cols[1] < bits else 0
    if op == "shr":
        n = min(cols[1], bits)
        return (to_signed(a, bits) >> n) & mask if is_signed(t) else (a >> n if n < bits else 0)
    if op == "brev":
        return int(format(a, f"0{bits}b")[::-1], 2)
    if op == "clz":
        return bits - a.bit_length()
    if op == "popc":
        return bin(a).count("1")
    if op == "bfe":
        pos, length = cols[1] & 0xFF, cols[2] & 0xFF
        if length == 0:
            return 0
        field = [(a >> min(pos + i, bits - 1)) & 1 if pos + i < bits else None for i in range(bits)]
        top = (a >> min(pos + length - 1, bits - 1)) & 1 if is_signed(t) else 0
        out = 0
        for i in range(bits):
            bit = field[i] if i < length and field[i] is not None else top
            out |= bit << i
        return out
    if op == "bfi":
        b, pos, length = cols[1] & mask, cols[2] & 0xFF, cols[3] & 0xFF
        for i in range(length):
            if pos + i >= bits:
                break
            b = (b & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
        return b
    if op == "lop3":
        b, cc, out = cols[1], cols[2], 0
        for k in range(32):
            idx = (((a >> k) & 1) << 2) | (((b >> k) & 1) << 1) | ((cc >> k) & 1)
            out |= ((0x96 >> idx) & 1) << k
        return out
    if op == "prmt":
        return _prmt(a, cols[1] & 0xFFFFFFFF, cols[2], next((m for m in c.mods), None))
    if op == "shf":
        lo, hi, n = a, cols[1] & 0xFFFFFFFF, cols[2] & 0xFFFFFFFF
        n = min(n, 32) if "clamp" in c.mods else n & 31
        x = lo | (hi << 32)
        return ((x << n) >> 32) & 0xFFFFFFFF if "l" in c.mods else (x >> n) & 0xFFFFFFFF
    raise AssertionError(f"no reference for {c.name}")


_PRMT_MODES = {
    "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


def _prmt(a: int, b: int, sel: int, mode: str | None) -> int:
    x = a | (b << 32)

    def byte(i: int) -> int:
        return (x >> (8 * i)) & 0xFF

    out = 0
    for i in range(4):
        if mode is None:
            s = (sel >> (4 * i)) & 0xF
            v = byte(s & 7)
            out |= ((0xFF if v & 0x80 else 0) if s & 8 else v) << (8 * i)
        else:
            out |= byte(_PRMT_MODES[mode][sel & 3][i]) << (8 * i)
    return out


_CMP = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b,
    "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b,
}  # fmt: skip


def _compare(c: Combo, stype: str, x: int, y: int) -> bool:
    cmp = next(
        m for m in c.mods if m in _CMP or m in ("equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
    )
    if is_float(stype):
        fmt = FLOAT_FMT[stype]
        a, b = fval(x, fmt), fval(y, fmt)
        if "ftz" in c.mods:
            a, b = flush(a, fmt), flush(b, fmt)
        nan = math.isnan(a) or math.isnan(b)
        if cmp == "num":
            return not nan
        if cmp == "nan":
            return nan
        if cmp.endswith("u") and cmp != "lu":
            return nan or _CMP[cmp[:-1]](a, b)
        return not nan and _CMP[cmp](a, b)
    bits = nbits(stype)
    a, b = (to_signed(v, bits) if is_signed(stype) else v & ((1 << bits) - 1) for v in (x, y))
    return _CMP[cmp](a, b)


def _bool(c: Combo, t: bool, pred: int | None) -> bool:
    if pred is None:
        return t
    op = next(m for m in c.mods if m in ("and", "or", "xor"))
    return {"and": t and bool(pred), "or": t or bool(pred), "xor": t != bool(pred)}[op]


_SET_TRUE = {
    "f32": 0x3F800000, "f16": 0x3C00, "f16x2": 0x3C00, "bf16": 0x3F80, "bf16x2": 0x3F80, "u16": 0xFFFF,
    "s16": 0xFFFF,
}  # fmt: skip


def _setp_set(c: Combo, cols: list[int]) -> list[Want]:
    pred = cols[2] if len(cols) > 2 else None
    if c.op == "setp":
        stype = c.type
        if stype.endswith("x2"):
            r = [_compare(c, FLOAT_FMT[stype], (cols[0] >> (16 * h)) & 0xFFFF, (cols[1] >> (16 * h)) & 0xFFFF)
                 for h in range(2)]  # fmt: skip
            return [Want(int(_bool(c, r[0], pred))), Want(int(_bool(c, r[1], pred)))]
        return [Want(int(_bool(c, _compare(c, stype, cols[0], cols[1]), pred)))]
    dtype, stype = c.type.split(".")
    one = _SET_TRUE.get(dtype, 0xFFFFFFFF)
    if stype.endswith("x2"):
        out = 0
        for h in range(2):
            t = _compare(c, FLOAT_FMT[stype], (cols[0] >> (16 * h)) & 0xFFFF, (cols[1] >> (16 * h)) & 0xFFFF)
            out |= ((one & 0xFFFF) if _bool(c, t, pred) else 0) << (16 * h)
        return [Want(out)]
    return [Want(one if _bool(c, _compare(c, stype, cols[0], cols[1]), pred) else 0)]


def _slct(c: Combo, cols: list[int]) -> int:
    stype = c.type.split(".")[1]
    if stype == "f32":
        x = fval(cols[2], "f32")
        ge = (flush(x, "f32") if "ftz" in c.mods else x) >= 0
    else:
        ge = to_signed(cols[2], 32) >= 0
    return cols[0] if ge else cols[1]


# ---- cvt ------------------------------------------------------------------------------------------------
def _int_range(t: str) -> tuple[int, int]:
    bits = nbits(t)
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if is_signed(t) else (0, (1 << bits) - 1)


def _cvt(c: Combo, cols: list[int]) -> Want:
    d, s = c.type.split(".")
    m = c.mods
    if d.endswith("x2"):  # f32 pair -> f16x2 / bf16x2: a to the upper half, b to the lower
        fmt = FLOAT_FMT[d]
        halves = []
        for v in (cols[1], cols[0]):
            x = fval(v, "f32")
            if "relu" in m:
                x = relu(x)
            halves.append(
                fpref.to_bits(
                    math.nan if math.isnan(x) else fpref.round_exact_value(x, fmt, _rounding(c)), fmt
                )
            )
        return Want(halves[0] | (halves[1] << 16))
    dbits = nbits(d)
    if not is_float(s):
        v = to_signed(cols[0], nbits(s)) if is_signed(s) else cols[0] & ((1 << nbits(s)) - 1)
        if not is_float(d):
            lo, hi = _int_range(d)
            return Want((max(lo, min(hi, v)) if "sat" in m else v) & ((1 << dbits) - 1))
        r = fpref.round_exact(Fraction(v), d, _rounding(c)) if v else 0.0
        if "sat" in m:
            r = saturate(r)
        return fbits(r, d)
    x = fval(cols[0], s)
    if "ftz" in m and s == "f32":
        x = flush(x, "f32")
    if not is_float(d):
        if math.isnan(x):
            return Want((1 << (dbits - 1)) if s == "f64" or dbits == 64 else 0)
        fn = {"rn": "rni", "rz": "rzi", "rm": "rmi", "rp": "rpi"}
        mode = next((fn.get(k, k) for k in m if k in INT_ROUNDING or k in fn), "rzi")
        r = _round_integral(x, mode)
        lo, hi = _int_range(d)
        r = lo if r == -math.inf else hi if r == math.inf else max(lo, min(hi, int(r)))
        return Want(r & ((1 << dbits) - 1))
    mode = next((k for k in m if k in INT_ROUNDING), None)
    if mode:
        x = _round_integral(x, mode)
    if "sat" in m:
        x = saturate(x)
    if "relu" in m:
        x = relu(x)
    if math.isnan(x):
        if d == "f64":
            return Want(nan64=True)
        if s == "bf16" and d == "f32" and "relu" not in m and "ftz" not in m:  # H100: a bit shift keeps it
            return Want(cols[0] << 16)
        if s == "f64":
            b = cols[0]
            _, _, _, _ = fpref.FORMATS[d]
            p = fpref.FORMATS[d][0] - 1
            e = {"f16": 5, "bf16": 8, "f32": 8}[d]
            return Want(
                ((b >> 63) << (e + p))
                | (((1 << e) - 1) << p)
                | (1 << (p - 1))
                | ((b & ((1 << 52) - 1)) >> (52 - p))
            )
        return fbits(math.nan, d)
    r = fpref.round_exact_value(x, d, _rounding(c))
    if "ftz" in m and d == "f32":
        r = flush(r, "f32")
    return fbits(r, d)


def _round_integral(x: float, mode: str) -> float:
    if not math.isfinite(x) or x == 0:
        return x
    if mode == "rni":
        r = float(round(Fraction(x)))  # ties to even
    else:
        r = float(INT_ROUNDING[mode](x))
    return math.copysign(r, x) if r == 0 else r


# ---- dispatch --------------------------------------------------------------------------------------------
def expected(c: Combo, cols: list[int]) -> list[Want]:
    """The expected outputs of c (see modsweep.outputs) for one thread's input column values."""
    cin = cols[-1] if uses_carry_in(c) else 0
    srcs = cols[:-1] if uses_carry_in(c) else cols
    op, t = c.op, c.type
    if op == "mov":
        return [Want(srcs[0] & ((1 << nbits(t)) - 1) if t != "pred" else srcs[0])]
    if op == "cvt":
        return [_cvt(c, srcs)]
    if op in ("setp", "set"):
        return _setp_set(c, srcs)
    if op == "selp":
        return [Want(srcs[0] if srcs[2] else srcs[1])]
    if op == "slct":
        return [Want(_slct(c, srcs))]
    if op == "testp":
        x = fval(srcs[0], FLOAT_FMT[t])
        kind = next(k for k in c.mods)
        sub = x != 0 and math.isfinite(x) and abs(x) < math.ldexp(1.0, fpref.FORMATS[FLOAT_FMT[t]][1])
        r = {"finite": math.isfinite(x), "infinite": math.isinf(x), "number": not math.isnan(x),
             "notanumber": math.isnan(x), "normal": math.isfinite(x) and not sub,  # H100: zero is normal
             "subnormal": sub}[kind]  # fmt: skip
        return [Want(int(r))]
    if is_float(t):
        return [float_arith(c, srcs)]
    if t in ("u16x2", "s16x2"):
        return [_packed_int(c, srcs)]
    if op in ("add", "sub", "addc", "subc", "mul", "mad", "madc", "div", "rem", "min", "max", "abs", "neg"):
        return _int_arith(c, srcs, cin)
    return [Want(_bits_op(c, srcs))]


def output_widths(c: Combo) -> list[int]:
    """Bytes of each output slot that the kernel writes."""
    return [TYPE_BYTES[t] for t in outputs(c)]

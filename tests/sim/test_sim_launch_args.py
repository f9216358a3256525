"""Strict launch arguments: shapes, sizes and kernel argument values are checked, never read loosely.

Python and numpy scalars of every integer and float type are accepted and land in the parameter buffer
with the value they hold; anything else, or a value that does not fit its PTX parameter type, is a
LaunchError naming the argument.
"""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sim import Engine, LaunchError

pytestmark = pytest.mark.sim_only

# Stores every parameter into `out` (offsets of OUT_DTYPE), so the packed values can be read back.
PARAMS_PTX = """.version 8.0
.target sm_80
.address_size 64

.visible .entry params(.param .u64 out, .param .u32 a, .param .s32 b, .param .f32 c, .param .u16 g,
    .param .f64 d, .param .u64 e, .param .s64 f)
{
\t.reg .b16 %h<2>;
\t.reg .b32 %r<3>;
\t.reg .f32 %f<2>;
\t.reg .b64 %rd<5>;
\t.reg .f64 %fd<2>;
\tld.param.u64 %rd1, [out];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.param.u32 %r1, [a];
\tst.global.u32 [%rd2], %r1;
\tld.param.s32 %r2, [b];
\tst.global.u32 [%rd2+4], %r2;
\tld.param.f32 %f1, [c];
\tst.global.f32 [%rd2+8], %f1;
\tld.param.u16 %h1, [g];
\tst.global.u16 [%rd2+12], %h1;
\tld.param.f64 %fd1, [d];
\tst.global.f64 [%rd2+16], %fd1;
\tld.param.u64 %rd3, [e];
\tst.global.u64 [%rd2+24], %rd3;
\tld.param.s64 %rd4, [f];
\tst.global.u64 [%rd2+32], %rd4;
\tret;
}
"""
OUT_DTYPE = np.dtype(
    [("a", "<u4"), ("b", "<i4"), ("c", "<f4"), ("g", "<u2"), ("pad", "<u2"), ("d", "<f8"), ("e", "<u8"),
     ("f", "<i8")]
)
NAMES = ("a", "b", "c", "g", "d", "e", "f")


@pytest.fixture(scope="module")
def eng() -> Engine:
    e = Engine()
    e.load_ptx(PARAMS_PTX)
    return e


def run(eng: Engine, *args: object, **kwargs: object) -> np.void:
    """Launches `params` with `args` after the output pointer; returns the stored parameter values."""
    out = eng.malloc(OUT_DTYPE.itemsize)
    try:
        eng.launch("params", 1, 1, [out, *args], **kwargs)  # type: ignore[arg-type]
        return eng.copy_from(out, 1, OUT_DTYPE)[0]
    finally:
        eng.free(out)


def valid_args(rng: np.random.Generator) -> list[object]:
    """Random numpy scalars of every width for (a .u32, b .s32, c .f32, g .u16, d .f64, e .u64, f .s64)."""
    return [
        np.uint32(rng.integers(0, 2**32)),
        np.int32(rng.integers(-(2**31), 2**31)),
        np.float32(rng.standard_normal()),
        np.uint16(rng.integers(0, 2**16)),
        np.float64(rng.standard_normal() * 1e200),
        np.uint64(rng.integers(2**63, 2**64, dtype=np.uint64)),
        np.int64(rng.integers(-(2**63), 0)),
    ]


def test_numpy_scalars_of_every_type_are_packed_exactly(eng, rng):
    args = valid_args(rng)
    got = run(eng, *args)
    for name, want in zip(NAMES, args, strict=True):
        assert got[name] == want, name
        assert got[name].tobytes() == np.asarray(want, got[name].dtype).tobytes(), name


def test_python_scalars_and_narrower_numpy_types(eng, rng):
    small = int(rng.integers(1, 100))
    half = np.float16(rng.standard_normal())
    got = run(eng, np.int8(-small), np.uint8(small), half, np.bool_(True), np.float32(half),
              np.int16(small), True)
    assert got["a"] == 2**32 - small  # a negative value in the signed range of .u32 is its two's complement
    assert got["b"] == small
    assert got["c"] == np.float32(half)
    assert got["g"] == 1
    assert got["d"] == float(half)
    assert got["e"] == small
    assert got["f"] == 1
    value = float(rng.standard_normal())
    got = run(eng, small, -small, value, small, value, 2**64 - 1, -(2**63))
    assert (got["c"], got["d"]) == (np.float32(value), value)
    assert (got["e"], got["f"]) == (2**64 - 1, -(2**63))


def test_non_finite_floats_are_passed_as_given(eng):
    got = run(eng, 0, 0, np.float32("nan"), 0, float("-inf"), 0, 0)
    assert np.isnan(got["c"]) and got["d"] == -np.inf


@pytest.mark.parametrize(
    ("index", "value", "message"),
    [
        (3, 1e300, "argument 3 ('c', .f32) of kernel 'params': 1e+300 overflows .f32"),
        (3, -3.5e38, "argument 3 ('c', .f32) of kernel 'params': -3.5e+38 overflows .f32"),
        (3, 2**64, "argument 3 ('c', .f32) of kernel 'params': the integer 18446744073709551616 is outside"),
        (6, 2**64, "argument 6 ('e', .u64) of kernel 'params': 18446744073709551616 does not fit .u64"),
        (7, -(2**63) - 1, "argument 7 ('f', .s64) of kernel 'params': -9223372036854775809 does not fit"),
        (1, -(2**31) - 1, "argument 1 ('a', .u32) of kernel 'params': -2147483649 does not fit .u32"),
        (1, 2**32, "argument 1 ('a', .u32) of kernel 'params': 4294967296 does not fit .u32"),
        (4, np.int32(-40000), "argument 4 ('g', .u16) of kernel 'params': -40000 does not fit .u16"),
        (2, 2.0, "argument 2 ('b', .s32) of kernel 'params' must be an integer, got a float (2)"),
        (2, "7", "kernel argument 2 must be an integer or float scalar (Python or numpy), got '7' (str)"),
        (2, None, "kernel argument 2 must be an integer or float scalar (Python or numpy), got None"),
        (5, 1j, "kernel argument 5 must be an integer or float scalar (Python or numpy), got 1j (complex)"),
        (5, np.zeros(1), "kernel argument 5 must be an integer or float scalar"),
    ],
    ids=["f32-overflow", "f32-overflow-neg", "big-int-to-float", "u64-2^64", "s64-below", "u32-below-signed",
         "u32-2^32", "u16-negative", "float-to-int", "str", "none", "complex", "array"],
)
def test_values_that_do_not_fit_name_the_argument(eng, index, value, message):
    args: list[object] = [1, 2, 3.0, 4, 5.0, 6, 7]
    args[index - 1] = value
    with pytest.raises(LaunchError) as err:
        run(eng, *args)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"grid": "12"}, "grid must be an int or a tuple/list of 1 to 3 ints, got '12' (str)"),
        ({"block": "1"}, "block must be an int or a tuple/list of 1 to 3 ints, got '1' (str)"),
        ({"grid": (1, "2")}, "grid dimensions must be integers, got '2' (str)"),
        ({"grid": 2.0}, "grid must be an int or a tuple/list of 1 to 3 ints, got 2.0 (float)"),
        ({"block": (1, 1, 1, 1)}, "block must be an int or a tuple/list of 1 to 3 ints"),
        ({"block": True}, "block must be an int or a tuple/list of 1 to 3 ints, got True (bool)"),
        ({"grid": 2**63}, "grid dimensions must be positive and below 2^31, got 9223372036854775808"),
        ({"grid": (1, 2**31)}, "grid dimensions must be positive and below 2^31, got 2147483648"),
        ({"args": {"out": 0}}, "args must be a sequence (list or tuple) of kernel arguments, got {'out': 0}"),
        ({"args": "0123"}, "args must be a sequence (list or tuple) of kernel arguments, got '0123' (str)"),
        ({"args": {0, 1}}, "args must be a sequence (list or tuple) of kernel arguments"),
        ({"shared_bytes": 1.5}, "shared_bytes must be an integer, got 1.5 (float)"),
        ({"shared_bytes": -16}, "shared_bytes must be in [0, 9223372036854775807], got -16"),
        ({"regs_per_thread": 32.0}, "regs_per_thread must be an integer, got 32.0 (float)"),
        ({"regs_per_thread": 300}, "regs_per_thread must be in [0, 255], got 300"),
        ({"timing": "yes"}, "timing must be True or False, got 'yes'"),
        ({"kernel": b"params"}, "kernel must be a kernel name (str), got b'params'"),
        ({"max_cycles": -1}, "max_cycles must be in [0, 18446744073709551615], got -1"),
        ({"max_warp_insts": 1e6}, "max_warp_insts must be an integer, got 1000000.0 (float)"),
    ],
    ids=lambda v: "-".join(f"{k}={v[k]!r}" for k in v) if isinstance(v, dict) else None,
)
def test_loose_launch_requests_are_errors(eng, kwargs, message):
    request: dict[str, object] = {"kernel": "params", "grid": 1, "block": 1}
    request["args"] = [0, 1, 2, 3.0, 4, 5.0, 6, 7]
    request.update(kwargs)
    with pytest.raises(LaunchError) as err:
        eng.launch(**request)  # type: ignore[arg-type]
    assert message in str(err.value)


def test_numpy_integers_for_shapes_sizes_and_limits(eng, rng):
    args = valid_args(rng)
    out = eng.malloc(OUT_DTYPE.itemsize)
    eng.launch("params", np.int64(1), [np.uint8(1), np.int16(1)], (out, *args), np.uint32(0),
               regs_per_thread=np.int32(24), max_warp_insts=np.uint64(1000))
    assert eng.copy_from(out, np.int32(1), OUT_DTYPE)[0]["e"] == args[5]


@pytest.mark.parametrize(
    ("nbytes", "message"),
    [
        (2**62, "cannot allocate 4611686018427387904 bytes of device memory: more than the host's memory"),
        (2**64, "malloc size must be in [0, 9223372036854775807], got 18446744073709551616"),
        (-1, "malloc size must be in [0, 9223372036854775807], got -1"),
        (1.5, "malloc size must be an integer, got 1.5 (float)"),
    ],
    ids=["huge", "2^64", "negative", "float"],
)
def test_bad_allocation_sizes_are_launch_errors(nbytes, message):
    with pytest.raises(LaunchError) as err:
        Engine().malloc(nbytes)
    assert message in str(err.value)


def test_huge_copies_are_launch_errors(eng):
    addr = eng.malloc(64)
    with pytest.raises(LaunchError, match="copy_from of shape"):
        eng.copy_from(addr, (2**40, 2**40), np.float32)
    with pytest.raises(LaunchError, match=r"no host array of shape \(1099511627776, 256\)"):
        eng.copy_from(addr, (2**40, 256), np.float64)
    with pytest.raises(LaunchError, match="copy_from shape must be an integer"):
        eng.copy_from(addr, (4.0,), np.float32)
    with pytest.raises(LaunchError, match=r"outside every allocation \(nearest allocation .* runs 64 bytes"):
        eng.copy_from(addr, 32, np.float32)
    eng.free(addr)


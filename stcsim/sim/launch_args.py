"""Strict checks of what a caller hands to `Engine`: shapes, sizes, limits and kernel argument values.

Python and numpy integer and float scalars are accepted everywhere a number is meant (``np.int32``,
``np.uint64``, ``np.float32``, ``np.bool_``, ... as CuPy users pass them); anything else, such as a string
where a shape is meant, a float where a size is meant or a dict of arguments, is a `LaunchError`. Whether
a kernel argument's value fits its PTX parameter type is checked by the engine, which knows the types.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stcsim import _engine
from stcsim.sim.tensor_map import TensorMap

LaunchError = _engine.LaunchError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _describe(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def is_integer(value: object) -> bool:
    """True for Python and numpy integers; bools (Python or numpy) are not integers here."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def integer(value: object, what: str, lo: int = 0, hi: int = INT64_MAX) -> int:
    """`value` as a Python int in [lo, hi], or a LaunchError naming `what`."""
    if not is_integer(value):
        raise LaunchError(f"{what} must be an integer, got {_describe(value)}")
    result = int(value)  # type: ignore[call-overload]
    if not lo <= result <= hi:
        raise LaunchError(f"{what} must be in [{lo}, {hi}], got {result}")
    return result


def dims(value: object, what: str) -> list[int]:
    """A grid or block shape (an int or a tuple/list of 1 to 3 ints) as a list; the engine checks ranges."""
    if is_integer(value):
        value = [value]
    elif not isinstance(value, tuple | list) or not 1 <= len(value) <= 3:
        raise LaunchError(f"{what} must be an int or a tuple/list of 1 to 3 ints, got {_describe(value)}")
    shape = []
    for d in value:
        if not is_integer(d):
            raise LaunchError(f"{what} dimensions must be integers, got {_describe(d)}")
        if not INT64_MIN <= int(d) <= INT64_MAX:
            raise LaunchError(f"{what} dimensions must be positive and below 2^31, got {int(d)}")
        shape.append(int(d))
    return shape


def kernel_args(args: object) -> list[int | float | bytes]:
    """The kernel arguments as Python ints, floats and bytes; `args`: a sequence of integer or float scalars,
    and bytes or a TensorMap (its engine encoding) for aggregate (`.b8 name[N]`) parameters."""
    if not isinstance(args, Sequence) or isinstance(args, str | bytes | bytearray):
        raise LaunchError(f"args must be a sequence (list or tuple) of kernel arguments, "
                          f"got {_describe(args)}")
    return [_scalar(a, i) for i, a in enumerate(args)]


def _scalar(a: object, i: int) -> int | float | bytes:
    if isinstance(a, TensorMap):
        return a.encode()
    if isinstance(a, bytes | bytearray):
        return bytes(a)
    if isinstance(a, bool | np.bool_):
        return int(a)
    if isinstance(a, int | np.integer):
        return int(a)
    if isinstance(a, float | np.floating):
        return float(a)
    raise LaunchError(f"kernel argument {i} must be an integer or float scalar (Python or numpy), "
                      f"got {_describe(a)}")


def limit(value: object, what: str) -> int:
    """A watchdog limit: an integer >= 0 (0: no limit)."""
    return integer(value, what, 0, 2**64 - 1)


def sample_tolerance(value: object) -> float:
    """The sampling tolerance of a launch: a real number in [0, 1) (0: full detail)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise LaunchError(f"sample must be a number in [0, 1) (0: full detail), got {value!r}")
    tol = float(value)
    if not 0.0 <= tol < 1.0:
        raise LaunchError(f"sample must be in [0, 1) (0: full detail), got {tol}")
    return tol

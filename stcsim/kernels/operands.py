"""Operands: the named host arrays one kernel launch reads and writes, as `Kernel.prepare` lays them out.

Each array is already in the kernel's device layout and dtype (padded, compressed, metadata packed), so the
generic run only allocates one device buffer per array, copies it, passes the pointers to `Kernel.args` and
copies the outputs back.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from stcsim.kernels.problem import GemmProblem
from stcsim.sparsity.base import Pattern


@dataclass(frozen=True, eq=False)
class OperandArray:
    """One host array of a launch: its name (the key of its device pointer), its data and its direction.

    Outputs are copied to the device too (with their initial contents, e.g. NaN poison) and read back after
    the launch.
    """

    name: str
    data: np.ndarray
    output: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"operand name must be an identifier, got {self.name!r}")
        if not isinstance(self.data, np.ndarray) or self.data.size == 0:
            raise ValueError(f"operand {self.name}: need a non-empty numpy array, got {self.data!r}")
        object.__setattr__(self, "data", np.ascontiguousarray(self.data))

    @property
    def dtype(self) -> np.dtype:
        """The element type the kernel reads or writes."""
        return self.data.dtype


def poisoned(name: str, shape: tuple[int, ...], dtype: str | np.dtype) -> OperandArray:
    """An output array filled with NaN, so elements the kernel fails to write show up in every check."""
    return OperandArray(name, np.full(shape, np.nan, dtype=dtype), output=True)


@dataclass(frozen=True, eq=False)
class Operands:
    """Everything one launch needs on the device, made by `Kernel.prepare` from weights and activations.

    problem: the GEMM D (m x n) = W (m x k) @ X (k x n). pattern: the sparsity pattern W was pruned and
    encoded with. arrays: the host arrays in allocation order, names unique, at least one output.
    """

    problem: GemmProblem
    pattern: Pattern
    arrays: tuple[OperandArray, ...]

    def __post_init__(self) -> None:
        names = [a.name for a in self.arrays]
        if len(set(names)) != len(names):
            raise ValueError(f"operand names must be unique, got {names}")
        if not any(a.output for a in self.arrays):
            raise ValueError(f"operands {names} have no output array")

    def __getitem__(self, name: str) -> np.ndarray:
        """The host array called `name`; KeyError listing the names otherwise."""
        for a in self.arrays:
            if a.name == name:
                return a.data
        raise KeyError(f"no operand {name!r}; operands: {', '.join(self.names)}")

    def __iter__(self) -> Iterator[OperandArray]:
        return iter(self.arrays)

    @property
    def names(self) -> list[str]:
        """Operand names in allocation order."""
        return [a.name for a in self.arrays]

    @property
    def dtypes(self) -> dict[str, np.dtype]:
        """Element type of every operand, by name."""
        return {a.name: a.dtype for a in self.arrays}

    @property
    def outputs(self) -> tuple[OperandArray, ...]:
        """The arrays the kernel writes (read back after the launch)."""
        return tuple(a for a in self.arrays if a.output)

    @property
    def nbytes(self) -> int:
        """Device bytes of all operands together."""
        return sum(a.data.nbytes for a in self.arrays)


REFERENCE_ROWS = 2048
"""Rows of the left operand converted to float64 at a time by ``float64_product``."""


def float64_product(a: np.ndarray, bt: np.ndarray) -> np.ndarray:
    """``a @ bt.T`` in float64 (a: m x k, bt: n x k, any float dtypes), converting REFERENCE_ROWS rows of
    `a` at a time: a kernel reference without a float64 copy of a whole weight matrix (an LLM head of
    32000 x 4096 is 1 GiB of float64, allocated and faulted in for one matrix-vector product)."""
    b64 = np.asarray(bt, dtype=np.float64).T
    out = np.empty((a.shape[0], bt.shape[0]), dtype=np.float64)
    for start in range(0, a.shape[0], REFERENCE_ROWS):
        rows = slice(start, start + REFERENCE_ROWS)
        np.matmul(np.asarray(a[rows], dtype=np.float64), b64, out=out[rows])
    return out


UNIFORM_BLOCK = 1 << 20
"""Elements drawn in float64 at a time by ``uniform_float32``."""


def uniform_float32(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """``rng.uniform(-1, 1, shape).astype(np.float32)``, bit for bit (the generator's stream is consumed in
    the same order), drawn UNIFORM_BLOCK elements at a time: no float64 copy of the whole array, whose
    first touch costs more than the draw on a host that zeroes fresh pages slowly."""
    out = np.empty(shape, dtype=np.float32)
    flat = out.reshape(-1)
    for start in range(0, flat.size, UNIFORM_BLOCK):
        stop = min(flat.size, start + UNIFORM_BLOCK)
        flat[start:stop] = rng.uniform(-1.0, 1.0, stop - start)
    return out

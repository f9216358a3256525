"""The common interface every sparsity pattern implements.

Conventions (all patterns):

* The weight matrix ``W`` is ``M x K`` with ``K`` the reduction dimension: the GEMM is ``D = W @ X``.
  Each pattern module states how its pruning unit is oriented relative to this.
* ``prune(W, sparsity) -> mask``: a boolean ``M x K`` mask, ``True`` = kept. ``sparsity`` is the target
  fraction of *pruned* elements and must lie in ``[0, 1)``.
* ``encode(W, mask) -> SparseFormat``: the pattern's storage format of ``W * mask``. Values are stored in
  the dtype of ``W`` so that ``decode(encode(W, mask)) == W * mask`` holds bit for bit.
* ``decode(fmt) -> ndarray``: the dense ``M x K`` matrix in the original shape (padding removed).
* ``fmt.nbytes(value_bytes=2)``: storage size in bytes *including all metadata*. It counts every value as
  ``value_bytes`` bytes (default 2 = fp16, whatever dtype the arrays are held in); each format's docstring
  states the bit width of each index/metadata array it counts. Bit-packed arrays are rounded up to
  whole bytes once per array.
"""

from __future__ import annotations

import dataclasses
import enum
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import ClassVar

import numpy as np

FP16_BYTES = 2


def bits_to_bytes(bits: int) -> int:
    """Return the number of whole bytes needed to hold ``bits`` bits."""
    return -(-int(bits) // 8)


def index_bits(extent: int) -> int:
    """Return the bits needed to address ``extent`` positions, i.e. ``ceil(log2(extent))`` (0 for 1)."""
    if extent < 1:
        raise ValueError(f"extent must be >= 1, got {extent}")
    return int(extent - 1).bit_length()


def ranges(counts: np.ndarray) -> np.ndarray:
    """``0 .. n-1`` for each ``n`` of `counts`, concatenated (each element's place in its group, for groups
    laid out one after another)."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)


def run_ranks(keys: np.ndarray) -> np.ndarray:
    """Each element's place in its run of equal consecutive `keys`."""
    keys = np.asarray(keys)
    if not keys.size:
        return np.zeros(0, dtype=np.int64)
    begins = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    return ranges(np.diff(np.append(begins, keys.size)))


def check_sparsity(sparsity: float) -> float:
    """Validate a target sparsity: it must be a real number in ``[0, 1)``."""
    value = float(sparsity)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"sparsity must be in [0, 1) (fraction of pruned weights), got {sparsity!r}")
    return value


def check_weights(weights: np.ndarray) -> np.ndarray:
    """Validate that ``weights`` is a 2-D floating-point matrix with no empty dimension."""
    arr = np.asarray(weights)
    if arr.ndim != 2 or 0 in arr.shape:
        raise ValueError(f"weights must be a non-empty 2-D M x K matrix, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.floating):
        raise ValueError(f"weights must have a floating dtype (float16/32/64), got {arr.dtype}")
    return arr


def check_mask(weights: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate a (weights, mask) pair: same 2-D shape, boolean mask."""
    arr = check_weights(weights)
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise ValueError(f"mask must be a boolean array, got dtype {m.dtype}")
    if m.shape != arr.shape:
        raise ValueError(f"mask shape {m.shape} differs from weights shape {arr.shape}")
    return arr, m


def keep_count(total: int, sparsity: float) -> int:
    """Number of elements kept out of ``total`` at ``sparsity`` (round half up)."""
    return int(np.floor((1.0 - sparsity) * total + 0.5))


BLOCK_ELEMENTS = 1 << 22
"""Row-independent work on a large matrix (2:4 ranking, packing, decoding) runs about this many elements of
whole rows at a time: its temporaries stay a few MiB, reused, instead of the size of the matrix (an LLM
head's 131 M weights: 0.5 GiB of magnitudes, then ranks, each faulted in fresh)."""


def row_blocks(rows: int, cols: int, multiple: int = 1) -> Iterator[slice]:
    """Slices covering ``rows`` rows of ``cols`` elements, each BLOCK_ELEMENTS elements or fewer (at least
    ``multiple`` rows), every block a multiple of ``multiple`` rows."""
    step = max(1, BLOCK_ELEMENTS // max(cols, 1) // multiple) * multiple
    return (slice(start, start + step) for start in range(0, rows, step))


def pad_to(arr: np.ndarray, row_multiple: int, col_multiple: int) -> np.ndarray:
    """Zero-pad a 2-D array at the bottom/right so each dimension is a multiple of the given sizes."""
    rows = -(-arr.shape[0] // row_multiple) * row_multiple
    cols = -(-arr.shape[1] // col_multiple) * col_multiple
    if (rows, cols) == arr.shape:
        return arr
    out = np.zeros((rows, cols), dtype=arr.dtype)
    out[: arr.shape[0], : arr.shape[1]] = arr
    return out


class SparseFormat(ABC):
    """A pattern's storage format of a pruned matrix (values plus all index metadata)."""

    shape: tuple[int, int]

    @abstractmethod
    def to_dense(self) -> np.ndarray:
        """Rebuild the dense matrix in the original shape."""

    @abstractmethod
    def byte_breakdown(self, value_bytes: int = FP16_BYTES) -> dict[str, int]:
        """Bytes per stored array (values and each metadata array), values counted at ``value_bytes``."""

    def nbytes(self, value_bytes: int = FP16_BYTES) -> int:
        """Total storage in bytes, metadata included (default fp16 values = 2 bytes each)."""
        return sum(self.byte_breakdown(value_bytes).values())


class Pattern(ABC):
    """A sparsity pattern: its parameters are the fields of a frozen dataclass subclass."""

    name: ClassVar[str]
    accepts_gradients: ClassVar[bool] = False
    """True for patterns whose ``prune`` takes ``gradients=`` (a Taylor importance score)."""

    @abstractmethod
    def prune(self, weights: np.ndarray, sparsity: float) -> np.ndarray:
        """Return the boolean keep-mask of ``weights`` at the target ``sparsity`` in ``[0, 1)``."""

    @abstractmethod
    def encode(self, weights: np.ndarray, mask: np.ndarray) -> SparseFormat:
        """Encode ``weights * mask`` in this pattern's format; ValueError if the mask breaks the pattern."""

    def shape_unit(self) -> tuple[int, int]:
        """``(row, column)`` multiples a matrix needs for this pattern to take it without zero padding.

        Any shape can be pruned and encoded (each pattern zero-pads internally, and padding is never kept);
        a shape that is not a multiple runs at the padded size. Default ``(1, 1)``: no padding ever.
        """
        return (1, 1)

    def decode(self, fmt: SparseFormat) -> np.ndarray:
        """Return the dense matrix held by ``fmt`` (original shape)."""
        return fmt.to_dense()

    def spec(self) -> str:
        """Canonical registry string of this pattern instance, e.g. ``vw:L=16,K=4,axis=row``."""
        params = ",".join(f"{f.name}={spec_value(getattr(self, f.name))}" for f in dataclasses.fields(self))
        return f"{self.name}:{params}" if params else self.name


def spec_value(value: object) -> str:
    """Render one parameter value as the registry parser reads it back (enums by value)."""
    return str(value.value) if isinstance(value, enum.Enum) else str(value)

"""What the sparse kernel descriptors share: the fp32 tolerance, 4-bit vector offsets packed as the kernels
read them, and device arrays that are never empty (a pruned matrix may keep nothing, but every operand needs
a device buffer)."""

from __future__ import annotations

import numpy as np

from stcsim.kernels.gemm import GemmKernel

FP32_TOLERANCE = 1e-5
"""Largest accepted relative error of the fp32 kernels (docs/kernels.md)."""
OFFSET_BITS = 4
"""Bits of one non-zero's position inside a vector of 16 (vector-wise formats)."""
OFFSET_WORDS = {2: np.uint8, 4: np.uint16, 8: np.uint32}
"""The integer that holds one vector's packed positions, by non-zeros per vector (K)."""


def pack_offsets(offsets: np.ndarray) -> np.ndarray:
    """One integer per vector from ``(..., K)`` positions in 0..15 (K = 2, 4 or 8): position j in bits
    [4j, 4j + 4), in the smallest unsigned integer of 4K bits."""
    k = offsets.shape[-1]
    shifts = (OFFSET_BITS * np.arange(k)).astype(np.uint64)
    packed = np.bitwise_or.reduce(offsets.astype(np.uint64) << shifts, axis=-1)
    return packed.astype(OFFSET_WORDS[k])


def unpack_offsets(packed: np.ndarray, k: int) -> np.ndarray:
    """Inverse of :func:`pack_offsets`: ``(..., K)`` positions as uint8."""
    shifts = (OFFSET_BITS * np.arange(k)).astype(np.uint64)
    return ((packed.astype(np.uint64)[..., None] >> shifts) & 0xF).astype(np.uint8)


def check_simt_f32(dense: GemmKernel, owner: str) -> None:
    """ValueError unless `dense` is an fp32 SIMT GEMM, the kernel whose tiles `owner` (a class name) runs."""
    if dense.algorithm != "simt" or dense.layout.a_dtype != "float32":
        raise ValueError(f"{owner} runs the tiles of the fp32 SIMT GEMM, not {dense.procedural_name}")


def nonempty(array: np.ndarray) -> np.ndarray:
    """`array` as it is, or a single zero of its dtype when it has no element (a buffer the kernel is told
    holds nothing, so never reads)."""
    arr = np.asarray(array)
    return arr if arr.size else np.zeros(1, dtype=arr.dtype)

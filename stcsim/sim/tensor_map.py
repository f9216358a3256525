"""The host side of TMA: a tensor map with the fields of ``cuTensorMapEncodeTiled``.

A kernel receives the map as a ``__grid_constant__ const CUtensorMap`` parameter (PTX: ``.param .align 64
.b8 name[128]``). Pass a `TensorMap` as that kernel argument: the simulator's Engine gets `encode()`, the
engine's own 128-byte encoding (engine/ext/hopper/tensor_map.h); the GPU runner (stcsim.gpu.runner) gets
the driver's encoding from ``cuTensorMapEncodeTiled`` (`driver_encode`). Dimensions, strides and boxes are
innermost first, as in the CUDA driver API. The checks are those the driver API documents for
``cuTensorMapEncodeTiled``; a violation is a LaunchError naming the field.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass

from stcsim import _engine

LaunchError = _engine.LaunchError

# CUtensorMapDataType: name -> (enum value, bytes, is float)
DTYPES: dict[str, tuple[int, int, bool]] = {
    "u8": (0, 1, False), "u16": (1, 2, False), "u32": (2, 4, False), "i32": (3, 4, False),
    "u64": (4, 8, False), "i64": (5, 8, False), "f16": (6, 2, True), "f32": (7, 4, True),
    "f64": (8, 8, True), "bf16": (9, 2, True),
}
SWIZZLES = {"none": 0, "32B": 1, "64B": 2, "128B": 3}        # CUtensorMapSwizzle
INTERLEAVES = {"none": 0, "16B": 1, "32B": 2}                 # CUtensorMapInterleave
OOB_FILLS = {"zero": 0, "nan": 1}                             # CU_TENSOR_MAP_FLOAT_OOB_FILL_*
L2_PROMOTIONS = {"none": 0, "64B": 1, "128B": 2, "256B": 3}   # CUtensorMapL2promotion
MAGIC = 0x504D5453
SIZE = 128


@dataclass(frozen=True)
class TensorMap:
    """A tiled tensor map (the arguments of cuTensorMapEncodeTiled, innermost dimension first).

    global_strides has rank - 1 entries: the byte strides of dimensions 1.. (dimension 0 is contiguous)."""

    dtype: str
    address: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...] | None = None
    swizzle: str = "none"
    interleave: str = "none"
    oob_fill: str = "zero"
    l2_promotion: str = "none"

    def __post_init__(self) -> None:
        self.check()

    @property
    def rank(self) -> int:
        """Number of dimensions (1..5)."""
        return len(self.dims)

    @property
    def elem_strides(self) -> tuple[int, ...]:
        """The element strides (all 1 unless given)."""
        return self.element_strides or (1,) * self.rank

    @property
    def box_bytes(self) -> int:
        """Bytes one copy of the box writes to shared memory (and counts into the mbarrier)."""
        n = DTYPES[self.dtype][1]
        for b, e in zip(self.box, self.elem_strides, strict=True):
            n *= -(-b // e)
        return n

    def check(self) -> None:
        """Raise LaunchError unless the fields satisfy cuTensorMapEncodeTiled's documented requirements."""
        def bad(field: str, why: str) -> LaunchError:
            return LaunchError(f"TensorMap.{field}: {why}")

        if self.dtype not in DTYPES:
            raise bad("dtype", f"{self.dtype!r} is not one of {', '.join(DTYPES)}")
        for name, table in (("swizzle", SWIZZLES), ("interleave", INTERLEAVES), ("oob_fill", OOB_FILLS),
                            ("l2_promotion", L2_PROMOTIONS)):
            if getattr(self, name) not in table:
                raise bad(name, f"{getattr(self, name)!r} is not one of {', '.join(table)}")
        esize = DTYPES[self.dtype][1]
        if not 1 <= self.rank <= 5:
            raise bad("dims", f"rank {self.rank} is outside 1..5")
        lengths = (len(self.strides), len(self.box), len(self.elem_strides))
        if lengths != (self.rank - 1, self.rank, self.rank):
            raise bad("strides", "needs rank - 1 strides and rank box dims and element strides")
        align = 32 if self.interleave == "32B" else 16
        if self.address % align:
            raise bad("address", f"must be {align}-byte aligned, got {self.address:#x}")
        if any(not 1 <= d < 2**32 for d in self.dims):
            raise bad("dims", "each dimension must be in 1..2^32-1")
        if any(s % 16 or not 0 < s < 2**40 for s in self.strides):
            raise bad("strides", "each stride must be a positive multiple of 16 below 2^40")
        if any(not 1 <= b <= 256 for b in self.box):
            raise bad("box", "each box dimension must be in 1..256")
        if any(not 1 <= e <= 8 for e in self.elem_strides):
            raise bad("element_strides", "each element stride must be in 1..8")
        if self.interleave == "none" and (self.box[0] * esize) % 16:
            raise bad("box", "the inner box dimension times the element size must be a multiple of 16 bytes")
        if self.interleave != "none":
            raise bad("interleave", "interleaved maps are valid for the driver, not modelled by the engine")
        if self.swizzle != "none" and self.box[0] * esize > {"32B": 32, "64B": 64, "128B": 128}[self.swizzle]:
            raise bad("box", f"with {self.swizzle} swizzle the inner box dimension must span at most "
                             f"{self.swizzle[:-1]} bytes")
        if self.oob_fill == "nan" and not DTYPES[self.dtype][2]:
            raise bad("oob_fill", "NaN fill needs a floating-point dtype")

    def encode(self) -> bytes:
        """The engine's 128-byte encoding (engine/ext/hopper/tensor_map.h)."""
        code, esize, is_float = DTYPES[self.dtype]
        pad = 5 - self.rank
        dims = list(self.dims) + [0] * pad
        out = struct.pack("<IBBBBBBBxI", MAGIC, 1, esize, self.rank, SWIZZLES[self.swizzle],
                          INTERLEAVES[self.interleave], OOB_FILLS[self.oob_fill], int(is_float), code)
        out += struct.pack("<Q", self.address)
        out += struct.pack("<5I", *dims) + b"\0" * 4
        out += struct.pack("<4Q", *(list(self.strides) + [0] * (4 - len(self.strides))))
        out += struct.pack("<5H", *(list(self.box) + [0] * pad))
        out += bytes(list(self.elem_strides) + [0] * pad)
        return out + b"\0" * (SIZE - len(out))

    def __bytes__(self) -> bytes:
        return self.encode()

    def driver_encode(self) -> bytes:
        """The driver's 128-byte CUtensorMap, from cuTensorMapEncodeTiled in libcuda (needs a CUDA driver)."""
        try:
            cuda = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise LaunchError(f"TensorMap.driver_encode needs the CUDA driver (libcuda.so.1): {exc}") from exc
        u64 = ctypes.c_uint64
        u32 = ctypes.c_uint32
        out = (ctypes.c_uint8 * SIZE)()
        dims = (u64 * self.rank)(*self.dims)
        strides = (u64 * max(1, self.rank - 1))(*self.strides)
        box = (u32 * self.rank)(*self.box)
        estr = (u32 * self.rank)(*self.elem_strides)
        rc = cuda.cuTensorMapEncodeTiled(
            ctypes.byref(out), ctypes.c_int(DTYPES[self.dtype][0]), u32(self.rank),
            ctypes.c_void_p(self.address), dims, strides, box, estr,
            ctypes.c_int(INTERLEAVES[self.interleave]),
            ctypes.c_int(SWIZZLES[self.swizzle]), ctypes.c_int(L2_PROMOTIONS[self.l2_promotion]),
            ctypes.c_int(OOB_FILLS[self.oob_fill]))
        if rc != 0:
            raise LaunchError(f"cuTensorMapEncodeTiled failed with CUresult {rc} for {self}")
        return bytes(out)

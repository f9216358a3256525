"""The kernel set: every GEMM kernel descriptor, registered by procedural name."""

from __future__ import annotations

from stcsim.kernels.gemm import GemmKernel
from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.problem import TileShape

_F32 = OperandLayout(a_dtype="float32", b_dtype="float32")
_F16 = OperandLayout(a_dtype="float16", b_dtype="float16")
_F16_ALIGN8 = OperandLayout(a_dtype="float16", b_dtype="float16", align_ab=8)

GEMM_KERNELS: tuple[GemmKernel, ...] = (
    GemmKernel(
        algorithm="naive",
        layout=_F32,
        block_tile=TileShape(16, 16, 1),
        threads=(16, 16, 1),
        ptx_file="gemm_naive.ptx",
        instruction="fma.rn.f32",
        summary="one thread per element of C, operands straight from global memory",
    ),
    GemmKernel(
        algorithm="simt",
        layout=_F32,
        block_tile=TileShape(64, 64, 8),
        threads=(256, 1, 1),
        ptx_file="gemm_simt.ptx",
        instruction="fma.rn.f32",
        warp_tile=(32, 16),
        thread_tile=(4, 4),
        summary="shared-memory tiles, 4x4 outer product per thread on CUDA cores",
    ),
    GemmKernel(
        algorithm="wmma_global",
        layout=_F16,
        block_tile=TileShape(32, 32, 16),
        threads=(128, 1, 1),
        ptx_file="gemm_wmma.ptx",
        instruction="wmma.mma.m16n16k16",
        warp_tile=(16, 16),
        summary="one warp per 16x16 tile of C, WMMA fragments loaded from global memory",
    ),
    GemmKernel(
        algorithm="wmma",
        layout=_F16,
        block_tile=TileShape(64, 64, 32),
        threads=(128, 1, 1),
        ptx_file="gemm_wmma.ptx",
        instruction="wmma.mma.m16n16k16",
        warp_tile=(32, 32),
        summary="A and B tiles staged in shared memory, 2x2 WMMA fragments per warp",
    ),
    GemmKernel(
        algorithm="mma",
        layout=_F16_ALIGN8,
        block_tile=TileShape(128, 128, 32),
        threads=(128, 1, 1),
        ptx_file="gemm_mma.ptx",
        instruction="mma.sync.m16n8k16",
        warp_tile=(64, 64),
        stages=3,
        dynamic_shared_bytes=3 * (128 * 32 + 32 * 128) * 2,
        summary="multistage cp.async pipeline, ldmatrix and mma.sync (CUTLASS sm80 style)",
    ),
    GemmKernel(
        algorithm="mma",
        layout=_F16_ALIGN8,
        block_tile=TileShape(64, 64, 32),
        threads=(128, 1, 1),
        ptx_file="gemm_mma.ptx",
        instruction="mma.sync.m16n8k16",
        warp_tile=(32, 32),
        stages=2,
        dynamic_shared_bytes=2 * (64 * 32 + 32 * 64) * 2,
        summary="double-buffered cp.async pipeline, ldmatrix and mma.sync",
    ),
)

KERNELS: dict[str, GemmKernel] = {k.procedural_name: k for k in GEMM_KERNELS}


def get_kernel(name: str) -> GemmKernel:
    """The kernel registered under this procedural name; KeyError listing the allowed names otherwise."""
    try:
        return KERNELS[name]
    except KeyError:
        raise KeyError(f"unknown kernel {name!r}; registered: {', '.join(KERNELS)}") from None

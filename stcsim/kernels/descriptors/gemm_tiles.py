"""The dense GEMMs' tile configurations and split-K variants for the per-shape choice (issue 44).

cuBLAS's heuristics and CUTLASS's profiler pick, per problem, among many block tiles and K splits; a batch-1
layer (N = 1..49) on one fixed 64 x 64 tile leaves most SMs idle (ResNet-50's 512 x 49 x 4608 layer is 8
thread blocks on an 80-SM V100). These descriptors give the two dense families of the V100 that choice:

- the SIMT SGEMM (CUDA cores, fp32; ``ptx_kernels/gemm_simt_tiles.cu``): block tiles 128x128x8 (8x8 thread
  tiles), 64x64x8, 64x32x8, 32x32x8 and 64x16x8 (4x4 thread tiles);
- the tiled WMMA GEMM (Tensor Cores, fp16 in, fp32 accumulate; ``ptx_kernels/gemm_wmma_tiles.cu``): block
  tiles 128x128x32, 64x64x32, 64x32x32, 32x32x32 and 64x16x32;

each unsplit and split into 2, 4, 8 or 16 K slices (``_splitk<S>``: the grid's z, partial sums added to a
zeroed C with ``atom.global.add.f32``). Their families are the existing ``gemm_simt_f32_f32`` and
``gemm_wmma_f16_f32`` (the unsplit 64x64 tiles are gemm_simt.cu's and gemm_wmma.cu's own kernels), so the
per-shape choice of stcsim.harness.kernel_choice sees one family with every configuration.
"""

from __future__ import annotations

from stcsim.kernels.descriptors.gemm import GemmKernel
from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.problem import TileShape

SPLITS = (1, 2, 4, 8, 16)
"""K slices of every tile (a tile whose unsplit kernel exists already is registered from 2)."""

_F32 = OperandLayout(a_dtype="float32", b_dtype="float32")
_F16 = OperandLayout(a_dtype="float16", b_dtype="float16")

_SIMT_TILES = (  # (block tile, warp tile, thread tile, threads, has an unsplit kernel in gemm_simt.cu)
    (TileShape(128, 128, 8), (64, 32), (8, 8), 256, False),
    (TileShape(64, 64, 8), (32, 16), (4, 4), 256, True),
    (TileShape(64, 32, 8), (32, 16), (4, 4), 128, False),
    (TileShape(32, 32, 8), (32, 16), (4, 4), 64, False),
    (TileShape(64, 16, 8), (32, 16), (4, 4), 64, False),
)
_WMMA_TILES = (  # (block tile, warp tile, threads, has an unsplit kernel in gemm_wmma.cu)
    (TileShape(128, 128, 32), (64, 32), 256, False),
    (TileShape(64, 64, 32), (32, 32), 128, True),
    (TileShape(64, 32, 32), (32, 16), 128, False),
    (TileShape(32, 32, 32), (16, 16), 128, False),
    (TileShape(64, 16, 32), (16, 16), 128, False),
)


def _split_note(splits: int) -> str:
    return f", K in {splits} slices added atomically" if splits > 1 else ""


def _simt(tile: TileShape, warp: tuple[int, int], thread: tuple[int, int], threads: int,
          splits: int) -> GemmKernel:
    return GemmKernel(
        algorithm="simt", layout=_F32, block_tile=tile, threads=(threads, 1, 1),
        ptx_file="gemm_simt_tiles.ptx", instruction="fma.rn.f32", warp_tile=warp, thread_tile=thread,
        sliced=True, splits=splits, per_shape=True, summary=f"SIMT SGEMM tile {tile}" + _split_note(splits),
    )


def _wmma(tile: TileShape, warp: tuple[int, int], threads: int, splits: int) -> GemmKernel:
    return GemmKernel(
        algorithm="wmma", layout=_F16, block_tile=tile, threads=(threads, 1, 1),
        ptx_file="gemm_wmma_tiles.ptx", instruction="wmma.mma.m16n16k16", warp_tile=warp, sliced=True,
        splits=splits, per_shape=True, summary=f"tiled WMMA GEMM tile {tile}" + _split_note(splits),
    )


SIMT_TILE_KERNELS: tuple[GemmKernel, ...] = tuple(
    _simt(tile, warp, thread, threads, s)
    for tile, warp, thread, threads, has_unsplit in _SIMT_TILES for s in SPLITS if s > 1 or not has_unsplit
)
"""The SIMT SGEMM's tile configurations and split-K variants (family ``gemm_simt_f32_f32``)."""

WMMA_TILE_KERNELS: tuple[GemmKernel, ...] = tuple(
    _wmma(tile, warp, threads, s)
    for tile, warp, threads, has_unsplit in _WMMA_TILES for s in SPLITS if s > 1 or not has_unsplit
)
"""The tiled WMMA GEMM's tile configurations and split-K variants (family ``gemm_wmma_f16_f32``)."""

TILE_GEMM_KERNELS: tuple[GemmKernel, ...] = (*SIMT_TILE_KERNELS, *WMMA_TILE_KERNELS)
"""Every per-shape configuration of the dense GEMMs, registered after GEMM_KERNELS."""

"""Operand A and metadata of ``mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32`` (2:4 sparse A).

Source: PTX ISA, section "Warp-level matrix multiply-accumulate instructions" ->
"Matrix multiply-accumulate operation using mma.sp instruction with sparse matrix A":
9.7.14.6.1 "Sparse matrix storage" (2:4 granularity for .f16, two 2-bit indices per four-wide chunk,
sparsity selector) and 9.7.14.6.2.2 "Matrix Fragments for sparse mma.m16n8k32 with .f16 and .bf16 types"
(fragment of A, metadata register; figures "Sparse MMA .m16n8k32 fragment layout for matrix A" and
"... metadata layout for .f16/.bf16 type"). Numbering as in PTX ISA 9.x (8.x: 9.7.13.5.x).
The layout below is checked on a real H100 by ``tests/sparsity/test_mma_sp_gpu.py`` (``-m gpu``).

Orientation: ``W`` (``M x K``, K = reduction) is operand A, row-major, split into 16 x 32 tiles
(``M`` zero-padded to a multiple of 16, ``K`` to a multiple of 32). In each row every chunk of four
consecutive columns keeps two elements (2:4 along ``K``).

Compressed values: ``values[r, 2*c + s]`` (``M x K/2``, fp16, row-major) is the ``s``-th kept element
(ascending column) of chunk ``c`` of row ``r``. Its 2-bit index ``idx[r, c, s]`` in ``0..3`` is its column
inside the chunk, ``idx[r, c, 0] < idx[r, c, 1]`` (the ordering ``mma.sp::ordered_metadata`` demands).

Per tile, with ``groupID = laneid >> 2`` and ``tig = laneid % 4`` (PTX names):

* A fragment: four .b32 registers per lane, each two fp16 (low half = first) of the tile's 16 x 16
  compressed values ``v``: ``a[0] = v[g, 2t:2t+2]``, ``a[1] = v[g+8, 2t:2t+2]``,
  ``a[2] = v[g, 8+2t:10+2t]``, ``a[3] = v[g+8, 8+2t:10+2t]`` (``g = groupID``, ``t = tig``): the dense
  m16n8k16 A layout applied to the compressed tile.
* Metadata: one .b32 per lane; the sparsity selector ``sel`` (0 or 1 for m16n8k32 .f16) names the thread
  pair of each group of four that supplies it: lanes ``4g + 2*sel + j``, ``j in {0, 1}``. Thread ``j``
  covers tile columns ``16j .. 16j+15`` (chunks ``4j .. 4j+3``): bits ``[4c+1:4c]`` and ``[4c+3:4c+2]``
  hold ``idx[g, 4j+c, 0]`` and ``idx[g, 4j+c, 1]`` (row ``g``) and bits ``16 + ...`` the same for row
  ``g+8``. The 16 words of a tile are stored as ``metadata[tile_m, tile_k, 2*g + j]``.

CUTLASS feeds two consecutive k-tiles from one register per lane: the words of the even tile in the
lanes of selector 0 and those of the odd tile in the lanes of selector 1 (``lane_metadata`` of each,
OR-ed together). This module gives the register-level layout the instruction reads; the extra
permutation CUTLASS applies to E in global memory (``reorder_meta``, so that warps fetch these
registers with wide loads) is a storage choice of a kernel and is not reproduced here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stcsim.sparsity.base import check_mask, pad_to, row_blocks
from stcsim.sparsity.nm import group_codes, position_table

TILE_M, TILE_K = 16, 32
SELECTORS = (0, 1)


@dataclass(frozen=True, eq=False)
class MmaSpOperands:
    """Compressed A (``Mp x Kp/2`` fp16) and metadata words (``Mp/16 x Kp/32 x 16`` uint32) of a matrix."""

    shape: tuple[int, int]
    values: np.ndarray
    metadata: np.ndarray

    def tile_values(self, tile_m: int, tile_k: int) -> np.ndarray:
        """The 16 x 16 compressed values of tile ``(tile_m, tile_k)``."""
        return self.values[16 * tile_m : 16 * tile_m + 16, 16 * tile_k : 16 * tile_k + 16]

    def to_dense(self) -> np.ndarray:
        """Rebuild the dense fp16 matrix: every kept value added (fp16) at the column its 2-bit index names,
        the indices read from the metadata words; what decoding every tile through the register layout
        (``to_dense_by_tiles``) gives, element for element, in array operations."""
        tiles_m, tiles_k, _ = self.metadata.shape
        out = np.empty((tiles_m * TILE_M, tiles_k * TILE_K), dtype=np.float16)
        for rows in row_blocks(*out.shape, TILE_M):  # whole row tiles a block (temporaries of a few MiB)
            tiles = slice(rows.start // TILE_M, rows.stop // TILE_M)
            out[rows] = _decode_rows(self.values[rows], self.metadata[tiles])
        return out[: self.shape[0], : self.shape[1]]

    def to_dense_by_tiles(self) -> np.ndarray:
        """The dense fp16 matrix decoded tile by tile through the register layout (``lane_a_fragments``,
        ``lane_metadata``, ``decode_tile``): the instruction's reference semantics, slow on large
        matrices."""
        tiles_m, tiles_k, _ = self.metadata.shape
        out = np.zeros((tiles_m * TILE_M, tiles_k * TILE_K), dtype=np.float16)
        for tm in range(tiles_m):
            for tk in range(tiles_k):
                regs = lane_a_fragments(self.tile_values(tm, tk))
                meta = lane_metadata(self.metadata[tm, tk], 0)
                out[16 * tm : 16 * tm + 16, 32 * tk : 32 * tk + 32] = decode_tile(regs, meta, 0)
        return out[: self.shape[0], : self.shape[1]]


def _decode_rows(values: np.ndarray, metadata: np.ndarray) -> np.ndarray:
    """``MmaSpOperands.to_dense`` of whole row tiles (their compressed values and metadata words)."""
    tiles_m, tiles_k, _ = metadata.shape
    rows, chunks = tiles_m * TILE_M, tiles_k * TILE_K // 4
    words = np.asarray(metadata, dtype=np.uint32).reshape(tiles_m, tiles_k, 8, 2)  # (.., g, j)
    shifts = (16 * np.arange(2)[:, None] + 4 * np.arange(4)).astype(np.uint32)  # (half, c)
    nibbles = (words[..., None, None] >> shifts) & 0xF  # (tm, tk, g, j, half, c)
    nibbles = nibbles.transpose(0, 4, 2, 1, 3, 5).reshape(rows, chunks)  # row 16tm + 8half + g
    values = np.asarray(values, dtype=np.float16).reshape(rows, chunks, 2)
    out = np.zeros((rows, chunks, 4), dtype=np.float16)
    r, c = np.indices((rows, chunks))
    out[r, c, nibbles & 3] += values[..., 0]
    out[r, c, nibbles >> 2] += values[..., 1]
    return out.reshape(rows, chunks * 4)


def pack_m16n8k32(weights: np.ndarray, mask: np.ndarray) -> MmaSpOperands:
    """Compressed values and metadata words of an fp16 ``M x K`` matrix under a 2:4 ``mask``.

    ``weights`` must be float16 (the instruction's A type); the mask must keep at most 2 of every 4
    consecutive elements of a row (e.g. ``NM(2, 4).prune(weights, 0.5)``). Shapes are zero-padded to
    multiples of 16 x 32; chunks keeping fewer than two elements use their lowest unused positions.
    """
    w, m = check_mask(weights, mask)
    if w.dtype != np.float16:
        raise ValueError(f"mma.sp .f16 operand A must be float16, got {w.dtype}")
    w, m = pad_to(w, TILE_M, TILE_K), pad_to(m, TILE_M, TILE_K)
    rows, cols = w.shape
    values = np.empty((rows, cols // 2), dtype=np.float16)
    words = np.empty((rows // TILE_M, cols // TILE_K, 16), dtype=np.uint32)
    for block in row_blocks(rows, cols, TILE_M):  # whole row tiles a block
        tiles = slice(block.start // TILE_M, block.stop // TILE_M)
        values[block], words[tiles] = _pack_rows(w[block], m[block])
    return MmaSpOperands(weights.shape, values, words)


def _pack_rows(w: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pack_m16n8k32``'s values and metadata words of whole row tiles (rows and columns padded)."""
    code = group_codes(m, 2, 4)  # (rows, chunks): which of its four elements each chunk keeps
    positions, kept = position_table(2, 4)  # by code: the two positions, and whether each is kept
    flat, codes = np.ascontiguousarray(w).reshape(-1), code.reshape(-1)
    first = np.arange(0, flat.size, 4)  # each chunk's first element (1-D lookups: no fancy-index iterator)
    values = np.empty((codes.size, 2), dtype=np.float16)
    for s in range(2):
        chosen = flat[first + np.take(positions[:, s], codes)]
        values[:, s] = np.where(np.take(kept[:, s], codes), chosen, np.float16(0))
    rows, n_chunks = w.shape[0], w.shape[1] // 4
    nibbles = np.take((positions[:, 0] | positions[:, 1] << 2).astype(np.uint8), code)
    per_tile = nibbles.reshape(rows // 16, 16, n_chunks // 8, 8).transpose(0, 2, 1, 3)
    return values.reshape(rows, -1), _nibble_words(per_tile)


def tile_metadata_words(indices: np.ndarray) -> np.ndarray:
    """Metadata words ``[..., 2*g + j]`` of tiles from their ``(..., 16 rows, 8 chunks, 2)`` 2-bit indices."""
    idx = np.asarray(indices, dtype=np.uint32)
    return _nibble_words(idx[..., 0] | (idx[..., 1] << 2))


def _nibble_words(nibbles: np.ndarray) -> np.ndarray:
    """Metadata words ``[..., 2*g + j]`` (uint32) of tiles from each chunk's 4-bit ``idx0 | idx1 << 2``,
    ``(..., 16 rows, 8 chunks)``: row ``8*half + g`` and chunk ``4*j + c`` at bits ``16*half + 4*c`` of
    word ``(g, j)``."""
    lead = nibbles.shape[:-2]
    n = np.asarray(nibbles, dtype=np.uint32).reshape(*lead, 2, 8, 2, 4)  # (..., half, g, j, c)
    halves = n[..., 0] | (n[..., 1] << 4) | (n[..., 2] << 8) | (n[..., 3] << 12)  # (..., half, g, j)
    words = halves[..., 0, :, :] | (halves[..., 1, :, :] << 16)  # (..., g, j)
    return words.reshape(*lead, 16)


def lane_metadata(tile_words: np.ndarray, selector: int) -> np.ndarray:
    """The metadata register of each of the 32 lanes for ``selector`` (lanes not read hold 0)."""
    if selector not in SELECTORS:
        raise ValueError(f"m16n8k32 .f16 sparsity selector must be one of {SELECTORS}, got {selector}")
    regs = np.zeros(32, dtype=np.uint32)
    for g in range(8):
        regs[4 * g + 2 * selector : 4 * g + 2 * selector + 2] = tile_words[2 * g : 2 * g + 2]
    return regs


def lane_a_fragments(tile_values: np.ndarray) -> np.ndarray:
    """The four .b32 A registers of each lane, shape ``(32, 4)``, from a 16 x 16 compressed fp16 tile."""
    v = np.ascontiguousarray(tile_values, dtype=np.float16)
    regs = np.zeros((32, 4), dtype=np.uint32)
    for lane in range(32):
        g, t = divmod(lane, 4)
        for r, (row, col) in enumerate(((g, 2 * t), (g + 8, 2 * t), (g, 8 + 2 * t), (g + 8, 8 + 2 * t))):
            regs[lane, r] = v[row, col : col + 2].view(np.uint32)[0]
    return regs


def decode_tile(a_regs: np.ndarray, meta_regs: np.ndarray, selector: int) -> np.ndarray:
    """Reference semantics: the dense 16 x 32 fp16 tile held by lane registers ``a_regs``, ``meta_regs``."""
    halves = np.ascontiguousarray(a_regs, dtype=np.uint32).view(np.float16).reshape(32, 4, 2)
    dense = np.zeros((TILE_M, TILE_K), dtype=np.float16)
    for g in range(8):
        for chunk in range(8):
            j, c = divmod(chunk, 4)
            word = int(meta_regs[4 * g + 2 * selector + j])
            for half in range(2):
                nibble = (word >> (16 * half + 4 * c)) & 0xF
                pair = halves[4 * g + c, 2 * j + half]
                dense[g + 8 * half, 4 * chunk + (nibble & 3)] += pair[0]
                dense[g + 8 * half, 4 * chunk + (nibble >> 2)] += pair[1]
    return dense

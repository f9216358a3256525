"""The chunk-record stream the ExTensor SpMM kernel reads (ptx_kernels/spmm_extensor.cu), to and from
stcsim.sparsity.extensor's ExTensorFormat.

Record of one chunk: a 16-byte header of int32 ``{start column, shape code, record bytes, 0}``, the values
fp16 ``[16][W]`` and the coordinates u8 ``[16][W]``, W = the chunk's longest row rounded up to 4, each row's
real entries first (ascending columns) and coordinate 0xFF after them (the engine's chunk memory format;
the pattern's own encoding pads with value 0 at coordinate 0 instead). Shape code =
``(L/16 - 1) * 16 + W/4 - 1``. Chunks without non-zeros get no record.

Order: by block row (SLICES_PER_ROW = 2 slices), then by K panel (64 columns), then by slice, then in plan
order; a chunk belongs to the panel it starts in. ``offsets[row][2p + j]`` is the byte offset of slice j's
records of panel p, ``offsets[row][2 panels]`` the end of the row's records. ``split[row]`` holds the first
panel of each of the kernel's GROUPS warp groups, then the panel count: contiguous ranges whose PhaseLat
(per panel, the larger of the two slices' sums; the model the plan was made with) is as even as can be.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stcsim.sparsity.base import pad_to
from stcsim.sparsity.extensor import Chunk, ExTensorFormat
from stcsim.sparsity.extensor_latency import BLOCK, BlockSkip, chunk_latencies
from stcsim.sparsity.extensor_planner import SLICE_ROWS

PANEL = 64  # columns of W (rows of X) per staged panel of the kernel
SLICES_PER_ROW = 2  # 16-row slices per thread block of the kernel
GROUPS = 4  # warp groups of the kernel, each running a contiguous range of the K panels
HEADER_BYTES = 16
PAD = 0xFF
ROW_STEP = 4
MAX_PANEL_BYTES = 4 * HEADER_BYTES + 112 * SLICE_ROWS * 3
"""Records of one slice's chunks starting in one panel: at most 4 chunks, widths summing to <= 48 + 64."""


def shape_code(width: int, row_length: int) -> int:
    """The kernel's dispatch code of a chunk of width L with rows padded to W entries."""
    return (width // BLOCK - 1) * 16 + row_length // ROW_STEP - 1


def record_bytes(row_length: int) -> int:
    """Bytes of one record: header, 16 x W fp16 values, 16 x W u8 coordinates."""
    return HEADER_BYTES + SLICE_ROWS * row_length * 3


@dataclass(frozen=True)
class RecordStream:
    """The kernel's chunk operands: the record bytes, offsets (int32, block rows x (2 panels + 1)) and split
    (int32, block rows x (GROUPS + 1))."""

    records: np.ndarray
    offsets: np.ndarray
    split: np.ndarray


@dataclass(frozen=True)
class _Record:
    """One record's bytes and its PhaseLat."""

    data: bytes
    latency: int


def pack_records(fmt: ExTensorFormat, mask: np.ndarray, reading: BlockSkip) -> RecordStream:
    """Records of every chunk of `fmt` with non-zeros; `mask` (m x k) gives each row's real entry count (the
    format pads rows with value 0 at coordinate 0, which a real entry can also be) and, under the PhaseLat
    `reading`, the chunk latencies that place each block row's split."""
    padded = pad_to(np.asarray(mask, dtype=bool), SLICE_ROWS * SLICES_PER_ROW, BLOCK)
    rows, panels = padded.shape[0] // (SLICE_ROWS * SLICES_PER_ROW), -(-fmt.shape[1] // PANEL)
    by_panel: list[list[list[_Record]]] = [[[] for _ in range(panels)] for _ in range(rows * SLICES_PER_ROW)]
    for chunk in fmt.chunks:
        sub = padded[SLICE_ROWS * chunk.slice_index : SLICE_ROWS * (chunk.slice_index + 1)]
        sub = sub[:, chunk.start : chunk.start + chunk.width]
        real = sub.sum(1)
        if real.any():
            latency = int(chunk_latencies(sub[None], reading)[0])
            by_panel[chunk.slice_index][chunk.start // PANEL].append(_Record(_record(chunk, real), latency))
    pieces: list[bytes] = []
    offsets = np.zeros((rows, 2 * panels + 1), dtype=np.int64)
    split = np.zeros((rows, GROUPS + 1), dtype=np.int32)
    offset = 0
    for r in range(rows):
        cost = np.zeros((SLICES_PER_ROW, panels), dtype=np.int64)
        for p in range(panels):
            for j in range(SLICES_PER_ROW):
                offsets[r, SLICES_PER_ROW * p + j] = offset
                for rec in by_panel[SLICES_PER_ROW * r + j][p]:
                    if offset - offsets[r, SLICES_PER_ROW * p + j] + len(rec.data) > MAX_PANEL_BYTES:
                        raise ValueError(f"slice {SLICES_PER_ROW * r + j}, panel {p}: records exceed "
                                         f"{MAX_PANEL_BYTES} bytes (chunks wider than 64?)")
                    pieces.append(rec.data)
                    offset += len(rec.data)
                    cost[j, p] += rec.latency
        offsets[r, -1] = offset
        split[r] = balanced_split(cost.max(axis=0), GROUPS)
    if offset > np.iinfo(np.int32).max:
        raise ValueError(f"{offset} bytes of chunk records: the kernel addresses them with 32-bit offsets")
    stream = np.frombuffer(b"".join(pieces), dtype=np.uint8) if pieces else np.zeros(HEADER_BYTES, np.uint8)
    return RecordStream(stream.copy(), offsets.astype(np.int32), split)


def balanced_split(cost: np.ndarray, groups: int) -> np.ndarray:
    """Boundaries 0 = b0 <= b1 <= .. <= b_groups = len(cost) cutting per-panel costs into contiguous ranges:
    b_g is the panel whose cost prefix is nearest g / groups of the total."""
    before = np.append(0, np.cumsum(cost))
    targets = before[-1] * np.arange(groups + 1) / groups
    bounds = np.abs(before[None, :] - targets[:, None]).argmin(axis=1)
    bounds[0], bounds[-1] = 0, len(cost)
    return np.maximum.accumulate(bounds).astype(np.int32)


def _record(chunk: Chunk, real: np.ndarray) -> bytes:
    """One record of a chunk whose row r holds real[r] entries."""
    w = ROW_STEP * -(-int(real.max()) // ROW_STEP)
    entries = np.arange(w)[None, :] < real[:, None]
    values = np.zeros((SLICE_ROWS, w), np.float16)
    coords = np.full((SLICE_ROWS, w), PAD, np.uint8)
    kept = entries[:, : chunk.values.shape[1]]
    values[:, : chunk.values.shape[1]] = np.where(kept, chunk.values, 0)
    coords[:, : chunk.coords.shape[1]] = np.where(kept, chunk.coords, PAD)
    header = np.array([chunk.start, shape_code(chunk.width, w), record_bytes(w), 0], dtype=np.int32)
    return header.tobytes() + values.tobytes() + coords.tobytes()


def unpack_records(stream: RecordStream, shape: tuple[int, int]) -> ExTensorFormat | None:
    """The ExTensorFormat the records hold (padding back to value 0 at coordinate 0), None without records."""
    chunks = []
    data = stream.records
    for r, row in enumerate(stream.offsets):
        for i in range(len(row) - 1):
            offset, end = int(row[i]), int(row[i + 1])
            while offset < end:
                start, code, size, _ = np.frombuffer(data[offset : offset + HEADER_BYTES].tobytes(), np.int32)
                width, w = BLOCK * (int(code) // 16 + 1), ROW_STEP * (int(code) % 16 + 1)
                body = data[offset + HEADER_BYTES : offset + int(size)]
                values = np.frombuffer(body[: 2 * SLICE_ROWS * w].tobytes(), np.float16)
                coords = body[2 * SLICE_ROWS * w :].reshape(SLICE_ROWS, w)
                pad = coords == PAD
                values, coords = np.where(pad, 0, values.reshape(SLICE_ROWS, w)), np.where(pad, 0, coords)
                slice_index = SLICES_PER_ROW * r + i % SLICES_PER_ROW
                chunks.append(Chunk(slice_index, int(start), width, values, coords))
                offset += int(size)
    return ExTensorFormat(shape, tuple(chunks)) if chunks else None

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

from stcsim.sparsity.base import pad_to, ranges
from stcsim.sparsity.extensor import Chunk, ExTensorFormat
from stcsim.sparsity.extensor_latency import BLOCK, BlockSkip, MaskIndex
from stcsim.sparsity.extensor_planner import SLICE_ROWS

PANEL = 64  # columns of W (rows of X) per staged panel of the kernel
SLICES_PER_ROW = 2  # 16-row slices per thread block of the kernel
GROUPS = 4  # warp groups of the kernel, each running a contiguous range of the K panels
HEADER_BYTES = 16
PAD = 0xFF
ROW_STEP = 4
MAX_PANEL_BYTES = 4 * HEADER_BYTES + 112 * SLICE_ROWS * 3
"""Records of one slice's chunks starting in one panel: at most 4 chunks, widths summing to <= 48 + 64."""


def shape_code(width: int | np.ndarray, row_length: int | np.ndarray) -> int | np.ndarray:
    """The kernel's dispatch code of a chunk of width L with rows padded to W entries."""
    return (width // BLOCK - 1) * 16 + row_length // ROW_STEP - 1


def record_bytes(row_length: int | np.ndarray) -> int | np.ndarray:
    """Bytes of one record: header, 16 x W fp16 values, 16 x W u8 coordinates."""
    return HEADER_BYTES + SLICE_ROWS * row_length * 3


@dataclass(frozen=True)
class RecordStream:
    """The kernel's chunk operands: the record bytes, offsets (int32, block rows x (2 panels + 1)) and split
    (int32, block rows x (GROUPS + 1))."""

    records: np.ndarray
    offsets: np.ndarray
    split: np.ndarray


def pack_records(fmt: ExTensorFormat, mask: np.ndarray, reading: BlockSkip) -> RecordStream:
    """Records of every chunk of `fmt` with non-zeros; `mask` (m x k) gives each row's real entry count (the
    format pads rows with value 0 at coordinate 0, which a real entry can also be) and, under the PhaseLat
    `reading`, the chunk latencies that place each block row's split.

    All records at once: each chunk's place in the stream from its (block row, panel, slice) group, then
    its values and coordinates scattered entry by entry into one buffer."""
    padded = pad_to(np.asarray(mask, dtype=bool), SLICE_ROWS * SLICES_PER_ROW, BLOCK)
    rows, panels = padded.shape[0] // (SLICE_ROWS * SLICES_PER_ROW), -(-fmt.shape[1] // PANEL)
    index = MaskIndex(padded, SLICE_ROWS)
    chunks = fmt.chunks
    slices = np.array([c.slice_index for c in chunks], dtype=np.int64)
    starts = np.array([c.start for c in chunks], dtype=np.int64)
    widths = np.array([c.width for c in chunks], dtype=np.int64)
    in_slice = slices[:, None] * SLICE_ROWS + np.arange(SLICE_ROWS)
    real = (index.before[in_slice, ((starts + widths) // BLOCK)[:, None]]
            - index.before[in_slice, (starts // BLOCK)[:, None]])  # (chunks, 16) real entries per row
    keep = np.flatnonzero(real.any(axis=1))
    latency = chunk_latencies_in(index, chunks, reading)[keep]
    group = (slices // SLICES_PER_ROW * panels + starts // PANEL) * SLICES_PER_ROW + slices % SLICES_PER_ROW
    group = group[keep]
    perm = np.argsort(group, kind="stable")  # stream order: group, then plan order
    order = keep[perm]
    row_len = ROW_STEP * -(-real[order].max(axis=1) // ROW_STEP)
    size = record_bytes(row_len)
    n_groups = rows * panels * SLICES_PER_ROW
    group_bytes = np.bincount(group[perm], weights=size, minlength=n_groups).astype(np.int64)
    if group_bytes.size and group_bytes.max() > MAX_PANEL_BYTES:
        g = int(np.argmax(group_bytes > MAX_PANEL_BYTES))
        raise ValueError(f"slice {g // (panels * SLICES_PER_ROW) * SLICES_PER_ROW + g % SLICES_PER_ROW}, "
                         f"panel {g // SLICES_PER_ROW % panels}: records exceed {MAX_PANEL_BYTES} bytes "
                         "(chunks wider than 64?)")
    group_start = np.concatenate(([0], np.cumsum(group_bytes)))
    offsets = np.empty((rows, SLICES_PER_ROW * panels + 1), dtype=np.int64)
    offsets[:, :-1] = group_start[:-1].reshape(rows, -1)
    offsets[:, -1] = group_start[SLICES_PER_ROW * panels :: SLICES_PER_ROW * panels]
    total = int(group_start[-1])
    if total > np.iinfo(np.int32).max:
        raise ValueError(f"{total} bytes of chunk records: the kernel addresses them with 32-bit offsets")
    cost = np.bincount(group, weights=latency, minlength=n_groups).reshape(rows, panels, SLICES_PER_ROW)
    split = np.array([balanced_split(c.max(axis=1), GROUPS) for c in cost.astype(np.int64)],
                     dtype=np.int32).reshape(rows, GROUPS + 1)
    if not total:
        return RecordStream(np.zeros(HEADER_BYTES, np.uint8), offsets.astype(np.int32), split)
    at = np.concatenate(([0], np.cumsum(size)))[:-1]  # each record's offset, in stream order
    # every record: header and values (16 x W fp16) zero, coordinates (16 x W u8) PAD where no entry lands
    value_bytes = 2 * SLICE_ROWS * row_len
    fill = np.tile(np.array([0, 0, PAD], dtype=np.uint8), len(order))
    stream = np.repeat(fill, np.stack([np.full_like(size, HEADER_BYTES), value_bytes, size - HEADER_BYTES
                                       - value_bytes], 1).ravel())
    header = np.stack([starts[order], shape_code(widths[order], row_len), size, np.zeros_like(size)], 1)
    head = header.astype("<i4").view(np.uint8).reshape(-1, HEADER_BYTES)
    stream[at[:, None] + np.arange(HEADER_BYTES)] = head
    # one entry per real element: chunk (stream order), row, place k in the row
    counts = real[order].ravel()
    pair = np.repeat(np.arange(counts.size), counts)
    k = ranges(counts)
    rec, row = pair // SLICE_ROWS, pair % SLICE_ROWS
    cat_values, cat_coords, base, kmax = fmt.stacked()
    src = base[order][rec] + row * kmax[order][rec] + k
    slot = row * row_len[rec] + k
    body = at[rec] + HEADER_BYTES
    values = cat_values[src].astype("<f2").view(np.uint8).reshape(-1, 2)
    stream[body + 2 * slot] = values[:, 0]
    stream[body + 2 * slot + 1] = values[:, 1]
    stream[body + value_bytes[rec] + slot] = cat_coords[src]
    return RecordStream(stream, offsets.astype(np.int32), split)


def chunk_latencies_in(index: MaskIndex, chunks: tuple[Chunk, ...], reading: BlockSkip) -> np.ndarray:
    """PhaseLat latency of each chunk of a format from its keep-mask's non-zeros (0 without non-zeros): the
    chunks of one width together."""
    slices = np.array([c.slice_index for c in chunks], dtype=np.int64)
    starts = np.array([c.start for c in chunks], dtype=np.int64)
    widths = np.array([c.width for c in chunks], dtype=np.int64)
    out = np.zeros(len(chunks), dtype=np.int64)
    for width in np.unique(widths):
        pick = widths == width
        out[pick] = index.latencies(slices[pick], starts[pick] // BLOCK, int(width) // BLOCK, reading)
    return out


def balanced_split(cost: np.ndarray, groups: int) -> np.ndarray:
    """Boundaries 0 = b0 <= b1 <= .. <= b_groups = len(cost) cutting per-panel costs into contiguous ranges:
    b_g is the panel whose cost prefix is nearest g / groups of the total."""
    before = np.append(0, np.cumsum(cost))
    targets = before[-1] * np.arange(groups + 1) / groups
    bounds = np.abs(before[None, :] - targets[:, None]).argmin(axis=1)
    bounds[0], bounds[-1] = 0, len(cost)
    return np.maximum.accumulate(bounds).astype(np.int32)


def unpack_records(stream: RecordStream, shape: tuple[int, int]) -> ExTensorFormat | None:
    """The ExTensorFormat the records hold (padding back to value 0 at coordinate 0), None without records.

    The record groups (block row, panel, slice) are walked side by side: each step reads the next header of
    every group that has one left."""
    data = np.asarray(stream.records, dtype=np.uint8)
    offsets = np.asarray(stream.offsets, dtype=np.int64)
    n_groups = offsets.shape[1] - 1 if offsets.ndim == 2 else 0
    pos, end = offsets[:, :-1].ravel().copy(), offsets[:, 1:].ravel()
    found: list[tuple[np.ndarray, np.ndarray]] = []  # (group, record offset) per step
    active = np.flatnonzero(pos < end)
    while active.size:
        at = pos[active]
        size = data[at[:, None] + np.arange(8, 12)].copy().view("<i4").ravel().astype(np.int64)
        if np.any(size < HEADER_BYTES):
            raise ValueError("a chunk record's size is smaller than its header")
        found.append((active, at))
        pos[active] += size
        active = active[pos[active] < end[active]]
    if not found:
        return None
    group = np.concatenate([g for g, _ in found])
    at = np.concatenate([a for _, a in found])[np.argsort(group, kind="stable")]
    group = np.sort(group, kind="stable")
    header = data[at[:, None] + np.arange(HEADER_BYTES)].copy().view("<i4").astype(np.int64)
    start, code = header[:, 0], header[:, 1]
    width, w = BLOCK * (code // 16 + 1), ROW_STEP * (code % 16 + 1)
    cells = SLICE_ROWS * w
    first = np.repeat(at + HEADER_BYTES, cells)
    place = ranges(cells)
    values = data[(first + 2 * place)[:, None] + np.arange(2)].copy().view("<f2").ravel()
    coords = data[first + 2 * np.repeat(cells, cells) + place]
    pad = coords == PAD
    values, coords = np.where(pad, 0, values), np.where(pad, 0, coords)
    slice_index = SLICES_PER_ROW * (group // n_groups) + group % n_groups % SLICES_PER_ROW
    bounds = np.concatenate(([0], np.cumsum(cells))).tolist()
    chunks = tuple(
        Chunk(s, c0, wd, values[a:b].reshape(SLICE_ROWS, k), coords[a:b].reshape(SLICE_ROWS, k))
        for s, c0, wd, k, a, b in zip(slice_index.tolist(), start.tolist(), width.tolist(), w.tolist(),
                                      bounds[:-1], bounds[1:], strict=True)
    )
    return ExTensorFormat(shape, chunks)

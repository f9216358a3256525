"""Host-side tests of the mma.sp m16n8k32 operand layout (the hardware check is test_mma_sp_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from stcsim.sparsity.mma_sp import (
    MmaSpOperands,
    decode_tile,
    lane_a_fragments,
    lane_metadata,
    pack_m16n8k32,
)
from stcsim.sparsity.nm import NM

from .strategies import PROPERTY, masked, weight_matrices

ORDERED_NIBBLES = {0b0100, 0b1000, 0b1001, 0b1100, 0b1101, 0b1110}


@PROPERTY
@given(weight_matrices(max_rows=40, max_cols=80))
def test_pack_round_trips_through_lane_registers(w: np.ndarray) -> None:
    """Padding to 16x32 tiles, values M x K/2, valid ordered metadata, exact decode via the registers."""
    w = w.astype(np.float16)
    mask = NM(2, 4).prune(w, 0.5)
    ops = pack_m16n8k32(w, mask)
    rows, cols = -(-w.shape[0] // 16) * 16, -(-w.shape[1] // 32) * 32
    assert ops.values.shape == (rows, cols // 2) and ops.metadata.shape == (rows // 16, cols // 32, 16)
    nibbles = {int(x) >> s & 0xF for x in ops.metadata.ravel() for s in range(0, 32, 4)}
    assert nibbles <= ORDERED_NIBBLES
    assert np.array_equal(ops.to_dense(), masked(w, mask))
    assert np.array_equal(ops.to_dense_by_tiles(), masked(w, mask))


def test_array_decode_is_the_register_decode_bit_for_bit() -> None:
    """``to_dense`` (array operations) against ``to_dense_by_tiles`` (every tile through the lane registers
    and ``decode_tile``): the same fp16 bits, -0.0 and chunks keeping fewer than two included, and with
    arbitrary metadata words (repeated indices add, as the register decode does)."""
    rng = np.random.default_rng()
    w = rng.standard_normal((72, 200)).astype(np.float16)
    w[rng.random(w.shape) < 0.1] = -0.0
    mask = NM(2, 4).prune(w, 0.5) & (rng.random(w.shape) < 0.8)
    ops = pack_m16n8k32(w, mask)
    assert np.array_equal(ops.to_dense().view(np.uint16), ops.to_dense_by_tiles().view(np.uint16))
    words = rng.integers(0, 2**32, ops.metadata.shape, dtype=np.uint32)
    scrambled = MmaSpOperands(ops.shape, ops.values, words)
    assert np.array_equal(scrambled.to_dense().view(np.uint16), scrambled.to_dense_by_tiles().view(np.uint16))


def test_known_metadata_words_and_lanes() -> None:
    """Bits [4c+3:4c] of word 2g+j hold chunk 4j+c of row g; bits 16+ the same for row g+8."""
    w = np.zeros((16, 32), dtype=np.float16)
    w[0, [1, 3]] = [1.0, 2.0]  # row 0, chunk 0: indices (1, 3) -> 0b1101
    w[8, [16, 18]] = [3.0, 4.0]  # row 8, chunk 4: indices (0, 2) -> 0b1000 in the pair's second thread
    w[5, [30, 31]] = [5.0, 6.0]  # row 5, chunk 7: indices (2, 3) -> 0b1110
    ops = pack_m16n8k32(w, w != 0)
    words = ops.metadata[0, 0]
    assert words[0] & 0xF == 0b1101
    assert (words[1] >> 16) & 0xF == 0b1000
    assert (words[2 * 5 + 1] >> 12) & 0xF == 0b1110
    assert ops.values[0, :2].tolist() == [1.0, 2.0] and ops.values[5, 14:16].tolist() == [5.0, 6.0]
    lanes0, lanes1 = lane_metadata(words, 0), lane_metadata(words, 1)
    assert lanes0[[20, 21]].tolist() == words[[10, 11]].tolist() and lanes0[[22, 23]].tolist() == [0, 0]
    assert lanes1[[22, 23]].tolist() == words[[10, 11]].tolist() and lanes1[[20, 21]].tolist() == [0, 0]
    regs = lane_a_fragments(ops.tile_values(0, 0))
    assert regs[0, 0] == np.array([1.0, 2.0], dtype=np.float16).view(np.uint32)[0]  # lane 0, a0/a1
    assert regs[4 * 5 + 3, 2] == np.array([5.0, 6.0], dtype=np.float16).view(np.uint32)[0]  # lane 23, a4/a5
    assert np.array_equal(decode_tile(regs, lanes1, 1), w)


def test_bad_inputs() -> None:
    """Operand A must be fp16 and 2:4; the selector must be 0 or 1."""
    w = np.ones((16, 32), dtype=np.float32)
    with pytest.raises(ValueError, match="float16"):
        pack_m16n8k32(w, np.zeros(w.shape, dtype=bool))
    with pytest.raises(ValueError, match="more than N=2"):
        pack_m16n8k32(w.astype(np.float16), np.ones(w.shape, dtype=bool))
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        lane_metadata(np.zeros(16, dtype=np.uint32), 2)


def test_pack_and_decode_in_row_blocks_equal_the_whole_matrix(monkeypatch) -> None:
    """pack_m16n8k32 and to_dense take whole row tiles BLOCK_ELEMENTS at a time: the same values, words and
    decoded matrix as at once (a short last block; metadata with equal indices decoded as added)."""
    from stcsim.sparsity import base, mma_sp

    rng = np.random.default_rng()
    w = rng.standard_normal((70, 100)).astype(np.float16)
    mask = NM(2, 4).prune(w, 0.5) & (rng.uniform(size=w.shape) < 0.8)
    whole = pack_m16n8k32(w, mask)
    meta = whole.metadata.copy()
    meta[1, 2] = rng.integers(0, 2**32, 16, dtype=np.uint32)
    dense = mma_sp.MmaSpOperands(w.shape, whole.values, meta).to_dense()
    monkeypatch.setattr(base, "BLOCK_ELEMENTS", 16 * 128 * 2)  # two row tiles a block: 32, 32 and 16 rows
    blocked = pack_m16n8k32(w, mask)
    assert np.array_equal(blocked.values.view(np.uint16), whole.values.view(np.uint16))
    assert np.array_equal(blocked.metadata, whole.metadata)
    again = mma_sp.MmaSpOperands(w.shape, whole.values, meta).to_dense()
    assert np.array_equal(again.view(np.uint16), dense.view(np.uint16))

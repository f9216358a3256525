"""What the sparse descriptors share: never-empty device arrays, the gathered-B tiles and condensed A
layout."""

import numpy as np

from stcsim.kernels.descriptors.sparse_support import (
    GATHERED_TILES,
    nonempty,
    stack_condensed,
    unstack_condensed,
)


def test_nonempty_keeps_arrays_and_fills_empty_ones_with_one_zero():
    values = np.array([1.5, -2.0], dtype=np.float32)
    assert nonempty(values) is values
    empty = nonempty(np.zeros(0, dtype=np.int32))
    assert empty.dtype == np.int32 and empty.tolist() == [0]


def test_stack_condensed_pads_rows_to_eight_and_unstacks_back():
    rng = np.random.default_rng()
    blocks = [rng.uniform(-1, 1, (3, 5)), rng.uniform(-1, 1, (2, 11)), np.zeros((4, 0))]
    a = stack_condensed(blocks)
    assert a.shape == (9, 16) and a.dtype == np.float16
    np.testing.assert_array_equal(a[3:5, :11], blocks[1].astype(np.float16))
    assert not a[:3, 5:].any() and not a[5:].any()
    values = unstack_condensed(a, [b.shape for b in blocks])
    np.testing.assert_array_equal(values, np.concatenate([b.ravel() for b in blocks]).astype(np.float16))
    assert stack_condensed([]).shape == (1, 8)


def test_gathered_tiles_name_their_shape_and_shared_memory():
    small, large = GATHERED_TILES
    assert small.name == "tile32x128x32_warp32x32_stage3"
    assert small.shared_bytes == 3 * (32 * 32 + 32 * 128) * 2 + 2 * 128 * 4
    assert large.geometry(300, 100) == ((3, 2, 1), (128, 1, 1), 3 * (64 * 32 + 32 * 128) * 2 + 1024)
    assert large.geometry(1, 0)[0] == (1, 1, 1)

"""What the sparse descriptors share: never-empty device arrays."""

import numpy as np

from stcsim.kernels.sparse_support import nonempty


def test_nonempty_keeps_arrays_and_fills_empty_ones_with_one_zero():
    values = np.array([1.5, -2.0], dtype=np.float32)
    assert nonempty(values) is values
    empty = nonempty(np.zeros(0, dtype=np.int32))
    assert empty.dtype == np.int32 and empty.tolist() == [0]

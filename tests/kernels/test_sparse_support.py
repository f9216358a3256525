"""What the sparse descriptors share: launch refusals with their reason, never-empty device arrays."""

import numpy as np

from stcsim.kernels import GemmProblem
from stcsim.kernels.sparse_support import launch_refusal, nonempty


def test_launch_refusal_names_the_reason():
    p = GemmProblem(8, 8, 8)
    assert launch_refusal(p, (1, 1, 1), {"A": 64}) == ""
    assert launch_refusal(GemmProblem(0, 8, 8), (1, 1, 1), {}) == "M, N, K must be >= 1, got 0x8x8"
    assert "exceeds the CUDA grid limits" in launch_refusal(p, (1, 65536, 1), {})
    assert "exceeds the CUDA grid limits" in launch_refusal(p, (2**31, 1, 1), {})
    assert launch_refusal(p, (1, 1, 1), {"A": 64, "X": 2**31}) == (
        "X has 2147483648 elements; the kernel indexes with 32-bit integers"
    )


def test_nonempty_keeps_arrays_and_fills_empty_ones_with_one_zero():
    values = np.array([1.5, -2.0], dtype=np.float32)
    assert nonempty(values) is values
    empty = nonempty(np.zeros(0, dtype=np.int32))
    assert empty.dtype == np.int32 and empty.tolist() == [0]

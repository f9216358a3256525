"""SparseRT's static load balancing (paper 003, section 3.4): row ranges of equal non-zeros per block, K
ranges of equal non-zeros per thread group, every non-zero in exactly one segment."""

import numpy as np
import pytest

from stcsim.kernels.codegen.sparsert_plan import SplitParams, k_partition, make_plan, row_partition
from stcsim.sparsity.unstructured import SparseRT


def random_csr(rng, m, k, sparsity):
    w = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float32)
    return SparseRT().encode(w, SparseRT().prune(w, sparsity))


def test_the_plan_balances_rows_and_k_and_covers_every_nonzero_once():
    rng = np.random.default_rng()
    csr = random_csr(rng, 96, 80, 0.85)
    plan = make_plan(csr, SplitParams(8, 32, 3))
    assert plan.blocks == 12 and plan.row_starts[0] == 0 and plan.row_starts[-1] == 96
    assert all(0 < plan.block_rows(b) <= 16 for b in range(plan.blocks))
    seen = {}
    for seg in plan.segments:
        ks = [c for c, _ in seg.columns]
        assert ks == sorted(set(ks))
        for c, entries in seg.columns:
            for r, v in entries:
                seen[(plan.row_starts[seg.block] + r, c)] = v
    dense = csr.to_dense()
    assert seen == {(r, c): float(dense[r, c]) for r, c in zip(*np.nonzero(dense), strict=True)}
    assert plan.imbalance() < 1.6
    for b in range(plan.blocks):  # every group but the last: its share, give or take one column of W
        segs = [plan.segment(b, g) for g in range(3)]
        share = sum(s.nnz for s in segs) / 3
        widest = max(len(e) for s in segs for _, e in s.columns)
        assert all(abs(s.nnz - share) < widest for s in segs[:2])


def test_row_partition_follows_nnz_quantiles_within_the_caps():
    assert row_partition(np.array([10, 0, 0, 0, 10, 0, 0, 0]), 2, 8) == (0, 1, 8)
    assert row_partition(np.array([1] * 8), 4, 2) == (0, 2, 4, 6, 8)
    assert row_partition(np.array([100, 1, 1, 1, 1, 1]), 3, 2) == (0, 2, 4, 6)  # the cap, not the quantile
    assert row_partition(np.array([3, 3, 3, 1, 1, 1, 1, 1, 1]), 2, 8) == (0, 3, 9)  # 9 reaches 7.5
    with pytest.raises(ValueError, match="cannot split"):
        row_partition(np.ones(9), 2, 4)
    assert k_partition(np.array([4, 0, 4, 4, 4]), 2) == [0, 3, 5]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="columns"):
        SplitParams(columns=48)
    with pytest.raises(ValueError, match="weights"):
        SplitParams(weights="texture")
    with pytest.raises(ValueError, match="1024 threads"):
        SplitParams(columns=512, groups=4)

"""The fused TVW SpMM (paper 002 on the 2:4 mma.sp GEMM): its tile layout and the kernel against numpy."""

import numpy as np
import pytest

from stcsim.kernels import GemmProblem, kernels_for, verify_gemm
from stcsim.kernels.descriptors.spmm_tvw import TVW_KERNELS, format_of, lay_out_tiles
from stcsim.sim import Engine
from stcsim.sparsity import get

G64, G128 = TVW_KERNELS


def test_tiles_round_trip_to_the_pruned_weights():
    rng = np.random.default_rng()
    w = rng.uniform(-1, 1, (150, 90)).astype(np.float16)
    pattern = get("tvw:G=64")
    mask = pattern.prune(w, 0.75)
    arrays = lay_out_tiles(pattern.encode(w, mask), slots=3)
    assert arrays.tiles.shape == (3, 8)
    back = pattern.decode(format_of(w.shape, 64, vars(arrays)))
    np.testing.assert_array_equal(back, np.where(mask, w, 0))


def test_reference_is_the_pruned_product():
    rng = np.random.default_rng()
    w = rng.uniform(-1, 1, (70, 50)).astype(np.float32)
    x = rng.uniform(-1, 1, (50, 30)).astype(np.float32)
    pattern = get("tvw:G=64")
    ops = G64.prepare(w, x, pattern, 0.6)
    pruned = np.where(pattern.prune(w, 0.6), w, 0).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(G64.reference(ops), pruned @ x.astype(np.float16).astype(np.float64))


def test_each_kernel_takes_its_granularity_only():
    assert kernels_for("tvw:G=64") == (G64,) and kernels_for("tvw:G=128,nm_order=original") == (G128,)
    ok, why = G64.can_implement(GemmProblem(64, 64, 64), get("tvw:G=32"))
    assert not ok and "tvw:G=64" in why


@pytest.mark.parametrize(
    ("kernel", "spec", "p", "sparsity"),
    [
        (G64, "tvw:G=64", GemmProblem(64, 64, 64), 0.5),
        (G64, "tvw:G=64", GemmProblem(200, 72, 130), 0.75),
        (G64, "tvw:G=64,nm_order=original", GemmProblem(100, 40, 72), 0.75),
        (G128, "tvw:G=128", GemmProblem(150, 136, 40), 0.8),
    ],
    ids=str,
)
def test_kernel_matches_numpy_on_the_engine(kernel, spec, p, sparsity):
    check = verify_gemm(kernel, Engine("h100"), p, pattern=spec, sparsity=sparsity)
    assert check.ok, str(check)

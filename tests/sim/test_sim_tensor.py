"""Tensor Core instructions against numpy: wmma, mma.sync, ldmatrix, cp.async (tests/sim/cuda/tensor.cu).

Matrix inputs are small integers (and quarters), so every product and partial sum is exact in the
accumulator type and the results are bit-exact whatever order the hardware adds in; one case per family also
runs random normal values with a tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from simkit import assert_bits, kernels


@pytest.fixture(scope="module")
def k():
    return kernels("tensor")


def small(rng: np.random.Generator, shape: tuple[int, ...], exact: bool = True) -> np.ndarray:
    """f16 matrices: exact small values (integers and quarters) or random normals."""
    if exact:
        return (rng.integers(-6, 7, size=shape) / 2).astype(np.float16)
    return rng.standard_normal(shape).astype(np.float16)


def as_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Values exactly representable in bf16, as raw 16-bit patterns."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


LAYOUTS = [("f32", "row", "row"), ("f32", "row", "col"), ("f32", "col", "row"), ("f32", "col", "col")]
LAYOUTS += [("f16", "row", "col"), ("f16", "col", "row")]


@pytest.mark.parametrize(("acc", "la", "lb"), LAYOUTS)
@pytest.mark.parametrize("store_col", [0, 1], ids=["store_row", "store_col"])
def test_wmma_m16n16k16_every_layout(k, rng, acc, la, lb, store_col):
    tiles = 2
    adt = np.float32 if acc == "f32" else np.float16
    A, B = small(rng, (tiles, 16, 32)), small(rng, (tiles, 32, 16))
    C = rng.integers(-40, 40, size=(tiles, 16, 16)).astype(adt)
    a_mem = A if la == "row" else A.transpose(0, 2, 1)  # col-major: element (m, k) at k * lda + m
    b_mem = B if lb == "row" else B.transpose(0, 2, 1)
    lda, ldb = (32 if la == "row" else 16), (16 if lb == "row" else 32)
    D = np.zeros_like(C)
    name = f"wmma_{acc}_{la}_{lb}"
    args = (np.ascontiguousarray(a_mem), np.ascontiguousarray(b_mem), C, D)
    *_, got = k.launch(
        name, tiles, 32, *args, np.int32(lda), np.int32(ldb), np.int32(16), np.int32(store_col)
    )
    want = (A.astype(np.float64) @ B.astype(np.float64) + C).astype(adt)
    if store_col:
        want = want.transpose(0, 2, 1)
    assert_bits(got, want, name)


def test_wmma_from_shared_memory_with_padding(k, rng):
    A, B = small(rng, (16, 16), exact=False), small(rng, (16, 16), exact=False)
    C = rng.standard_normal((16, 16)).astype(np.float32)
    D = np.zeros((16, 16), np.float32)
    # B and C are given column-major: column j is the 16 values at j * 16
    *_, got = k.launch("wmma_shared", 1, 32, A, np.ascontiguousarray(B.T), np.ascontiguousarray(C.T), D)
    want = A.astype(np.float64) @ B.astype(np.float64) + C
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


MMA_CASES = [  # kernel, K, input type, C type, D type
    ("mma_m16n8k16_f16_f32", 16, "f16", "f32", "f32"),
    ("mma_m16n8k16_bf16_f32", 16, "bf16", "f32", "f32"),
    ("mma_m16n8k8_f16_f32", 8, "f16", "f32", "f32"),
    ("mma_m16n8k8_bf16_f32", 8, "bf16", "f32", "f32"),
    ("mma_m16n8k16_f16_f16", 16, "f16", "f16", "f16"),
    ("mma_m16n8k8_f16_f16", 8, "f16", "f16", "f16"),
]


@pytest.mark.parametrize(("name", "kdim", "ab", "ct", "dt"), MMA_CASES, ids=[c[0] for c in MMA_CASES])
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "random"])
def test_mma_sync_fragments_per_the_ptx_isa(k, rng, name, kdim, ab, ct, dt, exact):
    A, B = small(rng, (16, kdim), exact), small(rng, (kdim, 8), exact)
    if ab == "bf16":
        a_bits, b_bits = as_bf16_bits(A), as_bf16_bits(B)
        a_val, b_val = bf16_value(a_bits), bf16_value(b_bits)
    else:
        a_bits, b_bits = A.view(np.uint16), B.view(np.uint16)
        a_val, b_val = A.astype(np.float32), B.astype(np.float32)
    if exact:
        C = rng.integers(-40, 40, size=(16, 8)).astype(np.float32)
    else:
        C = rng.standard_normal((16, 8)).astype(np.float32)
    c_arr = C if ct == "f32" else C.astype(np.float16).view(np.uint16)
    c_val = C if ct == "f32" else C.astype(np.float16).astype(np.float64)
    D = np.zeros((16, 8), np.float32 if dt == "f32" else np.uint16)
    *_, got = k.launch(name, 1, 32, a_bits, b_bits, c_arr, D)
    exact_d = a_val.astype(np.float64) @ b_val.astype(np.float64) + c_val
    got_v = got if dt == "f32" else got.view(np.float16).astype(np.float64)
    if exact:
        assert_bits(got_v.astype(np.float64), exact_d.astype(np.float16 if dt == "f16" else np.float32), name)
    else:
        tol = 2e-3 if dt == "f16" else 1e-5
        np.testing.assert_allclose(got_v, exact_d, rtol=tol, atol=tol)


def test_mma_decodes_every_finite_f16_pattern(k):
    """Every finite fp16 bit pattern (normals, subnormals, zeros) reaches the fp32 product exactly: A holds
    the patterns, B selects one column of A into each column of D."""
    patterns = np.arange(1 << 16, dtype=np.uint32)
    finite = patterns[(patterns & 0x7C00) != 0x7C00].astype(np.uint16)
    chunks = np.zeros(-(-finite.size // 256) * 256, np.uint16)
    chunks[: finite.size] = finite
    selects = [np.eye(16, 8, -offset, dtype=np.float16).view(np.uint16) for offset in (0, 8)]
    C = np.zeros((16, 8), np.float32)
    for chunk in chunks.reshape(-1, 16, 16):
        want = chunk.view(np.float16).astype(np.float32)
        for offset, B in zip((0, 8), selects, strict=True):
            D = np.zeros((16, 8), np.float32)
            *_, got = k.launch("mma_m16n8k16_f16_f32", 1, 32, chunk, B, C, D)
            np.testing.assert_array_equal(got, want[:, offset : offset + 8])


def test_ldmatrix_every_lane_gets_the_isa_elements(k, rng):
    M = rng.integers(0, 1 << 16, size=256).astype(np.uint16)
    out = np.zeros((32, 14), np.uint32)
    *_, got = k.launch("ldmatrix_all", 1, 32, M, out)
    rows = M.reshape(32, 8)  # shared row s holds M[8 s : 8 s + 8]
    # Lane 8 i + r supplies the address of shared row 8 i + (3 r) % 8: that is row r of matrix i.
    mats = np.stack([rows[[8 * i + (3 * r) % 8 for r in range(8)]] for i in range(4)])

    def reg(i: int, lane: int, trans: bool) -> int:
        r, c = lane // 4, 2 * (lane % 4)
        m = mats[i].T if trans else mats[i]
        return int(m[r, c]) | (int(m[r, c + 1]) << 16)

    for lane in range(32):
        want = [reg(i, lane, False) for i in range(4)] + [reg(0, lane, False), reg(1, lane, False)]
        want += [reg(0, lane, False)] + [reg(i, lane, True) for i in range(4)]
        want += [reg(0, lane, True), reg(1, lane, True), reg(0, lane, True)]
        assert got[lane].tolist() == want, f"lane {lane}"


def test_cp_async_copies_and_zero_fills(k, rng):
    nt = 64
    g = rng.integers(-(2**31), 2**31, size=nt * 8, dtype=np.int64).astype(np.int32)
    g[g == 0] = 1
    sizes = rng.choice([0, 4, 8, 12, 16], size=nt).astype(np.int32)
    out = np.zeros(nt * 8, np.int32)
    *_, got = k.launch("cp_async", 1, nt, g, sizes, out)
    want = g.reshape(nt, 8).copy()
    for t in range(nt):
        words = sizes[t] // 4
        want[t, words:4] = 0  # .cg 16 bytes from src-size bytes
        if sizes[t] & 4 == 0:
            want[t, 6] = 0  # .ca 4 bytes with src-size 0
        want[t, 7] = -1  # never written
    assert_bits(got, want.reshape(-1), "cp.async")

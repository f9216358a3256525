"""SHMMA (paper 001 Sec. 4.2): compressed-A loads, offsets and the sparse mma on the engine vs numpy."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from shmma_ptx import shmma_tile_ptx

from stcsim.sim import Engine, LaunchError, PtxError


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def random_tile(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Compressed A (16 x k fp16, non-zero), offsets (16 x k in 0..15, distinct per row, unsorted), B, C."""
    vals = rng.uniform(0.5, 2.0, (16, k)) * rng.choice([-1, 1], (16, k))
    offs = np.stack([rng.permutation(16)[:k] for _ in range(16)])
    b = rng.standard_normal((16, 16))
    c = rng.standard_normal((16, 16))
    return vals.astype(np.float16), offs, b.astype(np.float16), c.astype(np.float32)


def pack_offsets(offs: np.ndarray) -> np.ndarray:
    """Each row's k 4-bit offsets, least-significant nibble first, as one little-endian u8/u16/u32."""
    k = offs.shape[1]
    words = sum(offs[:, j].astype(np.uint64) << np.uint64(4 * j) for j in range(k))
    return words.astype({2: np.uint8, 4: np.uint16, 8: np.uint32}[k])


def reference(vals: np.ndarray, offs: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D = C + A_dense @ B, with A_dense scattered from the compressed values (float64)."""
    a = np.zeros((16, 16))
    for r in range(16):
        for j in range(vals.shape[1]):
            a[r, offs[r, j]] += float(vals[r, j])
    return c.astype(np.float64) + a @ b.astype(np.float64)


def run_tile(k: int, b_layout: str, vals, offs, b, c, config: str | None = None, space: str = ".global"):
    eng = Engine(config)
    eng.load_ptx(shmma_tile_ptx(k, b_layout, space))
    b_mem = b if b_layout == "row" else np.ascontiguousarray(b.T)
    arrays = [vals, pack_offsets(offs), b_mem, c, np.full((16, 16), np.nan, np.float32)]
    ptrs = []
    for x in arrays:
        p = eng.malloc(x.nbytes)
        eng.copy_to(p, x)
        ptrs.append(p)
    stats = eng.launch(f"shmma_k{k}_{b_layout}", 1, 32, ptrs)
    return eng.copy_from(ptrs[4], (16, 16), np.float32), stats


@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_sparse_mma_matches_numpy(rng: np.random.Generator, k: int, b_layout: str) -> None:
    vals, offs, b, c = random_tile(rng, k)
    d, _ = run_tile(k, b_layout, vals, offs, b, c)
    ref = reference(vals, offs, b, c)
    np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_short_rows_are_padded_with_zero_values(rng: np.random.Generator) -> None:
    """A row with fewer than K non-zeros pads with value 0 at any offset: it adds nothing."""
    vals, offs, b, c = random_tile(rng, 4)
    vals[3, 2:] = 0
    offs[3, 2:] = offs[3, 0]  # repeated offsets of the padding
    d, _ = run_tile(4, "row", vals, offs, b, c)
    np.testing.assert_allclose(d, reference(vals, offs, b, c), rtol=1e-5, atol=1e-5)


def test_timing_needs_the_extension_enabled(rng: np.random.Generator) -> None:
    vals, offs, b, c = random_tile(rng, 4)
    with pytest.raises(LaunchError, match=r"stc\.enabled: true"):
        run_tile(4, "row", vals, offs, b, c, config="v100")
    d, stats = run_tile(4, "row", vals, offs, b, c, config="v100+stc")
    np.testing.assert_allclose(d, reference(vals, offs, b, c), rtol=1e-5, atol=1e-5)
    assert stats["stc_smma_insts"] == 1 and stats["stc_smma_mean_latency"] == 26
    assert stats["tensor_insts"] == 1 and stats["stc_smma_busy_cycles"] == 26


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("wmma.mma.sync.aligned.row.row.m16n16k16.smma.k3.f32.f32", r"\.k2, \.k4 or \.k8"),
        ("wmma.mma.sync.aligned.row.row.m16n16k16.smma.k4.f16.f32", r"takes \.f32\.f32"),
        ("wmma.mma.sync.aligned.col.row.m16n16k16.smma.k4.f32.f32", r"needs \.row \(compressed A\)"),
        ("wmma.mma.sync.aligned.row.row.m16n16k16.smma.k4.f32.f32.relu", r"modifier \.relu"),
    ],
)
def test_malformed_shmma_is_a_ptx_error_with_file_line_and_text(bad: str, message: str) -> None:
    ptx = shmma_tile_ptx(4).replace("wmma.mma.sync.aligned.row.row.m16n16k16.smma.k4.f32.f32", bad)
    with pytest.raises(PtxError, match=message) as err:
        Engine().load_ptx(ptx)
    assert "<ptx text>:23: " in str(err.value) and bad[:30] in str(err.value)


def test_wrong_register_counts_are_ptx_errors() -> None:
    ptx = shmma_tile_ptx(4).replace("{%a0, %a1, %a2, %a3}, [%rd1]", "{%a0, %a1, %a2}, [%rd1]")
    with pytest.raises(PtxError, match=r"compressed A must be a \{\.\.\} of 4 registers"):
        Engine().load_ptx(ptx)
    ptx = shmma_tile_ptx(4).replace("{%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7}, {%a0", "{%d0, %d1}, {%a0")
    with pytest.raises(PtxError, match=r"D must be a \{\.\.\} of 8 registers"):
        Engine().load_ptx(ptx)


def test_cuda_cpp_with_inline_asm_runs(rng: np.random.Generator) -> None:
    """tests/ext/cuda/shmma_tile.cu: nvcc compiled the inline-asm SHMMA into PTX; the engine runs it."""
    from pathlib import Path

    vals, offs, b, c = random_tile(rng, 4)
    eng = Engine("v100+stc-pingpong")
    eng.load_ptx(Path(__file__).parent / "cuda" / "shmma_tile.ptx")
    arrays = [vals, pack_offsets(offs), b, c, np.full((16, 16), np.nan, np.float32)]
    ptrs = []
    for x in arrays:
        ptrs.append(eng.malloc(x.nbytes))
        eng.copy_to(ptrs[-1], x)
    stats = eng.launch("shmma_tile_k4", 1, 32, ptrs)
    d = eng.copy_from(ptrs[4], (16, 16), np.float32)
    np.testing.assert_allclose(d, reference(vals, offs, b, c), rtol=1e-5, atol=1e-5)
    assert stats["stc_smma_mean_latency"] == 20

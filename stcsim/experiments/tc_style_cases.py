"""The calibration suite's Tensor Core styles (issue 43): ``benchmarks/calibration/kernels/tc_styles.cu``.

Styles the project's kernel set does not use: WMMA fragments straight from global memory (the CUDA samples'
style), single-stage shared tiles from 16x16 to 256x128 CTA tiles, one-warp CTAs, mma.sync with and without
ldmatrix and cp.async, split-K with atomics, 2:4 ``mma.sp`` from global and from shared memory, and the
latency-bound chains (fragment load -> MMA -> a load whose address depends on the MMA) at 1, 2, 4 and 8 warps
per SM; and Hopper wgmma with one and two consumer warpgroups fed by plain loads
(``benchmarks/calibration/kernels/tc_wgmma.cu``). Each kernel is a family (a style and tile config):
``benchmarks/calibration/halves.yaml`` puts whole families in the tuning or the validation half. Every case
checks its output against numpy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stcsim.experiments.calibration_cases import SMS, Buf, Case, Plan, poison

MODULE = "tc_styles"


def _f16(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    return rng.uniform(-1, 1, (rows, cols)).astype(np.float16)


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.astype(np.float64) @ b.astype(np.float64)).ravel()


def _wmma_sample(m: int, n: int, k: int, wx: int, wy: int) -> Callable[[np.random.Generator], Plan]:
    """Column-major A and B (the samples' layout); block (32*wx, wy): a warp per 16x16 tile of C."""
    def plan(rng: np.random.Generator) -> Plan:
        a, b = _f16(rng, m, k), _f16(rng, k, n)
        grid = (m // (16 * wx), n // (16 * wy), 1)
        return Plan([np.ascontiguousarray(a.T).ravel(), np.ascontiguousarray(b.T).ravel(), poison(m * n)],
                    [Buf(0), Buf(1), Buf(2), m, n, k], grid, (32 * wx, wy, 1), 2, lambda _: _product(a, b),
                    rtol=1e-3)
    return plan


def _row_major(m: int, n: int, k: int, tile: tuple[int, int], threads: int,
               warps_along_n: bool = False) -> Callable[[np.random.Generator], Plan]:
    """Row-major A (M x K) and B (K x N); CTA tile `tile` (or 32 x 32*warps with `warps_along_n`)."""
    def plan(rng: np.random.Generator) -> Plan:
        a, b = _f16(rng, m, k), _f16(rng, k, n)
        tm, tn = tile if not warps_along_n else (32, 32 * (threads // 32))
        return Plan([a.ravel(), b.ravel(), poison(m * n)], [Buf(0), Buf(1), Buf(2), m, n, k],
                    (n // tn, m // tm, 1), (threads, 1, 1), 2, lambda _: _product(a, b), rtol=1e-3)
    return plan


def _split_k(m: int, n: int, k: int, splits: int) -> Callable[[np.random.Generator], Plan]:
    """tcs_mma_splitk: 64 x 64 tiles, `splits` CTAs per tile adding into C with atomics (C starts at 0, so
    each launch adds one product: `launches` x A @ B)."""
    def plan(rng: np.random.Generator) -> Plan:
        a, b = _f16(rng, m, k), _f16(rng, k, n)
        want = _product(a, b)
        return Plan([a.ravel(), b.ravel(), np.zeros(m * n, np.float32)], [Buf(0), Buf(1), Buf(2), m, n, k],
                    (n // 64, m // 64, splits), (128, 1, 1), 2, lambda launches: launches * want, rtol=1e-3)
    return plan


def prune_2_4(rng: np.random.Generator, m: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random 2:4 sparse M x K f16 matrix: (dense, compressed M x K/2, kept indices M x K/4 x 2)."""
    choices = np.array([(i, j) for i in range(4) for j in range(i + 1, 4)], np.int64)
    idx = choices[rng.integers(0, len(choices), (m, k // 4))]
    values = _f16(rng, m, k // 2)
    dense = np.zeros((m, k), np.float16)
    rows = np.arange(m)[:, None, None]
    cols = 4 * np.arange(k // 4)[None, :, None] + idx
    dense[rows, cols] = values.reshape(m, k // 4, 2)
    return dense, values, idx


def metadata_words(idx: np.ndarray) -> np.ndarray:
    """The mma.sp m16n8k32 metadata words per [16-row block][k32 step][lane], selector 0 (PTX ISA: lanes
    4g and 4g + 1 of each group supply rows g and g + 8, chunks 0-3 and 4-7 of the step; other lanes 0)."""
    m, chunks = idx.shape[0], idx.shape[1]
    nib = (idx[..., 0] | (idx[..., 1] << 2)).astype(np.uint32)  # M x K/4
    nib = nib.reshape(m // 16, 2, 8, chunks // 8, 2, 4)  # block, half, g, step, j, c
    shift = (16 * np.arange(2)[:, None] + 4 * np.arange(4)).astype(np.uint32).reshape(1, 2, 1, 1, 1, 4)
    words = np.bitwise_or.reduce(nib << shift, axis=(1, 5))  # block, g, step, j
    lanes = np.zeros((m // 16, chunks // 8, 8, 4), np.uint32)
    lanes[..., :2] = words.transpose(0, 2, 1, 3)
    return lanes.reshape(m // 16, chunks // 8, 32)


def _sparse(m: int, n: int, k: int, kernel: str, warps: int = 1) -> Callable[[np.random.Generator], Plan]:
    """2:4 A (compressed + metadata); tcs_mmasp_gmem takes B transposed, tcs_mmasp_ldm_1w B row-major."""
    def plan(rng: np.random.Generator) -> Plan:
        dense, values, idx = prune_2_4(rng, m, k)
        b = _f16(rng, k, n)
        meta = metadata_words(idx)
        if kernel == "tcs_mmasp_gmem":
            bmat, grid, block = np.ascontiguousarray(b.T), (n // (32 * warps), m // 16, 1), (32 * warps, 1, 1)
        else:
            bmat, grid, block = b, (n // 32, m // 32, 1), (32, 1, 1)
        return Plan([values.ravel(), bmat.ravel(), meta.ravel(), poison(m * n)],
                    [Buf(0), Buf(1), Buf(2), Buf(3), m, n, k], grid, block, 3, lambda _: _product(dense, b),
                    rtol=1e-3)
    return plan


def _chain(kernel: str, warps: int, iters: int, ctas: int = SMS) -> Callable[[np.random.Generator], Plan]:
    """`ctas` CTAs of `warps` warps, each warp `iters` dependent load -> MMA steps on one 16 x 16 tile."""
    def plan(rng: np.random.Generator) -> Plan:
        a, b = _f16(rng, 16, 16), _f16(rng, 16, 16)
        bmat = np.ascontiguousarray(b.T) if kernel == "tcs_chain_mma_gmem" else b
        total = ctas * warps
        want = np.tile(iters * _product(a, b), total)
        return Plan([a.ravel(), bmat.ravel(), poison(total * 256)], [Buf(0), Buf(1), Buf(2), iters, 0],
                    (ctas, 1, 1), (32 * warps, 1, 1), 2, lambda _: want, rtol=1e-3)
    return plan


def _wgmma(m: int, n: int, k: int, warpgroups: int) -> Callable[[np.random.Generator], Plan]:
    """tc_wgmma.cu: A row-major, B transposed (N x K row-major); a CTA of `warpgroups` x 128 threads per
    (64 * warpgroups) x 64 tile of C."""
    def plan(rng: np.random.Generator) -> Plan:
        a, b = _f16(rng, m, k), _f16(rng, k, n)
        return Plan([a.ravel(), np.ascontiguousarray(b.T).ravel(), poison(m * n)],
                    [Buf(0), Buf(1), Buf(2), m, n, k], (n // 64, m // (64 * warpgroups), 1),
                    (128 * warpgroups, 1, 1), 2, lambda _: _product(a, b), rtol=1e-3)
    return plan


def _shape(m: int, n: int, k: int, extra: str = "") -> str:
    return f"{m}x{n}x{k}" + (f",{extra}" if extra else "")


_SMEM_TILES = {16: ((16, 16), 32), 32: ((32, 32), 128), 3264: ((32, 64), 64), 64: ((64, 64), 128),
               128: ((128, 128), 256), 256: ((256, 128), 256)}


def _smem_case(name: str, tile: int, m: int, n: int, k: int) -> Case:
    (tm, tn), threads = _SMEM_TILES[tile]
    return Case(name, MODULE, _shape(m, n, k), _row_major(m, n, k, (tm, tn), threads))


WGMMA_MODULE = "tc_wgmma"
WGMMA_KERNELS = {"tcs_wgmma_1wg": 1, "tcs_wgmma_2wg": 2}

CHAIN_KERNELS = ("tcs_chain_wmma_gmem", "tcs_chain_wmma_smem", "tcs_chain_mma_ldm", "tcs_chain_mma_gmem")

TC_CASES: tuple[Case, ...] = (
    Case("tcs_wmma_sample", MODULE, _shape(256, 256, 256, "w16"), _wmma_sample(256, 256, 256, 4, 4)),
    Case("tcs_wmma_sample", MODULE, _shape(1024, 1024, 1024, "w16"), _wmma_sample(1024, 1024, 1024, 4, 4)),
    Case("tcs_wmma_sample", MODULE, _shape(256, 256, 256, "w1"), _wmma_sample(256, 256, 256, 1, 1)),
    Case("tcs_wmma_sample", MODULE, _shape(512, 512, 512, "w1"), _wmma_sample(512, 512, 512, 1, 1)),
    *(Case("tcs_wmma_gmem_w32", MODULE, _shape(m, n, k, f"w{w}"), _row_major(m, n, k, (0, 0), 32 * w, True))
      for m, n, k, w in ((256, 256, 256, 2), (512, 512, 512, 4), (1024, 1024, 1024, 4),
                         (2048, 2048, 256, 8))),
    _smem_case("tcs_wmma_smem_16x16", 16, 256, 256, 256),
    _smem_case("tcs_wmma_smem_16x16", 16, 128, 128, 1024),
    _smem_case("tcs_wmma_smem_32x32", 32, 256, 256, 256),
    _smem_case("tcs_wmma_smem_32x32", 32, 1024, 1024, 1024),
    _smem_case("tcs_wmma_smem_32x64", 3264, 512, 512, 512),
    _smem_case("tcs_wmma_smem_32x64", 3264, 256, 512, 2048),
    _smem_case("tcs_wmma_smem_64x64", 64, 512, 512, 512),
    _smem_case("tcs_wmma_smem_64x64", 64, 1024, 1024, 1024),
    _smem_case("tcs_wmma_smem_128x128", 128, 1024, 1024, 1024),
    _smem_case("tcs_wmma_smem_128x128", 128, 2048, 2048, 1024),
    _smem_case("tcs_wmma_smem_256x128", 256, 1024, 1024, 1024),
    _smem_case("tcs_wmma_smem_256x128", 256, 2048, 2048, 1024),
    *(Case("tcs_mma_ldm_1w", MODULE, _shape(m, n, k), _row_major(m, n, k, (32, 32), 32))
      for m, n, k in ((256, 256, 256), (1024, 1024, 1024), (512, 64, 4608))),
    *(Case("tcs_mma_ldm_cpasync", MODULE, _shape(m, n, k), _row_major(m, n, k, (64, 64), 128))
      for m, n, k in ((512, 512, 512), (1024, 1024, 1024), (2048, 2048, 512))),
    *(Case("tcs_mma_splitk", MODULE, _shape(m, n, k, f"split{s}"), _split_k(m, n, k, s))
      for m, n, k, s in ((512, 64, 4608, 8), (256, 64, 2304, 4), (2048, 64, 512, 2))),
    *(Case("tcs_mma_lds", MODULE, _shape(m, n, k), _row_major(m, n, k, (32, 32), 64))
      for m, n, k in ((256, 256, 256), (1024, 1024, 1024))),
    Case("tcs_mmasp_gmem", MODULE, _shape(512, 512, 512, "w4"), _sparse(512, 512, 512, "tcs_mmasp_gmem", 4)),
    Case("tcs_mmasp_gmem", MODULE, _shape(1024, 1024, 1024, "w4"),
         _sparse(1024, 1024, 1024, "tcs_mmasp_gmem", 4)),
    Case("tcs_mmasp_gmem", MODULE, _shape(256, 256, 256, "w1"), _sparse(256, 256, 256, "tcs_mmasp_gmem", 1)),
    *(Case("tcs_mmasp_ldm_1w", MODULE, _shape(m, n, k), _sparse(m, n, k, "tcs_mmasp_ldm_1w"))
      for m, n, k in ((256, 256, 256), (1024, 1024, 1024), (512, 64, 4608))),
    *(Case(kernel, WGMMA_MODULE, _shape(m, n, k), _wgmma(m, n, k, wg))
      for kernel, wg in WGMMA_KERNELS.items()
      for m, n, k in ((256, 256, 256), (1024, 1024, 1024), (2048, 2048, 512))),
    *(Case(kernel, MODULE, f"warps/SM={w},iters=256", _chain(kernel, w, 256))
      for kernel in CHAIN_KERNELS for w in (1, 2, 4, 8)),
    # twice the steps at one warp per SM: the difference is the chain's cost per step, free of launch costs
    *(Case(kernel, MODULE, "warps/SM=1,iters=512", _chain(kernel, 1, 512)) for kernel in CHAIN_KERNELS),
)

# One tiny case per kernel: the numpy checks of the tests (seconds to simulate in all).
TC_SMOKE: tuple[Case, ...] = (
    Case("tcs_wmma_sample", MODULE, _shape(64, 64, 32, "w4"), _wmma_sample(64, 64, 32, 2, 2)),
    Case("tcs_wmma_gmem_w32", MODULE, _shape(64, 128, 32, "w2"), _row_major(64, 128, 32, (0, 0), 64, True)),
    *(_smem_case(f"tcs_wmma_smem_{t[0]}x{t[1]}", key, t[0], t[1], 64) for key, (t, _) in _SMEM_TILES.items()),
    Case("tcs_mma_ldm_1w", MODULE, _shape(64, 32, 64), _row_major(64, 32, 64, (32, 32), 32)),
    Case("tcs_mma_ldm_cpasync", MODULE, _shape(64, 128, 96), _row_major(64, 128, 96, (64, 64), 128)),
    Case("tcs_mma_splitk", MODULE, _shape(64, 64, 128, "split2"), _split_k(64, 64, 128, 2)),
    Case("tcs_mma_lds", MODULE, _shape(32, 64, 64), _row_major(32, 64, 64, (32, 32), 64)),
    Case("tcs_mmasp_gmem", MODULE, _shape(32, 64, 64, "w2"), _sparse(32, 64, 64, "tcs_mmasp_gmem", 2)),
    Case("tcs_mmasp_ldm_1w", MODULE, _shape(64, 32, 128), _sparse(64, 32, 128, "tcs_mmasp_ldm_1w")),
    *(Case(kernel, MODULE, "warps/SM=2,iters=8,ctas=2", _chain(kernel, 2, 8, 2)) for kernel in CHAIN_KERNELS),
    *(Case(kernel, WGMMA_MODULE, _shape(128, 128, 128), _wgmma(128, 128, 128, wg))
      for kernel, wg in WGMMA_KERNELS.items()),
)

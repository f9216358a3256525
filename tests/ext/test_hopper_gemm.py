"""The Hopper GEMMs (tests/ext/cuda/gemm_wgmma.cu: TMA loads, a 3-stage mbarrier ring, one producer and two
consumer warpgroups issuing wgmma; gemm_wgmma_sp.cu: the same with 2:4 sparse A through wgmma.sp, metadata
from stcsim.sparsity) on the engine vs numpy, functional and timed on h100; the gpu-marked test runs the
dense PTX on an H100 with the driver's tensor maps and reports its TFLOP/s at 4096^3."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from stcsim.kernels import build
from stcsim.sim import Engine, TensorMap

CUDA = Path(__file__).resolve().parent / "cuda"
PTX = CUDA / "gemm_wgmma.ptx"
SHARED = 3 * 2 * 128 * 64 * 2 + 1024  # kStages x (A + Bt tiles) + alignment slack (kSmemBytes)
SPARSE_PTX = CUDA / "gemm_wgmma_sp.ptx"
SPARSE_SHARED = 5 * (128 * 64 + 128 * 64 * 2 + 2048) + 1024  # 5 stages of compressed A, Bt, metadata


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def maps(a_addr: int, bt_addr: int, m: int, n: int, k: int) -> tuple[TensorMap, TensorMap]:
    """Tensor maps of A (m x k) and Bt (n x k), row-major fp16: boxes of 64 k x 128 rows, 128B swizzle."""
    return (TensorMap("f16", a_addr, (k, m), (2 * k,), (64, 128), swizzle="128B"),
            TensorMap("f16", bt_addr, (k, n), (2 * k,), (64, 128), swizzle="128B"))


def run(rng: np.random.Generator, m: int, n: int, k: int, config: str | None = None):
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    bt = rng.uniform(-1, 1, (n, k)).astype(np.float16)
    eng = Engine(config)
    eng.load_ptx(PTX)
    pa, pb, pc = eng.malloc(a.nbytes), eng.malloc(bt.nbytes), eng.malloc(m * n * 4)
    eng.copy_to(pa, a)
    eng.copy_to(pb, bt)
    eng.copy_to(pc, np.full(m * n, np.nan, np.float32))
    stats = eng.launch("gemm_wgmma", (n // 128, m // 128), 384, [*maps(pa, pb, m, n, k), pc, n, k],
                       shared_bytes=SHARED)
    return eng.copy_from(pc, (m, n), np.float32), a.astype(np.float64) @ bt.astype(np.float64).T, stats


@pytest.mark.parametrize("ptx", [PTX, SPARSE_PTX], ids=["dense", "sparse"])
def test_committed_ptx_is_current(tmp_path: Path, ptx: Path) -> None:
    nvcc = build.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not installed")
    build.compile_ptx(ptx.with_suffix(".cu"), tmp_path / "g.ptx", nvcc)
    assert (tmp_path / "g.ptx").read_text() == ptx.read_text()


@pytest.mark.parametrize("m,n,k", [(128, 128, 64), (256, 384, 320)])
def test_matches_numpy(rng: np.random.Generator, m: int, n: int, k: int) -> None:
    got, want, _ = run(rng, m, n, k)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_timed_on_h100(rng: np.random.Generator) -> None:
    """Both consumer warpgroups share the SM's four Tensor Core pipes: at least 2 x 4 wgmma m64n128k16 of
    occupancy per k tile."""
    got, want, stats = run(rng, 128, 128, 512, config="h100")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    from stcsim.config import load_config

    per_sub = load_config("h100").flat()["hopper.wgmma_fma_per_cycle"] // 4
    assert stats["kernel_cycles"] >= (512 // 64) * 2 * 4 * (16 * 128 * 16 // per_sub)
    assert stats["hopper_wgmma_insts"] == (512 // 64) * 2 * 4 * 4  # tiles x consumer WGs x k16 steps x warps


@pytest.mark.gpu
def test_on_gpu_against_numpy_and_cublas(rng: np.random.Generator) -> None:
    """On an sm_90 GPU: exact against numpy at 512^3, then TFLOP/s at 4096^3 next to torch's cuBLAS."""
    cp = pytest.importorskip("cupy")
    func = cp.RawModule(path=str(PTX)).get_function("gemm_wgmma")
    func.max_dynamic_shared_size_bytes = SHARED

    def launch(m: int, n: int, k: int, a, bt, c) -> None:
        ma, mb = (np.frombuffer(t.driver_encode(), np.dtype((np.void, 128)))[0]
                  for t in maps(a.data.ptr, bt.data.ptr, m, n, k))
        func((n // 128, m // 128), (384,), (ma, mb, c, np.int32(n), np.int32(k)), shared_mem=SHARED)

    m = n = k = 512
    a = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(np.float16))
    bt = cp.asarray(rng.uniform(-1, 1, (n, k)).astype(np.float16))
    c = cp.full((m, n), np.nan, cp.float32)
    launch(m, n, k, a, bt, c)
    want = cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(bt).astype(np.float64).T
    np.testing.assert_allclose(cp.asnumpy(c), want, rtol=1e-3, atol=1e-3)
    s = 4096
    a, bt = (cp.asarray(rng.uniform(-1, 1, (s, s)).astype(np.float16)) for _ in range(2))
    c = cp.empty((s, s), cp.float32)
    launch(s, s, s, a, bt, c)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(10):
        launch(s, s, s, a, bt, c)
    end.record()
    end.synchronize()
    tflops = 2 * s**3 * 10 / cp.cuda.get_elapsed_time(start, end) / 1e9
    print(f"gemm_wgmma 4096^3: {tflops:.1f} TFLOP/s")
    assert tflops > 0


def sparse_operands(rng: np.random.Generator, m: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random 2:4 A (m x k): its dense form, compressed values (m x k/2) and the per-thread metadata
    words meta[m/64][k/32][128] of the sparse kernel (selector 0), via stcsim.sparsity."""
    from stcsim.sparsity.mma_sp import lane_metadata, pack_m16n8k32
    from stcsim.sparsity.nm import NM

    w = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    pattern = NM(2, 4)
    ops = pack_m16n8k32(w, pattern.prune(w, 0.5))
    meta = np.zeros((m // 64, k // 32, 128), np.uint32)
    for rb in range(m // 64):
        for ks in range(k // 32):
            for warp in range(4):
                meta[rb, ks, 32 * warp: 32 * warp + 32] = lane_metadata(ops.metadata[4 * rb + warp, ks], 0)
    return ops.to_dense(), ops.values, meta


def run_sparse(rng: np.random.Generator, m: int, n: int, k: int, config: str | None = None):
    dense, values, meta = sparse_operands(rng, m, k)
    bt = rng.uniform(-1, 1, (n, k)).astype(np.float16)
    eng = Engine(config)
    eng.load_ptx(SPARSE_PTX)
    pa, pb, pm, pc = (eng.malloc(x) for x in (values.nbytes, bt.nbytes, meta.nbytes, m * n * 4))
    for p, x in ((pa, values), (pb, bt), (pm, meta), (pc, np.full(m * n, np.nan, np.float32))):
        eng.copy_to(p, x)
    map_a = TensorMap("f16", pa, (k // 2, m), (k,), (32, 128), swizzle="64B")
    map_b = maps(pa, pb, m, n, k)[1]
    map_m = TensorMap("u32", pm, (128, k // 32, m // 64), (512, 512 * (k // 32)), (128, 2, 2))
    stats = eng.launch("gemm_wgmma_sp", (n // 128, m // 128), 384, [map_a, map_b, map_m, pc, n, k],
                       shared_bytes=SPARSE_SHARED)
    want = dense.astype(np.float64) @ bt.astype(np.float64).T
    return eng.copy_from(pc, (m, n), np.float32), want, stats


@pytest.mark.parametrize("m,n,k", [(128, 128, 64), (256, 256, 192)])
def test_sparse_matches_numpy(rng: np.random.Generator, m: int, n: int, k: int) -> None:
    got, want, _ = run_sparse(rng, m, n, k)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_sparse_halves_the_tensor_core_work_on_h100(rng: np.random.Generator) -> None:
    """The same shape through wgmma.sp: half the wgmma instructions, half the Tensor Core occupancy at the
    configured 200% sparse rate, and fewer cycles (by how much depends on the TMA keys still to be
    measured: 128 x 128 x 1024 takes 12854 dense and 7735 sparse cycles with the placeholders)."""
    *_, dense = run(rng, 128, 128, 1024, config="h100")
    *_, sparse = run_sparse(rng, 128, 128, 1024, config="h100")
    assert sparse["hopper_wgmma_insts"] == dense["hopper_wgmma_insts"] // 2
    assert sparse["hopper_wgmma_busy_cycles"] == dense["hopper_wgmma_busy_cycles"] // 2
    assert sparse["kernel_cycles"] < dense["kernel_cycles"]

"""The Hopper GEMM (tests/ext/cuda/gemm_wgmma.cu: TMA loads, a 3-stage mbarrier ring, one producer and two
consumer warpgroups issuing wgmma) on the engine vs numpy, functional and timed on h100; the gpu-marked
test runs the same PTX on an H100 with the driver's tensor maps and reports its TFLOP/s at 4096^3."""

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


def test_committed_ptx_is_current(tmp_path: Path) -> None:
    nvcc = build.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not installed")
    build.compile_ptx(CUDA / "gemm_wgmma.cu", tmp_path / "g.ptx", nvcc)
    assert (tmp_path / "g.ptx").read_text() == PTX.read_text()


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

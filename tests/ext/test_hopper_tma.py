"""cp.async.bulk.tensor (TMA) and mbarrier (engine/ext/hopper) on the engine vs numpy: 2D and 3D boxes of
random data, every swizzle, out-of-bounds fill, the tx-count completing the mbarrier's phase; the tensor
map's host-side checks; mbarrier misuse is an error. The gpu-marked test runs the same PTX on an sm_90 GPU
with the driver's cuTensorMapEncodeTiled map."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from stcsim.sim import Engine, LaunchError, SimFault, TensorMap

SWZ_BITS = {"none": 0, "32B": 1, "64B": 2, "128B": 3}


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def tma_ptx(rank: int, nbytes: int) -> str:
    """128 threads: thread 0 inits the mbarrier, expects `nbytes` and issues one TMA box load at coordinates
    c0..; every thread waits on phase 0 with try_wait.parity, then the block copies the box to `out`."""
    coords = ", ".join(f"%r{10 + d}" for d in range(rank))
    cparams = "".join(f", .param .u32 c{d}" for d in range(rank))
    loads = "\n".join(f"  ld.param.u32 %r{10 + d}, [c{d}];" for d in range(rank))
    return f"""
.version 8.7
.target sm_90a
.address_size 64
.visible .entry tma(.param .align 64 .b8 tmap[128], .param .u64 out{cparams})
{{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<10>;
  .shared .align 1024 .b8 buf[{nbytes}];
  .shared .align 8 .b64 bar;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, bar;
  mov.u32 %r3, buf;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $SYNC;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
  fence.proxy.async.shared::cta;
$SYNC:
  bar.sync 0;
  @%p1 bra $WAIT;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], {nbytes};
  mov.b64 %rd1, tmap;
  cvta.param.u64 %rd2, %rd1;
{loads}
  cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes
      [%r3], [%rd2, {{{coords}}}], [%r2];
$WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  @!%p2 bra $WAIT;
  ld.param.u64 %rd3, [out];
  mov.u32 %r4, %r1;
$COPY:
  setp.ge.u32 %p3, %r4, {nbytes // 4};
  @%p3 bra $END;
  shl.b32 %r5, %r4, 2;
  add.u32 %r6, %r3, %r5;
  ld.shared.u32 %r7, [%r6];
  mul.wide.u32 %rd4, %r4, 4;
  add.s64 %rd5, %rd3, %rd4;
  st.global.u32 [%rd5], %r7;
  add.u32 %r4, %r4, 128;
  bra $COPY;
$END:
  ret;
}}
"""


def expected_image(tensor: np.ndarray, coords: tuple[int, ...], box: tuple[int, ...], swizzle: str,
                   fill: float = 0.0) -> np.ndarray:
    """The box (numpy axes outermost first; coords/box innermost first) with OOB elements filled, laid out
    row-major and swizzled by 16-byte chunks (Swizzle<s,4,3> on the 1024-aligned buffer's offsets)."""
    rank = tensor.ndim
    idx = [np.arange(coords[d], coords[d] + box[d]) for d in range(rank)]
    grids = np.meshgrid(*reversed(idx), indexing="ij")  # outermost first
    inside = np.ones(grids[0].shape, bool)
    for axis, g in enumerate(grids):
        inside &= (g >= 0) & (g < tensor.shape[axis])
    clipped = [np.clip(g, 0, tensor.shape[axis] - 1) for axis, g in enumerate(grids)]
    box_vals = np.where(inside, tensor[tuple(clipped)], np.array(fill, tensor.dtype))
    raw = box_vals.reshape(-1).view(np.uint8)
    a = np.arange(raw.size)
    mask = (1 << SWZ_BITS[swizzle]) - 1
    img = np.zeros_like(raw)
    img[a ^ (((a >> 7) & mask) << 4)] = raw
    return img


def run_tma(tensor: np.ndarray, box: tuple[int, ...], coords: tuple[int, ...], swizzle: str,
            config: str | None = None) -> tuple[np.ndarray, dict]:
    eng = Engine(config)
    rank = tensor.ndim
    nbytes = int(np.prod(box)) * tensor.itemsize
    eng.load_ptx(tma_ptx(rank, nbytes))
    src = eng.malloc(tensor.nbytes)
    eng.copy_to(src, tensor)
    out = eng.malloc(nbytes)
    dims = tuple(reversed(tensor.shape))
    strides = tuple(int(s) for s in reversed(tensor.strides[:-1]))
    tmap = TensorMap("u16", src, dims, strides, box, swizzle=swizzle)
    stats = eng.launch("tma", 1, 128, [tmap, out, *coords])
    return eng.copy_from(out, nbytes, np.uint8), stats


@pytest.mark.parametrize("swizzle", list(SWZ_BITS))
def test_2d_box_every_swizzle(rng: np.random.Generator, swizzle: str) -> None:
    inner = {"none": 64, "32B": 16, "64B": 32, "128B": 64}[swizzle]
    tensor = rng.integers(1, 2**16, (40, 104), dtype=np.uint16)
    box = (inner, 16)
    x = int(rng.integers(0, 104 - inner)) // 8 * 8  # a 16-byte boundary (the H100 faults otherwise)
    coords = (x if swizzle != "none" else int(rng.integers(0, 104 - inner)), int(rng.integers(0, 40 - 16)))
    got, _ = run_tma(tensor, box, coords, swizzle)
    np.testing.assert_array_equal(got, expected_image(tensor, coords, box, swizzle))


def test_3d_box_out_of_bounds_is_zero_filled(rng: np.random.Generator) -> None:
    tensor = rng.integers(1, 2**16, (5, 12, 40), dtype=np.uint16)
    box = (32, 8, 4)
    coords = (int(rng.choice([16, 24])), -3, 3)  # past the inner end, before the rows, past the planes
    got, _ = run_tma(tensor, box, coords, "128B")
    want = expected_image(tensor, coords, box, "128B")
    np.testing.assert_array_equal(got, want)
    assert (want == 0).any() and (want != 0).any()


def test_timed_on_h100_waits_for_the_copy_engine(rng: np.random.Generator) -> None:
    """The consumer's wait ends hopper.tma_latency + bytes / hopper.tma_bytes_per_cycle after the issue."""
    tensor = rng.integers(1, 2**16, (64, 64), dtype=np.uint16)
    small = run_tma(tensor, (64, 8), (0, 0), "128B", config="h100")[1]["kernel_cycles"]
    large = run_tma(tensor, (64, 64), (0, 0), "128B", config="h100")[1]["kernel_cycles"]
    from stcsim.config import load_config

    bw = load_config("h100").flat()["hopper.tma_bytes_per_cycle"]
    extra_bytes = 64 * 56 * 2
    assert large - small >= extra_bytes // bw  # the bigger box waits longer by at least its transfer time


@pytest.mark.sim_only
@pytest.mark.sim_only
def test_a_swizzled_box_off_a_16_byte_boundary_is_a_fault(rng: np.random.Generator) -> None:
    """benchmarks/gpu/tma_probe.py on the H100: a 128B-swizzled box starting at byte 40 of its row is an
    illegal instruction, at byte 32 it copies."""
    tensor = rng.integers(1, 2**16, (40, 104), dtype=np.uint16)
    run_tma(tensor, (64, 16), (16, 10), "128B")
    with pytest.raises(SimFault, match="16-byte boundary of its row \\(byte 40\\)"):
        run_tma(tensor, (64, 16), (20, 10), "128B")


def test_other_configs_refuse_it(rng: np.random.Generator) -> None:
    tensor = rng.integers(1, 2**16, (16, 64), dtype=np.uint16)
    with pytest.raises(LaunchError, match="hopper.enabled"):
        run_tma(tensor, (64, 16), (0, 0), "none", config="a100")


def test_tensor_map_checks_its_fields() -> None:
    with pytest.raises(LaunchError, match="TensorMap.box: with 64B swizzle"):
        TensorMap("f16", 0x1000, (128, 64), (256,), (64, 8), swizzle="64B")
    with pytest.raises(LaunchError, match="TensorMap.strides"):
        TensorMap("f16", 0x1000, (128, 64), (250,), (64, 8))
    with pytest.raises(LaunchError, match="TensorMap.address"):
        TensorMap("f16", 0x1008, (128, 64), (256,), (64, 8))
    assert TensorMap("bf16", 0x1000, (128, 64, 3), (256, 256 * 64), (64, 8, 2)).box_bytes == 64 * 8 * 2 * 2


@pytest.mark.sim_only
def test_a_plain_buffer_is_not_a_tensor_map(rng: np.random.Generator) -> None:
    eng = Engine()
    eng.load_ptx(tma_ptx(2, 2048))
    out = eng.malloc(2048)
    with pytest.raises(SimFault, match="not a tensor map of stcsim's encoding"):
        eng.launch("tma", 1, 128, [bytes(128), out, 0, 0])
    with pytest.raises(LaunchError, match="128-byte aggregate"):
        eng.launch("tma", 1, 128, [out, out, 0, 0])


def gpu_tma(tensor: np.ndarray, box: tuple[int, int], coords: tuple[int, int], tmp_path) -> np.ndarray:
    """tma_ptx on an sm_90 GPU through CuPy with the driver's map (cuTensorMapEncodeTiled) of a 2D u16
    `tensor`, 128B swizzle: the box image it copied out."""
    import cupy as cp

    nbytes = box[0] * box[1] * 2
    src = cp.asarray(tensor)
    out = cp.zeros(nbytes, cp.uint8)
    tmap = TensorMap("u16", src.data.ptr, (tensor.shape[1], tensor.shape[0]), (tensor.strides[0],), box,
                     swizzle="128B")
    raw = np.frombuffer(tmap.driver_encode(), np.dtype((np.void, 128)))[0]
    ptx = tmp_path / "tma.ptx"
    ptx.write_text(tma_ptx(2, nbytes))
    func = cp.RawModule(path=str(ptx)).get_function("tma")
    func((1,), (128,), (raw, out, np.int32(coords[0]), np.int32(coords[1])))
    return cp.asnumpy(out)


@pytest.mark.gpu
def test_driver_tensor_map_on_gpu(rng: np.random.Generator, tmp_path) -> None:
    """The same PTX on an sm_90 GPU with the driver's map, vs numpy. The box starts on a 16-byte boundary
    of a tensor whose rows are 256 bytes (as the Hopper GEMM's and the microbenchmark's, which ran on the
    H100); benchmarks/gpu/tma_probe.py tries the unaligned starts in processes of their own (a TMA fault is
    a sticky cudaErrorIllegalInstruction that ends the CUDA context)."""
    pytest.importorskip("cupy")
    tensor = rng.integers(1, 2**16, (40, 128), dtype=np.uint16)
    box = (64, 16)
    coords = (8 * int(rng.integers(0, 9)), int(rng.integers(0, 25)))
    got = gpu_tma(tensor, box, coords, tmp_path)
    np.testing.assert_array_equal(got, expected_image(tensor, coords, box, "128B"))


@pytest.mark.gpu
def test_gpu_engine_passes_a_tensor_map(rng: np.random.Generator) -> None:
    """stcsim.gpu.GpuEngine takes a TensorMap for a `.b8 tmap[128]` parameter (the driver's encoding, by
    value), as the simulator's Engine takes it (its own encoding): the same box, vs numpy."""
    pytest.importorskip("cupy")
    from stcsim.gpu import GpuEngine

    tensor = rng.integers(1, 2**16, (40, 128), dtype=np.uint16)
    box = (64, 16)
    coords = (8 * int(rng.integers(0, 9)), int(rng.integers(0, 25)))
    eng = GpuEngine(repeats=0)
    eng.load_ptx(tma_ptx(2, 64 * 16 * 2))
    src, out = eng.malloc(tensor.nbytes), eng.malloc(64 * 16 * 2)
    eng.copy_to(src, tensor)
    tmap = TensorMap("u16", src, (128, 40), (256,), box, swizzle="128B")
    eng.launch("tma", (1, 1, 1), (128, 1, 1), [tmap, out, *coords])
    got = eng.copy_from(out, (64 * 16 * 2,), np.uint8)
    np.testing.assert_array_equal(got, expected_image(tensor, coords, box, "128B"))

"""The calibration suite beyond the GEMMs: memory-bound, irregular and Tensor-Core-from-global kernels.

Each case is one launch of a kernel of ``benchmarks/calibration/kernels/*.cu`` (CUDA C++ compiled by
``nvcc -arch=sm_80 -O3 -ptx`` to the committed ``.ptx`` beside it) at one size, with random inputs and a
numpy reference of its output. The same plan runs on the simulator and, through CuPy, on the GPU; kernels
that accumulate (atomics) are checked against ``launches`` times the reference, since the GPU runner
launches a warm-up before the measured launch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

KERNEL_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration" / "kernels"
SMS = 132  # CTAs per wave are counted against the H100's SMs: the suite is the H100's
MIB = 1 << 20


@dataclass(frozen=True)
class Buf:
    """A kernel argument that is the device address of plan buffer `index`."""

    index: int


@dataclass
class Plan:
    """One launch: device buffers (copied in, in order), arguments, geometry and the expected output."""

    buffers: list[np.ndarray]
    args: list[Any]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    out: int  # the buffer read back and checked
    expected: Callable[[int], np.ndarray]  # launches -> expected content of buffers[out]
    rtol: float = 0.0
    shared_bytes: int = 0


@dataclass(frozen=True)
class Case:
    """A kernel (its entry name) at one shape; `plan(rng)` builds the launch with fresh random inputs."""

    kernel: str
    module: str  # benchmarks/calibration/kernels/<module>.ptx
    shape: str
    plan: Callable[[np.random.Generator], Plan] = field(compare=False)

    @property
    def ptx(self) -> Path:
        """The committed PTX of the case's kernel."""
        return KERNEL_DIR / f"{self.module}.ptx"


class CaseCheckError(AssertionError):
    """A calibration case's output differs from its numpy reference."""


def _uniform(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, n).astype(np.float32)


def poison(n: int) -> np.ndarray:
    """An output buffer of n float32 NaNs: an element the kernel does not write fails the numpy check."""
    return np.full(n, np.nan, np.float32)


def _grid_stride(items: int, block: int, waves: int = 8) -> tuple[int, int, int]:
    return (max(1, min(-(-items // block), SMS * waves)), 1, 1)


def _copy(nbytes: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        x = _uniform(rng, nbytes // 4)
        return Plan([x, poison(x.size)], [Buf(0), Buf(1), x.size // 4], _grid_stride(x.size // 4, 256),
                    (256, 1, 1), 1, lambda _: x)
    return plan


def _write(nbytes: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        v = float(np.float32(rng.uniform(-8, 8)))
        n = nbytes // 4
        want = (np.float32(v) + np.tile(np.arange(4, dtype=np.float32), n // 4)).astype(np.float32)
        return Plan([poison(n)], [Buf(0), v, n // 4], _grid_stride(n // 4, 256), (256, 1, 1), 0,
                    lambda _: want)
    return plan


def _read(nbytes: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        x = _uniform(rng, nbytes // 4)
        total = float(x.astype(np.float64).sum())
        grid = _grid_stride(x.size // 4, 256)
        return Plan([x, np.zeros(1, np.float32)], [Buf(0), Buf(1), x.size // 4], grid, (256, 1, 1), 1,
                    lambda launches: np.array([launches * total]), rtol=1e-3)
    return plan


def _strided(n: int, stride: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        x = _uniform(rng, n)
        want = x[(np.arange(n, dtype=np.uint64) * stride) & (n - 1)] * np.float32(2)
        return Plan([x, poison(n)], [Buf(0), Buf(1), stride, n - 1, n], (n // 256, 1, 1), (256, 1, 1), 1,
                    lambda _: want)
    return plan


def _gather(n: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        x = _uniform(rng, n)
        idx = rng.integers(0, n, n).astype(np.int32)
        return Plan([x, idx, poison(n)], [Buf(0), Buf(1), Buf(2), n], (n // 256, 1, 1), (256, 1, 1), 2,
                    lambda _: x[idx] + np.float32(1))
    return plan


def _histogram(n: int, bins: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        x = rng.integers(0, 1 << 30, n).astype(np.int32)
        want = np.bincount(x % bins, minlength=bins).astype(np.uint32)
        return Plan([x, np.zeros(bins, np.uint32)], [Buf(0), Buf(1), bins, n], _grid_stride(n, 256, 4),
                    (256, 1, 1), 1, lambda launches: launches * want)
    return plan


def _reduce(n: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        x = rng.integers(0, 1 << 30, n).astype(np.int32)
        total = int(x.astype(np.uint64).sum())
        return Plan([x, np.zeros(1, np.uint64)], [Buf(0), Buf(1), n], _grid_stride(n, 256, 4), (256, 1, 1), 1,
                    lambda launches: np.array([launches * total], np.uint64))
    return plan


def divergent_reference(trips: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The divergent_loop kernel in numpy: per element, `trips` steps of one of two affine maps."""
    y = x.astype(np.float32).copy()
    lane = np.arange(x.size)
    for j in range(int(trips.max(initial=0))):
        on = j < trips
        odd = ((j ^ lane) & 1).astype(bool)
        y = np.where(on & odd, y * np.float32(0.5) + np.float32(1), np.where(on & ~odd, y * np.float32(0.25)
                     - np.float32(1), y)).astype(np.float32)
    return y


def _divergent(n: int, max_trips: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        trips = rng.integers(0, max_trips + 1, n).astype(np.int32)
        x = _uniform(rng, n)
        return Plan([trips, x, poison(n)], [Buf(0), Buf(1), Buf(2), n], (n // 128, 1, 1), (128, 1, 1), 2,
                    lambda _: divergent_reference(trips, x), rtol=1e-5)
    return plan


def collatz_steps(start: np.ndarray) -> np.ndarray:
    """Collatz step counts to reach 1, vectorised in numpy."""
    v = start.astype(np.uint64)
    steps = np.zeros(v.size, np.uint32)
    while np.any(v != 1):
        live = v != 1
        steps += live
        v = np.where(live, np.where(v & 1, 3 * v + 1, v // 2), v)
    return steps


def _collatz(n: int, top: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        start = rng.integers(1, top, n).astype(np.uint32)
        return Plan([start, np.zeros(n, np.uint32)], [Buf(0), Buf(1), n], (n // 128, 1, 1), (128, 1, 1), 1,
                    lambda _: collatz_steps(start))
    return plan


def fma_reference(x: np.ndarray, iters: int) -> np.ndarray:
    """The fma_loop kernel in numpy (float32, fused multiply-add rounded as fma: one rounding)."""
    chains = [(x.astype(np.float64) + k, 1.0 - 0.001 * (k + 1), 0.001 * (k + 1)) for k in range(4)]
    out = []
    for y, a, b in chains:
        a32, b32 = float(np.float32(a)), float(np.float32(b))
        y = y.astype(np.float32).astype(np.float64)
        for _ in range(iters):
            y = (y * a32 + b32).astype(np.float32).astype(np.float64)
        out.append(y.astype(np.float32))
    return ((out[0] + out[1]) + (out[2] + out[3])).astype(np.float32)


def _fma(ctas: int, iters: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        x = _uniform(rng, ctas * 128)
        return Plan([x, poison(x.size)], [Buf(0), Buf(1), iters], (ctas, 1, 1), (128, 1, 1), 1,
                    lambda _: fma_reference(x, iters), rtol=1e-5)
    return plan


def _smem(stride: int, iters: int, ctas: int = SMS) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        x = _uniform(rng, ctas * 1024)
        tid = np.arange(256)
        idx = ((tid[:, None] + np.arange(iters)[None, :]) * stride) & 1023
        tiles = x.reshape(ctas, 1024).astype(np.float64)
        want = tiles[:, idx].sum(axis=2).ravel()
        return Plan([x, poison(ctas * 256)], [Buf(0), Buf(1), stride, iters], (ctas, 1, 1), (256, 1, 1), 1,
                    lambda _: want, rtol=1e-4)
    return plan


def _occupancy(smem_bytes: int, ctas: int) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        words = smem_bytes // 4
        x = _uniform(rng, ctas * words).reshape(ctas, words)
        prod = (x * x[:, ::-1]).astype(np.float64)  # tile[words-1-j] * tile[j]
        want = np.stack([prod[:, t::256].sum(axis=1) for t in range(256)], axis=1).ravel()
        return Plan([x.ravel(), poison(ctas * 256)], [Buf(0), Buf(1), words], (ctas, 1, 1), (256, 1, 1), 1,
                    lambda _: want, rtol=1e-4, shared_bytes=smem_bytes)
    return plan


def _fragments(m: int, n: int, k: int, mma: bool) -> Callable[[np.random.Generator], Plan]:
    def plan(rng: np.random.Generator) -> Plan:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
        want = (a.astype(np.float64) @ b.astype(np.float64)).ravel()
        bmat = np.ascontiguousarray(b.T) if mma else b
        grid = (n // (32 if mma else 64), m // 16, 1)
        return Plan([a.ravel(), bmat.ravel(), poison(m * n)], [Buf(0), Buf(1), Buf(2), m, n, k], grid,
                    (128, 1, 1), 2, lambda _: want, rtol=1e-3)
    return plan


# (kernel, module, shape, plan): sizes chosen so that the whole suite simulates in minutes on two cores;
# the 1 GiB copy is measured on silicon only (benchmarks/calibration/silicon_memory.py), not in the suite.
CASES: tuple[Case, ...] = (
    *(Case("stream_copy", "memory", f"{s}MiB", _copy(s * MIB)) for s in (1, 16, 64, 256)),
    *(Case("stream_read", "memory", f"{s}MiB", _read(s * MIB)) for s in (1, 16, 64)),
    *(Case("stream_write", "memory", f"{s}MiB", _write(s * MIB)) for s in (1, 16, 64)),
    *(Case("strided_read", "access", f"n=4M,stride={s}", _strided(1 << 22, s)) for s in (1, 4, 32)),
    *(Case("gather", "access", f"n={n}", _gather(n)) for n in (1 << 18, 1 << 22)),
    *(Case("histogram_atomic", "atomics", f"n=1M,bins={b}", _histogram(1 << 20, b)) for b in (16, 4096)),
    *(Case("reduce_atomic", "atomics", f"n={n}", _reduce(n)) for n in (1 << 20, 1 << 24)),
    Case("divergent_loop", "control", "n=256K,trips<=64", _divergent(1 << 18, 64)),
    Case("divergent_loop", "control", "n=32K,trips<=512", _divergent(1 << 15, 512)),
    Case("collatz", "control", "n=64K,start<1e6", _collatz(1 << 16, 1_000_000)),
    Case("fma_loop", "compute", "ctas=8,iters=4096", _fma(8, 4096)),
    Case("fma_loop", "compute", "ctas=132,iters=1024", _fma(SMS, 1024)),
    Case("fma_loop", "compute", "ctas=4224,iters=64", _fma(SMS * 32, 64)),
    *(Case("smem_stride", "compute", f"stride={s},iters=256", _smem(s, 256)) for s in (1, 2, 32)),
    Case("occupancy_smem", "compute", "smem=8KiB,ctas=1056", _occupancy(8 << 10, SMS * 8)),
    Case("occupancy_smem", "compute", "smem=96KiB,ctas=264", _occupancy(96 << 10, SMS * 2)),
    *(Case("wmma_frag_global", "fragments", f"{s}x{s}x{s}", _fragments(s, s, s, False)) for s in (256, 512)),
    *(Case("mma_frag_global", "fragments", f"{s}x{s}x{s}", _fragments(s, s, s, True)) for s in (256, 512)),
)

# One tiny case per kernel (seconds to simulate in all): the numpy checks of the tests.
SMOKE: tuple[Case, ...] = (
    Case("stream_copy", "memory", "64KiB", _copy(64 << 10)),
    Case("stream_read", "memory", "64KiB", _read(64 << 10)),
    Case("stream_write", "memory", "64KiB", _write(64 << 10)),
    Case("strided_read", "access", "n=16K,stride=32", _strided(1 << 14, 32)),
    Case("gather", "access", "n=8K", _gather(1 << 13)),
    Case("histogram_atomic", "atomics", "n=16K,bins=16", _histogram(1 << 14, 16)),
    Case("reduce_atomic", "atomics", "n=64K", _reduce(1 << 16)),
    Case("divergent_loop", "control", "n=4K,trips<=32", _divergent(1 << 12, 32)),
    Case("collatz", "control", "n=1K,start<1e4", _collatz(1 << 10, 10_000)),
    Case("fma_loop", "compute", "ctas=4,iters=64", _fma(4, 64)),
    Case("smem_stride", "compute", "stride=2,iters=16,ctas=4", _smem(2, 16, 4)),
    Case("occupancy_smem", "compute", "smem=96KiB,ctas=4", _occupancy(96 << 10, 4)),
    Case("wmma_frag_global", "fragments", "64x64x32", _fragments(64, 64, 32, False)),
    Case("mma_frag_global", "fragments", "32x64x48", _fragments(32, 64, 48, True)),
)


def run_case(case: Case, engine: Any, rng: np.random.Generator, launches: int = 1) -> dict:
    """Loads the case's PTX, launches it on `engine` (the simulator or a GpuEngine) and checks the output
    against numpy (`launches`: how many times the engine runs the kernel, for accumulating kernels).
    Returns the engine's stats; raises CaseCheckError on a wrong result."""
    p = case.plan(rng)
    engine.load_ptx(case.ptx.read_text())
    addrs = []
    for arr in p.buffers:
        addr = engine.malloc(arr.nbytes)
        engine.copy_to(addr, arr)
        addrs.append(addr)
    args = [addrs[a.index] if isinstance(a, Buf) else a for a in p.args]
    stats = engine.launch(case.kernel, p.grid, p.block, args, p.shared_bytes)
    out = p.buffers[p.out]
    got = engine.copy_from(addrs[p.out], out.shape, out.dtype)
    want = np.asarray(p.expected(launches))
    if p.rtol:
        ok = np.allclose(got.astype(np.float64), want, rtol=p.rtol, atol=p.rtol * float(np.abs(want).max()))
    else:
        ok = np.array_equal(got, want.astype(got.dtype))
    if not ok:
        bad = int(np.argmax(~np.isclose(got.astype(np.float64), want, rtol=max(p.rtol, 1e-12))))
        raise CaseCheckError(f"{case.kernel} {case.shape}: element {bad} is {got.ravel()[bad]}, "
                             f"numpy says {want.ravel()[bad]}")
    return stats

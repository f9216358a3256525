"""Shared machinery of the functional-core tests (imported as `simkit`): the committed PTX of
tests/sim/cuda, a launcher that runs its kernels on the simulator engine, and exact-comparison helpers.

Each tests/sim/cuda/NAME.cu is compiled with ``nvcc -ptx -arch=sm_80 -O3`` into the committed NAME.ptx that
the tests load (`compile_ptx` regenerates one; ``python tests/sim/simkit.py`` regenerates them all).

With ``STCSIM_TEST_BACKEND=gpu`` the same tests launch the kernels on a real GPU through CuPy instead: that
checks the numpy references (and the hardware facts the tests assume) against the hardware itself. Tests
of simulator-only behaviour (error messages) carry the ``sim_only`` marker and are skipped there.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stcsim.kernels.build import NVCC_FLAGS, compile_ptx, find_nvcc, nvcc_version
from stcsim.kernels.build import ptx_compiler_version as ptx_version

__all__ = ["NVCC_FLAGS", "compile_ptx", "find_nvcc", "nvcc_version", "ptx_version"]

CUDA_DIR = Path(__file__).resolve().parent / "cuda"
BACKEND = os.environ.get("STCSIM_TEST_BACKEND", "sim")

Dim = int | Sequence[int]


# ---- compiling the CUDA sources (the kernel set's nvcc helpers, same flags) -----------------------------
def cuda_sources() -> list[Path]:
    """The CUDA sources of the tests, sorted."""
    return sorted(CUDA_DIR.glob("*.cu"))


# ---- launching kernels -----------------------------------------------------------------------------------
def _dims(d: Dim) -> tuple[int, ...]:
    return (int(d),) if isinstance(d, int | np.integer) else tuple(int(x) for x in d)


class Kernels:
    """The kernels of one committed PTX file, launched on the simulator engine (or, for reference, a GPU).

    `launch(name, grid, block, *args)` takes numpy arrays (copied to fresh device buffers, passed as
    pointers, and copied back) and numpy scalars (passed by value with their own width). It returns the
    arrays as they are after the kernel, in argument order.
    """

    def __init__(self, ptx: Path) -> None:
        self.path = ptx
        if BACKEND == "gpu":
            import cupy

            self._cp = cupy
            self._module = cupy.RawModule(path=str(ptx))
        else:
            from stcsim.sim import Engine

            self.engine = Engine()
            self.names = self.engine.load_ptx(ptx)
        self.last_stats: dict[str, Any] = {}
        self.last_addresses: list[int] = []  # device addresses of the array arguments of the last launch

    def launch(self, name: str, grid: Dim, block: Dim, *args: Any, shared_bytes: int = 0) -> list[np.ndarray]:
        """Runs kernel `name`; returns the array arguments as the kernel left them."""
        for a in args:
            if not isinstance(a, np.ndarray | np.generic):
                raise TypeError(f"pass numpy arrays or numpy scalars, got {type(a).__name__}")
        if BACKEND == "gpu":
            return self._launch_gpu(name, grid, block, args, shared_bytes)
        e = self.engine
        self.last_addresses = []
        packed: list[int | float] = []
        try:
            for a in args:
                if isinstance(a, np.ndarray):
                    addr = e.malloc(max(a.nbytes, 1))
                    self.last_addresses.append(addr)
                    e.copy_to(addr, a)
                    packed.append(addr)
                else:
                    packed.append(a.item())
            self.last_stats = e.launch(
                name, list(_dims(grid)), list(_dims(block)), packed, shared_bytes=shared_bytes
            )
            arrays = [a for a in args if isinstance(a, np.ndarray)]
            return [
                e.copy_from(addr, a.shape, a.dtype)
                for addr, a in zip(self.last_addresses, arrays, strict=True)
            ]
        finally:
            for addr in self.last_addresses:
                e.free(addr)

    def _launch_gpu(
        self, name: str, grid: Dim, block: Dim, args: Sequence[Any], shared: int
    ) -> list[np.ndarray]:
        cp = self._cp
        dev = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        fn = self._module.get_function(name)
        g, b = _dims(grid), _dims(block)
        fn(g + (1,) * (3 - len(g)), b + (1,) * (3 - len(b)), tuple(dev), shared_mem=shared)
        cp.cuda.runtime.deviceSynchronize()
        outs = [d.get() for d in dev if isinstance(d, cp.ndarray)]
        dump = os.environ.get("STCSIM_DUMP_DIR")
        if dump:  # record the launch for a bit-for-bit replay on the simulator
            global _DUMPED
            _DUMPED += 1
            arrays = {f"arg{i}": np.asarray(a) for i, a in enumerate(args)}
            arrays.update({f"out{i}": o for i, o in enumerate(outs)})
            meta = np.asarray([self.path.stem, name, repr(g), repr(b), str(shared)])
            np.savez(Path(dump, f"{_DUMPED:05d}_{name}.npz"), meta=meta, **arrays)
        return outs


_LOADED: dict[str, Kernels] = {}
_DUMPED = 0


def kernels(stem: str) -> Kernels:
    """The (cached) kernels of tests/sim/cuda/`stem`.ptx."""
    if stem not in _LOADED:
        _LOADED[stem] = Kernels(CUDA_DIR / f"{stem}.ptx")
    return _LOADED[stem]


# ---- the host SIMD paths against the portable code ---------------------------------------------------------
def run_python(script: str, args: Sequence[str], portable: bool) -> None:
    """Runs `script` in a child Python with `args`, with the engine's host SIMD kernels (portable False) or
    with STCSIM_PORTABLE set (the portable code): the variable is read once per process, so each path needs
    its own."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "STCSIM_PORTABLE"}
    if portable:
        env["STCSIM_PORTABLE"] = "1"
    subprocess.run([sys.executable, "-c", script, *args], env=env, check=True)


# ---- comparisons -----------------------------------------------------------------------------------------
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits(a: np.ndarray) -> np.ndarray:
    """The raw bit patterns of an array, as unsigned integers of the same width."""
    a = np.asarray(a)
    return a.view(_UINT[a.dtype.itemsize])


def assert_bits(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """Bit-exact equality of two arrays of the same shape (floats compared by their bit patterns)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    gb, wb = bits(got), bits(want.astype(got.dtype))
    bad = np.flatnonzero(gb.reshape(-1) != wb.reshape(-1))
    if bad.size:
        i = int(bad[0])
        raise AssertionError(
            f"{what}: {bad.size} of {gb.size} differ; first at flat index {i}: got {got.reshape(-1)[i]!r} "
            f"(0x{int(gb.reshape(-1)[i]):x}), want {want.reshape(-1)[i]!r} (0x{int(wb.reshape(-1)[i]):x})"
        )


if __name__ == "__main__":  # regenerate the committed PTX
    nvcc = find_nvcc()
    if nvcc is None:
        sys.exit("nvcc not found: the committed PTX stays as it is")
    for src in cuda_sources():
        diag = compile_ptx(src, src.with_suffix(".ptx"), nvcc)
        print(f"{src.with_suffix('.ptx').name}{': ' + diag if diag else ''}")

"""Run a GEMM kernel of the set on any engine: the simulator's or a real GPU's."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from stcsim.kernels.gemm import GemmKernel
from stcsim.kernels.problem import GemmProblem


class DeviceEngine(Protocol):
    """What run_gemm needs of an engine (stcsim.sim.Engine and stcsim.gpu.GpuEngine both provide it)."""

    def malloc(self, nbytes: int) -> int: ...

    def copy_to(self, addr: int, array: np.ndarray) -> None: ...

    def copy_from(self, addr: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray: ...

    def load_ptx(self, path_or_text: str) -> None: ...

    def launch(
        self,
        kernel: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: list[int | float],
        shared_bytes: int = 0,
    ) -> Any: ...


def run_gemm(
    kernel: GemmKernel, engine: DeviceEngine, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, Any]:
    """C = A @ B with `kernel` on `engine`: lay out, allocate, copy, launch, copy back.

    C is poisoned with NaN before the launch, so elements the kernel fails to write show up. Returns the
    m x n result (kernel.layout.c_dtype) and whatever the engine's launch returned (its stats).
    """
    problem = GemmProblem.of(a.shape, b.shape)
    ok, reason = kernel.can_implement(problem)
    if not ok:
        raise ValueError(f"{kernel.procedural_name} cannot run {problem}: {reason}")
    layout = kernel.layout
    a_dev, b_dev = layout.pack_a(a), layout.pack_b(b)
    c_poison = np.full(layout.c_shape(problem), np.nan, dtype=layout.c_dtype)
    a_ptr, b_ptr, c_ptr = (engine.malloc(x.nbytes) for x in (a_dev, b_dev, c_poison))
    engine.copy_to(a_ptr, a_dev)
    engine.copy_to(b_ptr, b_dev)
    engine.copy_to(c_ptr, c_poison)
    engine.load_ptx(str(kernel.ptx_path))
    grid, block, shared_bytes = kernel.launch_geometry(problem)
    stats = engine.launch(kernel.entry, grid, block, kernel.args(problem, a_ptr, b_ptr, c_ptr), shared_bytes)
    c = engine.copy_from(c_ptr, c_poison.shape, layout.c_dtype)
    return layout.unpack_c(c, problem), stats


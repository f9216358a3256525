"""Run a kernel of the set on any engine (the simulator's or a real GPU's): prepare, allocate, copy, launch,
copy back. The same steps for every kernel, whatever operands its pattern needs; a generated kernel
(SparseRT) loads the module generated for the operands' weights."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from stcsim.kernels.operands import Operands
from stcsim.kernels.protocol import Kernel, as_pattern, ptx_for
from stcsim.sparsity.base import Pattern


class DeviceEngine(Protocol):
    """What a launch needs of an engine (stcsim.sim.Engine and stcsim.gpu.GpuEngine both provide it)."""

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


def launch(
    kernel: Kernel, engine: DeviceEngine, operands: Operands, sample: float = 0.0, values: bool = True,
    timing: bool = True,
) -> tuple[np.ndarray | None, Any]:
    """Run prepared operands on `engine`: allocate and copy every operand array, load the PTX, launch with
    `kernel.args`, copy the outputs back. Returns the m x n result (`kernel.unpack`) and whatever the engine's
    launch returned (its stats). `sample` > 0: sampled simulation; `values=False`: cycles only, the result
    not computed where it cannot reach the timing (then it is None: outputs that hold no values are not
    copied back, hundreds of MB for a batched attention GEMM); `timing=False`: functional only, no cycles
    (the simulator's `Engine.launch` options)."""
    pointers = {a.name: engine.malloc(a.data.nbytes) for a in operands}
    for a in operands:
        engine.copy_to(pointers[a.name], a.data)
    engine.load_ptx(str(ptx_for(kernel, operands)))
    grid, block, shared_bytes = kernel.launch_geometry(operands.problem)
    options: dict[str, Any] = {"sample": sample} if sample else {}
    if not values:
        options["values"] = False
    if not timing:
        options["timing"] = False
    stats = engine.launch(kernel.entry, grid, block, kernel.args(operands, pointers), shared_bytes, **options)
    if not values and stats.get("mma_values_skipped") == 1.0:
        return None, stats
    outputs = {a.name: engine.copy_from(pointers[a.name], a.data.shape, a.dtype) for a in operands.outputs}
    return kernel.unpack(operands, outputs), stats


def run_gemm(
    kernel: Kernel,
    engine: DeviceEngine,
    a: np.ndarray,
    b: np.ndarray,
    *,
    pattern: Pattern | str = "dense",
    sparsity: float = 0.0,
) -> tuple[np.ndarray, Any]:
    """D = prune(A) @ B with `kernel` on `engine`: prepare the operands (A pruned to `sparsity` and encoded
    through `pattern`; the kernel set poisons outputs with NaN, so elements a kernel fails to write show up),
    then `launch` them. Returns the m x n result and the engine's stats."""
    return launch(kernel, engine, kernel.prepare(a, b, as_pattern(pattern), sparsity))

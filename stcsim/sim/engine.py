"""`Engine`: the Python face of the C++ engine (`stcsim._engine`).

The engine owns simulated device memory and loaded PTX modules. `launch` runs a kernel on the engine and
returns a flat dict of statistics (GPGPU-Sim names where one exists).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from stcsim import _engine

PtxError = _engine.PtxError
LaunchError = _engine.LaunchError
SimFault = _engine.SimFault

Dim = int | Sequence[int]


def _dims(d: Dim) -> list[int]:
    if isinstance(d, int | np.integer):
        return [int(d)]
    return [int(x) for x in d]


class Engine:
    """One simulated GPU: device memory, loaded kernels and launches.

    `config` is a GPU config spec for the cycle-level timing model (e.g. ``"v100"``, ``"h100"``,
    ``"v100+stc-pingpong"`` or a YAML path; see docs/configs.md). With ``config=None`` launches are
    functional only (results and instruction counts, no cycles). With `schedule_loads` (the default) each
    basic block of loaded PTX is reordered so loads issue as early as their dependencies allow, as ptxas
    schedules the SASS that real GPUs run; False executes the PTX in its written order.
    """

    def __init__(self, config: str | os.PathLike[str] | None = None, *, schedule_loads: bool = True) -> None:
        self._eng = _engine.Engine(schedule_loads)
        self.config: str | None = None
        if config is not None:
            from stcsim.config import load_config
            from stcsim.sim.config_check import check_engine_reads

            gpu = load_config(str(config))
            self._eng.set_config(gpu.flat())
            check_engine_reads(gpu, self._eng.config_record())
            self.config = str(config)

    def malloc(self, nbytes: int) -> int:
        """Allocates `nbytes` of zeroed device memory and returns its device address."""
        return int(self._eng.malloc(int(nbytes)))

    def free(self, addr: int) -> None:
        """Frees an allocation made by `malloc`."""
        self._eng.free(int(addr))

    def copy_to(self, addr: int, array: np.ndarray) -> None:
        """Copies the bytes of `array` (made C-contiguous) to device memory at `addr`."""
        data = np.ascontiguousarray(array)
        self._eng.copy_to(int(addr), data.reshape(-1).view(np.uint8))

    def copy_from(self, addr: int, shape: int | Sequence[int], dtype: np.dtype | type | str) -> np.ndarray:
        """Returns a new host array of `shape` and `dtype` read from device memory at `addr`."""
        out = np.empty(shape, dtype=dtype)
        self._eng.copy_from(int(addr), out.reshape(-1).view(np.uint8))
        return out

    def load_ptx(self, ptx: str | os.PathLike[str]) -> list[str]:
        """Loads PTX from a file path or from PTX text; returns the names of its entry kernels."""
        if isinstance(ptx, os.PathLike) or (
            isinstance(ptx, str) and "\n" not in ptx and ptx.endswith(".ptx")
        ):
            path = Path(ptx)
            return list(self._eng.load_ptx(path.read_text(), str(path)))
        return list(self._eng.load_ptx(str(ptx), "<ptx text>"))

    def kernel_names(self) -> list[str]:
        """Names of every loaded entry kernel."""
        return list(self._eng.kernel_names())

    def launch(
        self,
        kernel: str,
        grid: Dim,
        block: Dim,
        args: Sequence[int | float],
        shared_bytes: int = 0,
        *,
        timing: bool = True,
        regs_per_thread: int = 0,
    ) -> dict[str, float | str]:
        """Runs `kernel` over `grid` x `block` threads with `args` packed by the PTX parameter types.

        `shared_bytes` is the dynamic shared memory per block. With a config and `timing`, the launch runs on
        the cycle-level model and the stats include `gpu_sim_cycle`; `regs_per_thread` (0: estimated from
        the PTX) sets register occupancy. Returns the launch statistics as a flat dict.
        """
        stats: dict[str, float | str] = dict(
            self._eng.launch(
                kernel,
                _dims(grid),
                _dims(block),
                list(args),
                int(shared_bytes),
                bool(timing),
                int(regs_per_thread),
            )
        )
        if self.config is not None:
            stats["config"] = self.config
        return stats


class StatInfo(NamedTuple):
    """One statistic of the registry: name, group, unit, kind (counter, value, formula), description."""

    name: str
    group: str
    unit: str
    kind: str
    description: str


def stat_info() -> list[StatInfo]:
    """Every statistic a launch can report, from the engine's one registry (core and extensions).

    Groups ``launch`` and ``functional`` are reported by every launch; the others only by launches on the
    cycle-level model (an Engine with a config).
    """
    return [StatInfo(*row) for row in _engine.stat_info()]

"""`Engine`: the Python face of the C++ engine (`stcsim._engine`).

The engine owns simulated device memory and loaded PTX modules. `launch` runs a kernel on the engine and
returns a flat dict of statistics (GPGPU-Sim names where one exists).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from stcsim import _engine
from stcsim.sim import launch_args, ptxas_facts

if TYPE_CHECKING:
    from stcsim.config.loader import GpuConfig

PtxError = _engine.PtxError
LaunchError = _engine.LaunchError
SimFault = _engine.SimFault
WatchdogError = _engine.WatchdogError

DEFAULT_MAX_CYCLES: int = _engine.DEFAULT_MAX_CYCLES
"""Default watchdog limit on the simulated cycles of one timing launch (docs/errors.md)."""
DEFAULT_MAX_WARP_INSTS: int = _engine.DEFAULT_MAX_WARP_INSTS
"""Default watchdog limit on the warp instructions of one launch (docs/errors.md)."""
DEFAULT_MAX_CTAS: int = _engine.DEFAULT_MAX_CTAS
"""Default watchdog limit on the blocks of one launch's grid (docs/errors.md)."""

Dim = int | Sequence[int]
ADDRESS_MAX = 2**64 - 1


def sass_facts_of(found: ptxas_facts.PtxasFacts) -> dict[str, object]:
    """ptxas's schedule facts of a module's kernels, one `_engine.SassFacts` record per kernel that has any
    (copy grouping, loop orders and loop waits, straight-line copy-block orders)."""
    names = {*found.copy_groups, *found.loop_orders, *found.block_orders, *found.loop_waits}
    out: dict[str, object] = {}
    for name in names:
        facts = _engine.SassFacts()
        facts.copy_group = found.copy_groups.get(name, 0)
        facts.loops = found.loop_orders.get(name, [])
        facts.copy_blocks = found.block_orders.get(name, [])
        facts.loop_waits = found.loop_waits.get(name, [])
        out[name] = facts
    return out


class Engine:
    """One simulated GPU: device memory, loaded kernels and launches.

    `config` is a GPU config spec for the cycle-level timing model (e.g. ``"v100"``, ``"h100"``,
    ``"v100+stc-pingpong"`` or a YAML path; see docs/configs.md), or a config already resolved
    (`stcsim.config.load_config(spec, overrides)`: a sweep point's config; `gpu_config` keeps it, its
    `digest()` names its values). With ``config=None`` launches are
    functional only (results and instruction counts, no cycles). With `schedule_loads` (the default) each
    basic block of loaded PTX is reordered so loads issue as early as their dependencies allow, as ptxas
    schedules the SASS that real GPUs run; False executes the PTX in its written order.

    `memcheck` (like compute-sanitizer's memcheck) surrounds every allocation with red zones, so that an
    access overrunning one allocation faults (`SimFault`) instead of landing in a neighbouring one.
    `max_cycles`, `max_warp_insts` and `max_ctas` are the watchdog limits of every launch (0: no limit; a
    launch may override them): past one, a launch raises `WatchdogError` saying where its warps are (a grid
    of more than `max_ctas` blocks is refused before it runs). A launch can also be stopped with Ctrl-C
    (KeyboardInterrupt); the engine stays usable. A launch still running on another thread when the
    interpreter exits is stopped and raises SystemExit in its thread. See docs/errors.md.

    `threads` > 1 runs each full-detail timing launch on that many host threads: the SMs are split among
    them, and every stage several SMs share (L2, DRAM, CTA dispatch, instruction fetch past the SM) runs
    in the one-thread order, so the stats and memory are bit-identical to ``threads=1`` (docs/performance.md).
    Sampled launches run on one thread.

    `lockstep` runs each full-detail timing launch in the lockstep loop, on one thread whatever `threads`:
    every SM's cycle t, in SM order, before any SM's cycle t + 1 (the loop sampled launches run), instead of
    each SM running ahead while it touches only its own state. The stats and memory are bit-identical, the
    launch slower; tests/timing/test_run_ahead.py compares the two loops with it.

    With `ptxas_facts` (the default) a timing launch takes what ptxas reports of the kernel on the config's
    `gpu.sm_version` (stcsim.sim.ptxas_facts), where ptxas is installed and accepts the PTX: register
    occupancy from the registers ptxas allocates (else, and with False, the engine's liveness estimate; the
    stat `regs_source` says which: ``ptxas``, ``estimate`` or ``launch`` for an explicit `regs_per_thread`),
    and wgmma.mma_async run one at a time where ptxas serialized them (its advisory C7515; the stat
    `wgmma_serialized` is 1 then). With a config of sm_90, `load_ptx` also reads ptxas's copy grouping from
    the SASS (stcsim.sim.sass_facts): a loop's memory and Tensor Core instructions are scheduled in ptxas's
    order where the SASS loop matches the PTX loop, elsewhere a tile copy's global loads in the groups ptxas
    issues them in (the stat `copy_group`; 0 where ptxas, the SASS decoder or a copy loop is missing).
    """

    def __init__(
        self,
        config: str | os.PathLike[str] | GpuConfig | None = None,
        *,
        schedule_loads: bool = True,
        memcheck: bool = False,
        max_cycles: int = DEFAULT_MAX_CYCLES,
        max_warp_insts: int = DEFAULT_MAX_WARP_INSTS,
        ptxas_facts: bool = True,
        max_ctas: int = DEFAULT_MAX_CTAS,
        threads: int = 1,
        lockstep: bool = False,
    ) -> None:
        if isinstance(threads, bool) or not isinstance(threads, int | np.integer) or not 1 <= threads <= 1024:
            raise LaunchError(f"threads must be an int in [1, 1024], got {threads!r}")
        if not isinstance(lockstep, bool | np.bool_):
            raise LaunchError(f"lockstep must be True or False, got {lockstep!r}")
        self.threads = int(threads)
        self.lockstep = bool(lockstep)
        self.ptxas_facts = bool(ptxas_facts)
        self._sm_version = 0
        self._kernel_ptx: dict[str, str] = {}
        self._copy_groups: dict[str, int] = {}
        self.max_cycles = launch_args.limit(max_cycles, "max_cycles")
        self.max_warp_insts = launch_args.limit(max_warp_insts, "max_warp_insts")
        self.max_ctas = launch_args.limit(max_ctas, "max_ctas")
        self._eng = _engine.Engine(bool(schedule_loads), bool(memcheck))
        self.config: str | None = None
        self.gpu_config: GpuConfig | None = None
        if config is not None:
            from stcsim.config import load_config
            from stcsim.config.loader import GpuConfig
            from stcsim.sim.config_check import check_engine_reads

            gpu = config if isinstance(config, GpuConfig) else load_config(str(config))
            self._eng.set_config(gpu.flat())
            check_engine_reads(gpu, self._eng.config_record())
            self.config = gpu.spec
            self.gpu_config = gpu
            self._sm_version = int(gpu.flat()["gpu.sm_version"])

    @property
    def memcheck(self) -> bool:
        """True when allocations have red zones (set at construction)."""
        return bool(self._eng.memcheck)

    def malloc(self, nbytes: int) -> int:
        """Allocates `nbytes` of zeroed device memory and returns its device address."""
        return int(self._eng.malloc(launch_args.integer(nbytes, "malloc size")))

    def free(self, addr: int) -> None:
        """Frees an allocation made by `malloc`."""
        self._eng.free(launch_args.integer(addr, "free address", 0, ADDRESS_MAX))

    def copy_to(self, addr: int, array: np.ndarray) -> None:
        """Copies the bytes of `array` (made C-contiguous) to device memory at `addr`."""
        data = np.ascontiguousarray(array)
        self._eng.copy_to(launch_args.integer(addr, "copy_to address", 0, ADDRESS_MAX),
                          data.reshape(-1).view(np.uint8))

    def copy_from(self, addr: int, shape: int | Sequence[int], dtype: np.dtype | type | str) -> np.ndarray:
        """Returns a new host array of `shape` and `dtype` read from device memory at `addr`."""
        address = launch_args.integer(addr, "copy_from address", 0, ADDRESS_MAX)
        dims = [shape] if launch_args.is_integer(shape) else shape
        if not isinstance(dims, tuple | list):
            raise LaunchError(f"copy_from shape must be an int or a tuple/list of ints, got {shape!r}")
        sizes = [launch_args.integer(d, "copy_from shape") for d in dims]
        nbytes = math.prod(sizes) * np.dtype(dtype).itemsize
        if nbytes > launch_args.INT64_MAX:
            raise LaunchError(f"copy_from of shape {tuple(sizes)} ({nbytes} bytes) exceeds any allocation")
        try:
            out = np.empty(sizes, dtype=dtype)
        except (MemoryError, ValueError) as exc:
            raise LaunchError(f"copy_from: no host array of shape {tuple(sizes)} and dtype {dtype}: "
                              f"{exc}") from exc
        self._eng.copy_from(address, out.reshape(-1).view(np.uint8))
        return out

    def load_ptx(self, ptx: str | os.PathLike[str]) -> list[str]:
        """Loads PTX from a file path or from PTX text; returns the names of its entry kernels.

        The PTX goes to the engine as bytes, whatever their encoding: a byte that is not ASCII (PTX is ASCII
        text, comments included) is a PtxError naming file, line and the bytes, never a decode error.
        """
        if isinstance(ptx, os.PathLike) or (
            isinstance(ptx, str) and "\n" not in ptx and ptx.endswith(".ptx")
        ):
            path = Path(ptx)
            data, where = path.read_bytes(), str(path)
        else:
            data, where = str(ptx).encode("utf-8", "surrogatepass"), "<ptx text>"
        text = data.decode("utf-8", "surrogateescape")
        sass: dict[str, object] = {}
        # the schedule follows ptxas's loop order: asked of ptxas at load only where a loop may be (a
        # branch), so a module loaded and never timed costs no compile (1M straight-line lines: minutes)
        if self.ptxas_facts and self.config is not None and "bra" in text:
            found = ptxas_facts.facts(text, self._sm_version)
            sass = sass_facts_of(found)
        names = list(self._eng.load_ptx(data, where, sass))
        self._copy_groups.update({name: sass[name].copy_group if name in sass else 0 for name in names})
        self._kernel_ptx.update(dict.fromkeys(names, text))
        return names

    def _facts(self, kernel: str, timing: bool) -> ptxas_facts.PtxasFacts:
        """ptxas's facts of the kernel's module for a timing launch (empty: the PTX-only view)."""
        if self.ptxas_facts and timing and self.config is not None and kernel in self._kernel_ptx:
            return ptxas_facts.facts(self._kernel_ptx[kernel], self._sm_version)
        return ptxas_facts.PtxasFacts()

    @staticmethod
    def _registers(kernel: str, facts: ptxas_facts.PtxasFacts, regs_per_thread: int) -> tuple[int, str]:
        """(registers per thread for the launch, where they come from); 0 lets the engine estimate."""
        if regs_per_thread:
            return regs_per_thread, "launch"
        if facts.registers.get(kernel, 0):
            return facts.registers[kernel], "ptxas"
        return 0, "estimate"

    def cycles_only_note(self, kernel: str) -> str:
        """Why a cycles-only launch of `kernel` (``launch(..., values=False)``) computes its Tensor Core
        results anyway: the first instruction where one reaches the timing and what it decides there ('' when
        none does and the arithmetic is skipped)."""
        return str(self._eng.mma_values_note(kernel))

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
        max_cycles: int | None = None,
        max_warp_insts: int | None = None,
        sample: float = 0.0,
        max_ctas: int | None = None,
        values: bool = True,
    ) -> dict[str, float | str]:
        """Runs `kernel` over `grid` x `block` threads with `args` packed by the PTX parameter types.

        `grid` and `block` are ints or tuples/lists of 1 to 3 ints; `args` a sequence of Python or numpy
        integer and float scalars (device pointers are integers); each must fit its PTX parameter type.
        `shared_bytes` is the dynamic shared memory per block. With a config and `timing`, the launch runs on
        the cycle-level model and the stats include `gpu_sim_cycle`; `regs_per_thread` (0: from ptxas or
        estimated from the PTX, see the class) sets register occupancy. `max_cycles` / `max_warp_insts` /
        `max_ctas` override the engine's watchdog limits for this launch (None: the engine's; 0: no limit).
        Returns the launch statistics as a flat dict. Raises LaunchError (bad request), SimFault (memory
        fault, trap, deadlock), WatchdogError (a limit passed), KeyboardInterrupt (Ctrl-C) and SystemExit
        (the interpreter is exiting while the launch runs on another thread).

        `sample` > 0 asks for sampled simulation of a large grid (docs/performance.md): waves of CTAs are
        simulated in detail until the last two agree within `sample` (relative), the middle of the grid then
        runs functionally only (outputs stay complete) and is timed from that steady state. A grid of fewer
        than five waves is sampled in time instead: once two windows of a loop agree within `sample`, the
        loop's steady iterations run functionally only and are timed at the measured pace. The stats then
        include the sampling group (`sample_mode` says whether it sampled or fell back to full detail, and
        why; `sample_error_estimate` the estimated relative error). 0 (the default) is full detail.

        `values=False` asks for cycles only: where no value derived from a Tensor Core instruction's result
        can reach the timing (an address, a predicate, a barrier, a descriptor; a static analysis of the
        kernel, engine/func/value_flow.h), the launch skips that arithmetic, as a trace-driven simulator
        computes no values; every statistic is the same, but the memory those results are stored into is not
        written (do not read the outputs). Where a result can reach the timing, the launch computes it as
        usual (`cycles_only_note` says where). The stats then include `mma_values_skipped` (1.0 skipped,
        0.0 computed).
        """
        cycles = self.max_cycles if max_cycles is None else max_cycles
        insts = self.max_warp_insts if max_warp_insts is None else max_warp_insts
        ctas = self.max_ctas if max_ctas is None else max_ctas
        if not isinstance(kernel, str):
            raise LaunchError(f"kernel must be a kernel name (str), got {kernel!r}")
        if not isinstance(timing, bool | np.bool_):
            raise LaunchError(f"timing must be True or False, got {timing!r}")
        if not isinstance(values, bool | np.bool_):
            raise LaunchError(f"values must be True or False, got {values!r}")
        facts = self._facts(kernel, bool(timing))
        regs, regs_source = self._registers(kernel, facts,
                                            launch_args.integer(regs_per_thread, "regs_per_thread", 0, 255))
        serialized = kernel in facts.wgmma_serialized
        stats: dict[str, float | str] = dict(
            self._eng.launch(
                kernel,
                launch_args.dims(grid, "grid"),
                launch_args.dims(block, "block"),
                launch_args.kernel_args(args),
                launch_args.integer(shared_bytes, "shared_bytes"),
                bool(timing),
                regs,
                launch_args.limit(cycles, "max_cycles"),
                launch_args.limit(insts, "max_warp_insts"),
                launch_args.sample_tolerance(sample),
                launch_args.limit(ctas, "max_ctas"),
                serialized,
                self.threads,
                self.lockstep,
                not values,
            )
        )
        if self.config is not None:
            stats["config"] = self.config
            stats["regs_source"] = regs_source
            stats["wgmma_serialized"] = float(serialized)
            stats["copy_group"] = float(self._copy_groups.get(kernel, 0))
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
    cycle-level model (an Engine with a config), ``sampling`` only by those that asked for sampling.
    """
    return [StatInfo(*row) for row in _engine.stat_info()]

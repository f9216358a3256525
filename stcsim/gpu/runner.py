"""GpuEngine: runs PTX on a real CUDA GPU with CuPy, behind the same API as stcsim.sim.Engine.

CuPy is imported only when a GpuEngine is created, so this module imports on machines without it.
"""

from __future__ import annotations

import hashlib
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from stcsim.kernels.ptx_info import PtxParam, entry_params
from stcsim.sim.tensor_map import TensorMap

_SCALAR = {
    "u8": np.uint8, "s8": np.int8, "b8": np.uint8,
    "u16": np.uint16, "s16": np.int16, "b16": np.uint16,
    "u32": np.uint32, "s32": np.int32, "b32": np.uint32,
    "u64": np.uint64, "s64": np.int64, "b64": np.uint64,
    "f32": np.float32, "f64": np.float64,
}  # fmt: skip
_STATIC_SHARED_LIMIT = 48 * 1024


def _aggregate(param: PtxParam, value: object) -> np.void:
    """An array (by-value struct) parameter: a TensorMap (the driver's encoding) or exactly its bytes."""
    size = param.array * np.dtype(_SCALAR.get(param.ptx_type, np.uint8)).itemsize
    raw = value.driver_encode() if isinstance(value, TensorMap) else value
    if not isinstance(raw, bytes | bytearray) or len(raw) != size:
        raise ValueError(f"{param.name} is a {size}-byte aggregate: pass a TensorMap or exactly {size} "
                         f"bytes, got {type(value).__name__}")
    return np.frombuffer(bytes(raw), np.dtype((np.void, size)))[0]


def pack_args(params: list[PtxParam], args: list[Any]) -> list[np.generic]:
    """Kernel arguments as numpy scalars of the `.param` types (pointers and integers as ints, floats as
    floats; array parameters from a TensorMap or bytes); ValueError on a wrong count, an unsupported type or
    an integer out of range."""
    if len(params) != len(args):
        raise ValueError(f"kernel takes {len(params)} parameters, got {len(args)} arguments")
    packed: list[np.generic] = []
    for param, value in zip(params, args, strict=True):
        if param.array:
            packed.append(_aggregate(param, value))
            continue
        scalar = _SCALAR.get(param.ptx_type)
        if scalar is None:
            raise ValueError(f"{param.name}: unsupported .param type .{param.ptx_type}")
        if np.issubdtype(scalar, np.integer):
            info = np.iinfo(scalar)
            if isinstance(value, float) or not info.min <= int(value) <= info.max:
                raise ValueError(f"{param.name} (.{param.ptx_type}): {value!r} is not an integer in range")
        packed.append(scalar(value))
    return packed


def _import_cupy() -> Any:
    try:
        import cupy
    except ImportError as err:
        raise RuntimeError(
            "GpuEngine needs CuPy and a CUDA GPU: pip install cupy-cuda12x (or cupy-cuda13x) on a GPU machine"
        ) from err
    return cupy


class GpuEngine:
    """The engine API (malloc, copy_to, copy_from, load_ptx, launch) on one CUDA device.

    launch() runs the kernel once to warm up, then `repeats` times between CUDA events, and returns
    {"gpu_time_ms": median, "gpu_time_ms_min": fastest, "repeats": repeats}. With repeats=0 it runs the
    kernel exactly once (the functional check of a kernel that updates its inputs in place, such as
    D = A B + D) and times that one cold launch.

    Each timed launch waits for the host to issue it, so a kernel of a few microseconds measures the host's
    launch latency too (about 10 us through CuPy on the H100). With `graph=True` (and repeats > 0) the
    `repeats` launches are captured once in a CUDA graph and the graph replayed GRAPH_REPLAYS times between
    events: the time per launch is a replay's time over `repeats` (median and fastest of the replays), the
    launches back to back on the device as a framework issues them.
    """

    GRAPH_REPLAYS = 5

    def __init__(self, device: int = 0, repeats: int = 10, graph: bool = False) -> None:
        if repeats < 0:
            raise ValueError(f"repeats must be >= 0, got {repeats}")
        self._cp = _import_cupy()
        self._cp.cuda.Device(device).use()
        self.repeats = repeats
        self.graph = graph
        self._allocations: dict[int, Any] = {}
        self._modules: dict[str, Any] = {}
        self._kernels: dict[str, tuple[Any, list[PtxParam]]] = {}
        self._tmp = tempfile.TemporaryDirectory(prefix="stcsim-ptx-")

    def malloc(self, nbytes: int) -> int:
        """Allocate device memory (kept alive as long as the engine); returns its address."""
        memory = self._cp.cuda.alloc(max(int(nbytes), 1))
        self._allocations[int(memory.ptr)] = memory
        return int(memory.ptr)

    def copy_to(self, addr: int, array: np.ndarray) -> None:
        """Copy the bytes of a host array (made contiguous) to device address addr."""
        host = np.ascontiguousarray(array)
        runtime = self._cp.cuda.runtime
        runtime.memcpy(addr, host.ctypes.data, host.nbytes, runtime.memcpyHostToDevice)

    def copy_from(self, addr: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A new host array of this shape and dtype read from device address addr."""
        host = np.empty(shape, dtype=dtype)
        runtime = self._cp.cuda.runtime
        runtime.memcpy(host.ctypes.data, addr, host.nbytes, runtime.memcpyDeviceToHost)
        return host

    def load_ptx(self, path_or_text: str | Path) -> None:
        """Load a PTX module (a file path, or PTX text); its entries become launchable by name (loaded again
        after another module with entries of the same names, it takes them back)."""
        path = Path(path_or_text) if _is_path(path_or_text) else None
        text = path.read_text() if path is not None else str(path_or_text)
        key = hashlib.sha256(text.encode()).hexdigest()
        module = self._modules.get(key)
        if module is None:
            if path is None:
                path = Path(self._tmp.name, f"{key[:16]}.ptx")
                path.write_text(text)
            module = self._modules[key] = self._cp.RawModule(path=str(path))
        for name, params in entry_params(text).items():  # a module loaded again launches again
            self._kernels[name] = (module.get_function(name), params)

    def launch(
        self,
        kernel: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: list[Any],
        shared_bytes: int = 0,
    ) -> dict[str, float]:
        """Run `kernel` (warm-up, then timed repeats); raises on an unknown kernel or a CUDA error."""
        if kernel not in self._kernels:
            raise KeyError(f"kernel {kernel!r} is not loaded; loaded: {', '.join(sorted(self._kernels))}")
        func, params = self._kernels[kernel]
        packed = tuple(pack_args(params, args))
        if shared_bytes > _STATIC_SHARED_LIMIT:
            func.max_dynamic_shared_size_bytes = shared_bytes
        cuda = self._cp.cuda

        def run() -> None:
            func(tuple(grid), tuple(block), packed, shared_mem=shared_bytes)

        start, end = cuda.Event(), cuda.Event()
        if self.repeats == 0:
            start.record()
            run()
            end.record()
            cuda.runtime.deviceSynchronize()  # raises the launch's error, if any
            once = float(cuda.get_elapsed_time(start, end))
            return {"gpu_time_ms": once, "gpu_time_ms_min": once, "repeats": 0}
        run()
        cuda.runtime.deviceSynchronize()  # raises the launch's error, if any
        if self.graph:
            return graph_times(self._cp, run, self.repeats, self.GRAPH_REPLAYS)
        times = []
        for _ in range(self.repeats):
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(float(cuda.get_elapsed_time(start, end)))
        cuda.runtime.deviceSynchronize()
        return {"gpu_time_ms": statistics.median(times), "gpu_time_ms_min": min(times), "repeats": len(times)}


def _is_path(path_or_text: str | Path) -> bool:
    if isinstance(path_or_text, Path):
        return True
    return "\n" not in path_or_text and ".entry" not in path_or_text and Path(path_or_text).is_file()


def graph_times(cp: Any, run: Any, launches: int, replays: int) -> dict[str, float]:
    """Per-launch milliseconds of `launches` calls of `run` captured in one CUDA graph on a stream of their
    own, the graph replayed once to warm up, then `replays` times between events: {"gpu_time_ms": median
    of the replays over `launches`, "gpu_time_ms_min": fastest, "repeats": launches, "graph": 1.0}."""
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            for _ in range(launches):
                run()
        finally:
            graph = stream.end_capture()
    graph.launch(stream)
    stream.synchronize()
    start, end, times = cp.cuda.Event(), cp.cuda.Event(), []
    for _ in range(replays):
        start.record(stream)
        graph.launch(stream)
        end.record(stream)
        end.synchronize()
        times.append(float(cp.cuda.get_elapsed_time(start, end)) / launches)
    return {"gpu_time_ms": statistics.median(times), "gpu_time_ms_min": min(times), "repeats": launches,
            "graph": 1.0}

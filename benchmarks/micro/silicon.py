"""The same PTX microbenchmarks on a real GPU: per-instruction latencies and issue intervals of silicon.

Every benchmark that derives its value from the kernel's own ``%clock64`` deltas (execution-unit chains and
streams, Tensor Core chains and streams, shared memory and ldmatrix, L1 and L2 pointer chases) runs unchanged
on the GPU: the PTX is assembled by ``ptxas -O0`` (so the chains are not folded away; the SASS opcode counts
are recorded to show it) and launched through CuPy. Benchmarks that read simulator statistics or rely on cold
caches at launch (DRAM chase, merges, bandwidth, occupancy) are not silicon benchmarks and are skipped.

    python -m benchmarks.micro.silicon --out silicon.csv          # on a GPU machine, beside the config it
                                                                   # is compared with (default h100)
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.micro import bench
from stcsim.gpu.runner import pack_args
from stcsim.kernels.ptx_info import entry_params

# Benchmarks whose value is a %clock64 difference, valid on silicon.
SILICON_GROUPS = ("latency", "throughput", "tensor", "shared")
SILICON_EXTRA = ("chase.l1", "chase.l1.cg", "chase.const", "chase.local.u32")
NOT_ON_SILICON = ("param.waw", "param.ii", "end.ret", "end.sqrt+ret", "warps.cta_slots")


class _Stats(dict):
    """Launch statistics of a silicon run: only what the GPU measured; simulator-only keys are NaN."""

    def __missing__(self, key: str) -> float:
        return math.nan


class SiliconEngine:
    """The slice of the Engine API the microbenchmarks use, on one CUDA GPU (CuPy), with ptxas -O0."""

    arch = "sm_90"

    def __init__(self, config: str | None = None) -> None:
        import cupy

        self._cp = cupy
        self._mem: dict[int, Any] = {}
        self._kernels: dict[str, tuple[Any, list[Any]]] = {}
        self._tmp = tempfile.TemporaryDirectory(prefix="stcsim-silicon-")

    def load_ptx(self, text: str) -> list[str]:
        key = hashlib.sha256(text.encode()).hexdigest()[:16]
        ptx = Path(self._tmp.name, f"{key}.ptx")
        cubin = ptx.with_suffix(".cubin")
        ptx.write_text(text)
        subprocess.run(["ptxas", "-O0", f"-arch={self.arch}", str(ptx), "-o", str(cubin)], check=True)
        module = self._cp.RawModule(path=str(cubin))
        names = []
        for name, params in entry_params(text).items():
            self._kernels[name] = (module.get_function(name), params)
            names.append(name)
        return names

    def malloc(self, nbytes: int) -> int:
        m = self._cp.cuda.alloc(max(int(nbytes), 1))
        self._cp.cuda.runtime.memset(int(m.ptr), 0, max(int(nbytes), 1))
        self._mem[int(m.ptr)] = m
        return int(m.ptr)

    def copy_to(self, addr: int, array: np.ndarray) -> None:
        host = np.ascontiguousarray(array)
        rt = self._cp.cuda.runtime
        rt.memcpy(addr, host.ctypes.data, host.nbytes, rt.memcpyHostToDevice)

    def copy_from(self, addr: int, shape: Any, dtype: Any) -> np.ndarray:
        host = np.empty(shape, dtype=dtype)
        rt = self._cp.cuda.runtime
        rt.memcpy(host.ctypes.data, addr, host.nbytes, rt.memcpyDeviceToHost)
        return host

    def launch(
        self, name: str, grid: Any, block: Any, args: list[Any], shared_bytes: int = 0, **_: Any
    ) -> dict:
        func, params = self._kernels[name]
        g = (grid, 1, 1) if isinstance(grid, int) else tuple(grid)
        b = (block, 1, 1) if isinstance(block, int) else tuple(block)
        if shared_bytes > 48 * 1024:
            func.max_dynamic_shared_size_bytes = shared_bytes
        packed = tuple(pack_args(params, list(args)))
        for _ in range(2):  # the second launch runs with a warm instruction cache
            func(g, b, packed, shared_mem=shared_bytes)
            self._cp.cuda.runtime.deviceSynchronize()
        return _Stats()


def silicon_ids() -> list[str]:
    """The microbenchmarks that run on silicon."""
    return [
        b.id
        for b in bench.BENCHES
        if (b.group in SILICON_GROUPS or b.id in SILICON_EXTRA) and b.id not in NOT_ON_SILICON
    ]


def sass_histogram(ptx: str, arch: str = "sm_90") -> dict[str, int]:
    """Opcode counts of the SASS ptxas -O0 makes of `ptx` (to check that chains were not folded)."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d, "k.ptx")
        p.write_text(ptx)
        subprocess.run(
            ["ptxas", "-O0", f"-arch={arch}", str(p), "-o", str(p.with_suffix(".cubin"))], check=True
        )
        out = subprocess.run(
            ["cuobjdump", "-sass", str(p.with_suffix(".cubin"))], capture_output=True, text=True, check=True
        ).stdout
    hist: dict[str, int] = {}
    for line in out.splitlines():
        if "/*" in line and ";" in line:
            op = line.split("*/", 1)[1].strip().split(" ")[0].split(".")[0]
            if op and op[0].isalpha():
                hist[op] = hist.get(op, 0) + 1
    return hist


def main(argv: list[str] | None = None) -> int:
    """Runs every silicon microbenchmark; writes bench, silicon value and the config's expectation."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--config", default="h100", help="the config whose expectations are listed beside")
    a = ap.parse_args(argv)
    bench.Engine = SiliconEngine  # type: ignore[misc,assignment]  # same runners, silicon underneath
    rows = []
    for bid in silicon_ids():
        try:
            r = bench.by_id(bid).runner(a.config)
            value, expected, note = r.value, r.expected, r.note
        except Exception as err:  # noqa: BLE001 - a benchmark PTX the GPU refuses is reported, not fatal
            value, expected, note = None, None, f"error: {err}"[:200]
        rows.append({"bench": bid, "silicon": value, "config_expected": expected, "note": note})
        print(f"{bid:<32} silicon {value!s:>10}  {a.config} {expected!s:>8}  {note}")
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["bench", "silicon", "config_expected", "note"])
        w.writeheader()
        w.writerows(rows)
    chain = bench.render("alu_chain", n=16, op="fma.rn.f32 %f0, %f0, %f1, %f2;", nregs=8)
    print("SASS of a 16-step fma.rn.f32 chain under ptxas -O0:", sass_histogram(chain))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

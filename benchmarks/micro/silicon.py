"""The same PTX microbenchmarks on a real GPU: per-instruction latencies and issue intervals of silicon.

Every benchmark that derives its value from the kernel's own ``%clock64`` deltas (execution-unit chains and
streams, Tensor Core chains and streams, shared memory and ldmatrix, L1 and L2 pointer chases) runs unchanged
on the GPU, assembled by ``ptxas -O3`` and launched through CuPy. So that ptxas cannot fold the chains, the
constant initial values of the execution-unit and Tensor Core benchmarks are made opaque (``mov %x, imm``
becomes ``or``/``add`` of ``%laneid`` and imm: the same value in lane 0); the SASS instruction counts of the
k-step and 2k-step kernels are recorded to show that every step survived, and every register is folded into
a word stored at the end, so that no chain is dead code. Between a warm-up launch and the measured one the
runner writes 256 MB, so data caches start cold as at a simulated launch (the DRAM chase relies on it).
Benchmarks that read simulator statistics (merges, bandwidth, occupancy) are not silicon benchmarks.

    python -m benchmarks.micro.silicon --out silicon.csv          # on a GPU machine, beside the config it
                                                                   # is compared with (default h100)
"""

from __future__ import annotations

import argparse
import hashlib
import math
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.micro import launch
from benchmarks.micro.registry import BENCHES, by_id
from stcsim.gpu.runner import pack_args
from stcsim.harness.files import write_csv_atomic
from stcsim.kernels.ptx_info import entry_params

# Benchmarks whose value is a %clock64 difference, valid on silicon.
SILICON_GROUPS = ("latency", "throughput", "tensor", "shared")
SILICON_EXTRA = ("chase.l1", "chase.l1.cg", "chase.dram", "chase.const", "chase.local.u32")
_FLUSH_BYTES = 256 << 20  # written between the warm-up and the measured launch: evicts L2 (and TLB entries)
NOT_ON_SILICON = ("param.waw", "param.ii", "end.ret", "end.sqrt+ret", "warps.cta_slots")


def _stats() -> dict[str, float]:
    """Launch statistics of a silicon run: the simulator's stat names, all NaN (the GPU measured only the
    kernel's own %clock64 values)."""
    from stcsim.sim.engine import stat_info

    names = [s.name for s in stat_info()]
    return dict.fromkeys(names, math.nan)


_INIT = re.compile(r"^(\s*)mov\.(b32|f32|b16|f64|b64) (%[A-Za-z_][\w$]*), ([-0-9][\w.]*);$", re.M)
_OPAQUE = {  # mov type -> (the opaque instruction, the lane register of that class); lane 0 keeps the value
    "b32": ("or.b32", "%stc_lane"), "f32": ("add.f32", "%stc_lanef"), "b16": ("or.b16", "%stc_laneh"),
    "f64": ("add.f64", "%stc_laned"), "b64": ("or.b64", "%stc_lane64"),
}  # fmt: skip
_LANES = """  .reg .b32 %stc_lane;
  .reg .f32 %stc_lanef;
  .reg .b16 %stc_laneh;
  .reg .f64 %stc_laned;
  .reg .b64 %stc_lane64;
  mov.u32 %stc_lane, %laneid;
  cvt.rn.f32.u32 %stc_lanef, %stc_lane;
  cvt.u16.u32 %stc_laneh, %stc_lane;
  cvt.rn.f64.u32 %stc_laned, %stc_lane;
  cvt.u64.u32 %stc_lane64, %stc_lane;
"""


def make_opaque(ptx: str) -> str:
    """Rewrites the constant register initialisations of a chain/stream kernel into lane-dependent ones.

    32-bit integer registers also get distinct values (bit 16 and up hold a counter), so that independent
    instructions on different registers (e.g. a stream of mma into distinct accumulators) are not merged as
    common subexpressions."""
    first = _INIT.search(ptx)
    if not first:
        return ptx
    counter = iter(range(1, 1 << 15))

    def opaque(m: re.Match[str]) -> str:
        op, lane = _OPAQUE[m[2]]
        imm = m[4]
        if m[2] == "b32" and re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)", imm):
            imm = str((int(imm, 0) ^ (next(counter) << 16)) & 0xFFFFFFFF)
        return f"{m[1]}{op} {m[3]}, {lane}, {imm};"

    body = _INIT.sub(opaque, ptx)
    at = first.start()
    return body[:at] + _LANES + body[at:]


_MMA_C = re.compile(r"(\{%acc[^}]*\}), (\{%a[^}]*\}), (\{%b[^}]*\}), \{%z[^}]*\};")
_ACC_DECL = re.compile(r"\.reg \S+ %acc<(\d+)>;")


def distinct_accumulators(ptx: str) -> str:
    """A tensor stream whose instructions all add the same C would be one instruction after ptxas's common
    subexpression elimination: make each accumulate into its own, distinctly initialised, D."""
    decl = _ACC_DECL.search(ptx)
    if not decl:
        return ptx
    ptx = _MMA_C.sub(r"\1, \2, \3, \1;", ptx)
    inits = "".join(f"  mov.b32 %acc{j}, 0;\n" for j in range(int(decl[1])))
    at = ptx.index("  mov.u64 %rd2, %clock64;")
    return ptx[:at] + inits + ptx[at:]


_REGDECL = re.compile(
    r"^\s*\.reg \.(b32|f32|u32|s32|b16|f16|u16|b64|f64|u64|s64) (%[A-Za-z_]\w*)<(\d+)>;", re.M
)
_OUTPTR = re.compile(r"ld\.param\.u64 (%\w+), \[out\];")


def keep_alive(ptx: str) -> str:
    """Folds every register of the kernel into one word stored to out[7] just before `ret`, so that ptxas
    cannot remove the measured chains as dead code (the simulator runs them regardless)."""
    ptr = _OUTPTR.search(ptx)
    end = ptx.rfind("ret;")
    if not ptr or end < 0:
        return ptx
    lines = ["  .reg .b32 %stc_acc;", "  .reg .b32 %stc_t32;", "  .reg .b64 %stc_acc64;",
             "  mov.b32 %stc_acc, 0;", "  mov.b64 %stc_acc64, 0;"]  # fmt: skip
    for typ, name, count in _REGDECL.findall(ptx):
        for j in range(int(count)):
            reg = f"{name}{j}"
            if typ[1:] == "32":
                lines.append(f"  xor.b32 %stc_acc, %stc_acc, {reg};")
            elif typ[1:] == "16":
                lines += [f"  cvt.u32.u16 %stc_t32, {reg};", "  xor.b32 %stc_acc, %stc_acc, %stc_t32;"]
            else:
                lines.append(f"  xor.b64 %stc_acc64, %stc_acc64, {reg};")
    lines += ["  cvt.u32.u64 %stc_t32, %stc_acc64;", "  xor.b32 %stc_acc, %stc_acc, %stc_t32;",
              f"  st.global.u32 [{ptr[1]}+56], %stc_acc;"]  # fmt: skip
    return ptx[:end] + "\n".join(lines) + "\n  " + ptx[end:]


def sass_count(cubin: Path) -> int:
    """Number of SASS instructions in a cubin (cuobjdump), -1 where cuobjdump is missing."""
    try:
        out = subprocess.run(
            ["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return -1
    return sum(1 for line in out.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", line))


class SiliconEngine:
    """The slice of the Engine API the microbenchmarks use, on one CUDA GPU (CuPy)."""

    arch = "sm_90"

    def __init__(self, config: str | None = None) -> None:
        import cupy

        self._cp = cupy
        self._mem: dict[int, Any] = {}
        self._kernels: dict[str, tuple[Any, list[Any]]] = {}
        self._tmp = tempfile.TemporaryDirectory(prefix="stcsim-silicon-")
        self.sass_counts = SiliconEngine.loaded  # shared: the runners make a new engine per launch

    loaded: list[int] = []  # SASS instruction count of every module loaded, in order

    def load_ptx(self, text: str) -> list[str]:
        """Assembles (ptxas -O3, opaque initial values for alu_*/tensor_* kernels) and loads a module."""
        names = list(entry_params(text))
        if "tensor_stream" in names:
            text = distinct_accumulators(text)
        if any(n.startswith(("alu_", "tensor_")) for n in names):
            text = make_opaque(text)
        text = keep_alive(text)
        key = hashlib.sha256(text.encode()).hexdigest()[:16]
        ptx = Path(self._tmp.name, f"{key}.ptx")
        cubin = ptx.with_suffix(".cubin")
        ptx.write_text(text)
        subprocess.run(["ptxas", "-O3", f"-arch={self.arch}", str(ptx), "-o", str(cubin)], check=True)
        self.sass_counts.append(sass_count(cubin))
        module = self._cp.RawModule(path=str(cubin))
        for name, params in entry_params(text).items():
            self._kernels[name] = (module.get_function(name), params)
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
        rt = self._cp.cuda.runtime
        func(g, b, packed, shared_mem=shared_bytes)  # warm-up: instruction cache
        rt.deviceSynchronize()
        rt.memset(self._flush_buffer(), 1, _FLUSH_BYTES)  # data caches cold again, as at a simulated launch
        rt.deviceSynchronize()
        func(g, b, packed, shared_mem=shared_bytes)
        rt.deviceSynchronize()
        return _stats()

    def _flush_buffer(self) -> int:
        if not hasattr(self, "_flush"):
            SiliconEngine._flush = self._cp.cuda.alloc(_FLUSH_BYTES)
        return int(self._flush.ptr)


def silicon_ids() -> list[str]:
    """The microbenchmarks that run on silicon."""
    return [
        b.id
        for b in BENCHES
        if (b.group in SILICON_GROUPS or b.id in SILICON_EXTRA) and b.id not in NOT_ON_SILICON
    ]


def main(argv: list[str] | None = None) -> int:
    """Runs every silicon microbenchmark; writes bench, silicon value and the config's expectation."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--config", default="h100", help="the config whose expectations are listed beside")
    ap.add_argument("--only", default="", help="comma-separated benchmark ids (default: every silicon one)")
    a = ap.parse_args(argv)
    launch.Engine = SiliconEngine  # type: ignore[misc,assignment]  # same runners, silicon underneath
    rows = []
    for bid in a.only.split(",") if a.only else silicon_ids():
        SiliconEngine.loaded.clear()
        try:
            r = by_id(bid).runner(a.config)
            value, expected, note = r.value, r.expected, r.note
        except Exception as err:  # noqa: BLE001 - a benchmark PTX the GPU refuses is reported, not fatal
            value, expected, note = None, None, f"error: {err}"[:200]
        sass = "/".join(str(c) for c in SiliconEngine.loaded)
        rows.append(
            {"bench": bid, "silicon": value, "config_expected": expected, "sass_counts": sass, "note": note}
        )
        print(f"{bid:<32} silicon {value!s:>10}  {a.config} {expected!s:>8}  sass {sass}  {note}")
    # object columns and \r\n line ends: the bytes the csv module's writer gave the files already measured
    columns = ["bench", "silicon", "config_expected", "sass_counts", "note"]
    write_csv_atomic(pd.DataFrame(rows, columns=columns, dtype=object), a.out, lineterminator="\r\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

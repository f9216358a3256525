"""Silicon microbenchmarks behind the calibration misses: bandwidths, memory-level parallelism, SASS counts.

On a GPU machine (CuPy), writes under --out:
  bandwidth.csv  sustained DRAM bandwidth (stream copy, read-only, write-only, 1 MiB .. 1 GiB), L2 bandwidth
                 (read loops over L2-resident working sets) and L1 throughput (each CTA re-reads 16 KiB)
  mlp.csv        per-SM memory-level parallelism: U independent pointer chains per thread (U loads in flight
                 per warp, every lane a separate 128-byte line) x warps per SM, 1 CTA per SM
  sass.csv       per kernel of benchmarks/calibration/kernels/*.cu: SASS instructions (nvcc -cubin sm_90,
                 cuobjdump -sass) and its LDG/STG/LDS/STS/HMMA/atomic counts; wmma_load_probe gives the SASS
                 loads of one PTX wmma.load from global
Every row carries date, gpu, driver and sm_clock_mhz (nvidia-smi). ``--dry`` only compiles (and dumps SASS
where cuobjdump exists): it runs without a GPU.

    python -m benchmarks.calibration.silicon_memory --out $OUT/silicon_memory     # GPU machine
    python -m benchmarks.calibration.silicon_memory --out /tmp/sm --dry            # anywhere with nvcc
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

KERNELS = Path(__file__).resolve().parent / "kernels"
MIB = 1 << 20
SMS = 132
_OPS = {"ldg": r"LDG", "stg": r"STG", "lds": r"LDS", "sts": r"STS", "hmma": r"HMMA", "atomic": r"(ATOM|RED)"}


def parse_sass(text: str, ops: dict[str, str] | None = None) -> pd.DataFrame:
    """cuobjdump -sass text -> one row per function: SASS instruction count and counts per opcode class
    (`ops`: column -> opcode pattern, default the memory and HMMA classes)."""
    ops = _OPS if ops is None else ops
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        fn = re.search(r"Function : (\S+)", line)
        if fn:
            rows.append({"kernel": fn[1], "sass_insts": 0, **dict.fromkeys(ops, 0)})
            continue
        inst = re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if inst and rows and inst[1] != "NOP":
            rows[-1]["sass_insts"] += 1
            for key, pat in ops.items():
                rows[-1][key] += bool(re.match(pat, inst[1]))
    return pd.DataFrame(rows)


SM90A_MODULES = ("tc_wgmma",)
"""Kernel sources that need sm_90a (wgmma): compiled for it instead of sm_80 (PTX) / sm_90 (SASS)."""


def arch_of(cu: Path, default: str) -> str:
    """The -arch nvcc compiles kernels/<cu> for: sm_90a for the wgmma modules, else `default`."""
    return "sm_90a" if cu.stem in SM90A_MODULES else default


def sass_table(tmp: Path) -> pd.DataFrame:
    """Compiles every kernels/*.cu to an sm_90 cubin and tabulates its SASS (empty without cuobjdump)."""
    frames = []
    for cu in sorted(KERNELS.glob("*.cu")):
        cubin = tmp / f"{cu.stem}.cubin"
        subprocess.run(["nvcc", f"-arch={arch_of(cu, 'sm_90')}", "-O3", "-cubin", str(cu), "-o", str(cubin)],
                       check=True)
        if shutil.which("cuobjdump"):
            dump = ["cuobjdump", "-sass", str(cubin)]
            text = subprocess.run(dump, capture_output=True, text=True, check=True).stdout
            frames.append(parse_sass(text).assign(module=cu.stem))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def gpu_meta() -> dict[str, str]:
    """date, gpu, driver and the current and max SM clocks from nvidia-smi."""
    q = "name,driver_version,clocks.sm,clocks.max.sm"
    out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout.splitlines()[0]
    gpu, driver, sm, smax = (v.strip() for v in out.split(","))
    return {"date": time.strftime("%Y-%m-%d", time.gmtime()), "gpu": gpu, "driver": driver,
            "sm_clock_mhz": sm, "max_sm_clock_mhz": smax}


class Timer:
    """Loads the suite's PTX modules with CuPy and times launches with CUDA events (median of repeats)."""

    def __init__(self) -> None:
        import cupy

        self.cp = cupy
        self.mods = {m: cupy.RawModule(path=str(KERNELS / f"{m}.ptx")) for m in ("memory", "micro")}

    def ms(self, module: str, kernel: str, grid: int, block: int, args: tuple, repeats: int = 5) -> float:
        """Median milliseconds of `repeats` launches after one warm-up."""
        fn = self.mods[module].get_function(kernel)
        fn((grid,), (block,), args)
        times = []
        for _ in range(repeats):
            start, stop = self.cp.cuda.Event(), self.cp.cuda.Event()
            start.record()
            fn((grid,), (block,), args)
            stop.record()
            stop.synchronize()
            times.append(self.cp.cuda.get_elapsed_time(start, stop))
        return float(np.median(times))


def bandwidth(t: Timer) -> list[dict[str, Any]]:
    """DRAM (copy, read, write at 1 MiB .. 1 GiB), L2 (resident read loops) and L1 (per-CTA slices)."""
    cp, rows = t.cp, []
    grid = SMS * 8
    for mib in (1, 16, 64, 256, 1024):
        n = mib * MIB // 4
        src, dst, acc = cp.ones(n, cp.float32), cp.empty(n, cp.float32), cp.zeros(1, cp.float32)
        n4 = np.int64(n // 4)
        for kernel, args, moved in (("stream_copy", (src, dst, n4), 2 * n * 4),
                                    ("stream_read", (src, acc, n4), n * 4),
                                    ("stream_write", (dst, np.float32(1), n4), n * 4)):
            ms = t.ms("memory", kernel, grid, 256, args)
            rows.append({"bench": f"dram.{kernel}", "working_set_mib": mib, "bytes": moved, "ms": ms})
        del src, dst
    for mib in (2, 8, 24, 40):
        n = mib * MIB // 4
        src, out = cp.ones(n, cp.float32), cp.zeros(1, cp.float32)
        reps = max(1, 2048 // mib)
        ms = t.ms("micro", "read_loop", grid, 256, (src, out, np.int64(n // 4), np.int32(reps)))
        rows.append({"bench": "l2.read_loop", "working_set_mib": mib, "bytes": n * 4 * reps, "ms": ms})
    n4, reps, ctas = 1024, 512, SMS * 4  # 16 KiB per CTA, 4 CTAs per SM: 64 KiB of L1 per SM
    src, out = cp.ones(ctas * n4 * 4, cp.float32), cp.zeros(1, cp.float32)
    ms = t.ms("micro", "l1_read", ctas, 256, (src, out, np.int32(n4), np.int32(reps)))
    moved = ctas * n4 * 16 * reps
    rows.append({"bench": "l1.read_slice", "working_set_mib": 16 / 1024, "bytes": moved, "ms": ms})
    for r in rows:
        r["gb_per_s"] = r["bytes"] / r["ms"] / 1e6
    return rows


def mlp(t: Timer) -> list[dict[str, Any]]:
    """Loads completed per SM per microsecond for U chains per thread x warps per SM (1 CTA per SM)."""
    cp = t.cp
    nodes = 1 << 23  # 8 Mi nodes 128 bytes apart: a 1 GiB buffer, far beyond L2
    perm = cp.random.permutation(nodes).astype(cp.uint32)
    nxt = cp.zeros(nodes * 32, cp.uint32)
    nxt[perm.astype(cp.int64) * 32] = cp.roll(perm, -1)
    steps, rows = 64, []
    for u in (1, 2, 4, 8):
        for warps in (1, 2, 4, 8, 16, 32):
            out = cp.zeros(SMS * warps * 32, cp.uint32)
            args = (nxt, out, np.uint32(nodes), np.int32(steps))
            ms = t.ms("micro", f"mlp_chase{u}", SMS, warps * 32, args)
            loads = SMS * warps * 32 * u * steps
            rows.append({"loads_in_flight_per_warp": u, "warps_per_sm": warps, "ms": ms,
                         "ns_per_step": ms * 1e6 / steps, "loads_per_sm_per_us": loads / SMS / (ms * 1e3)})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Runs the benchmarks (or, with --dry, only the compilation) and writes the CSVs under --out."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dry", action="store_true", help="only compile and tabulate SASS (no GPU needed)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {} if a.dry else gpu_meta()
    with tempfile.TemporaryDirectory() as tmp:
        sass = sass_table(Path(tmp))
    tables = {"sass": sass}
    if not a.dry:
        timer = Timer()
        tables["bandwidth"] = pd.DataFrame(bandwidth(timer))
        tables["mlp"] = pd.DataFrame(mlp(timer))
        meta = gpu_meta()  # the clock while loaded
    for name, df in tables.items():
        for key, value in meta.items():
            df[key] = value
        df.to_csv(out / f"{name}.csv", index=False)
        print(f"== {name}\n{df.to_string(index=False)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Silicon probes behind the worst calibration classes (atomics, tensor-global, on-chip; issue 11 step 2).

On a GPU machine (CuPy, nvcc), compiles benchmarks/calibration/probes.cu for sm_90 and writes under --out:
  atomics.csv    global RED/ATOM (u32, u64) and shared atomics: throughput vs distinct addresses (bins) and
                 warp pattern (random lanes / whole warp one address / one line per warp), and the suite's
                 histogram_atomic kernel (n = 1M) over bins
  l2_read.csv    independent ld.global.cg loads: scattered (32 sectors per warp load) vs streamed (one line
                 per warp load, random or in order), L2-resident (16 MiB) and DRAM-sized (1 GiB), warps per
                 SM swept
  wmma_load.csv  wmma.load of a 16x16 f16 A fragment from global: cycles per iteration, dependent (latency)
                 and independent (throughput), lda 16 / 1024, L1-, L2- and DRAM-sized spans, warps per SM
  fma.csv        cycles per iteration of C dependent FMA chains per thread x warps per SM (clock64), and the
                 suite's fma_loop kernel at 1, 8 and 132 CTAs over iters (CUDA events)
  sass.txt       cuobjdump -sass of probes.cu and of the fma/atomics/fragments suite kernels (if cuobjdump)
Every CSV row carries date, gpu, driver and the SM clock (nvidia-smi). ``--dry`` only compiles (no GPU).

    python -m benchmarks.calibration.silicon_probes --out $OUT/probes        # GPU machine
    python -m benchmarks.calibration.silicon_probes --out /tmp/p --dry        # anywhere with nvcc
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.calibration.silicon_memory import KERNELS, SMS, gpu_meta

PROBES = Path(__file__).resolve().parent / "probes.cu"
MODES = {0: "random", 1: "warp_same", 2: "line_per_warp", 3: "streamed"}
GRID, BLOCK = SMS * 8, 256  # 64 warps per SM


def compile_cubin(src: Path, tmp: Path) -> Path:
    """nvcc -cubin -arch=sm_90 -O3 of `src` into `tmp`."""
    cubin = tmp / f"{src.stem}.cubin"
    subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-cubin", str(src), "-o", str(cubin)], check=True)
    return cubin


def sass_dump(cubins: list[Path]) -> str:
    """cuobjdump -sass of the cubins ('' without cuobjdump)."""
    if not shutil.which("cuobjdump"):
        return ""
    return "\n".join(subprocess.run(["cuobjdump", "-sass", str(c)], capture_output=True, text=True,
                                    check=True).stdout for c in cubins)


class Launcher:
    """CuPy modules (probes cubin, suite PTX) and CUDA-event timing (median of repeats after a warm-up)."""

    def __init__(self, probes_cubin: Path) -> None:
        import cupy

        self.cp = cupy
        self.mods = {"probes": cupy.RawModule(path=str(probes_cubin)),
                     **{m: cupy.RawModule(path=str(KERNELS / f"{m}.ptx"))
                        for m in ("atomics", "compute", "fragments")}}

    def ms(self, module: str, kernel: str, grid: int, block: int, args: tuple, repeats: int = 5) -> float:
        """Median milliseconds of `repeats` launches after one warm-up."""
        fn = self.mods[module].get_function(kernel)
        times = []
        for r in range(repeats + 1):
            start, stop = self.cp.cuda.Event(), self.cp.cuda.Event()
            start.record()
            fn((grid,), (block,), args)
            stop.record()
            stop.synchronize()
            if r:
                times.append(self.cp.cuda.get_elapsed_time(start, stop))
        return float(np.median(times))

    def cycles(self, kernel: str, grid: int, block: int, args_before: tuple, args_after: tuple) -> np.ndarray:
        """Per-warp clock64 cycles written by a probe taking (..., cycles, ...) (second launch)."""
        cp = self.cp
        out = cp.zeros(grid * block, cp.float32)
        cyc = cp.zeros(grid * block // 32, cp.int64)
        fn = self.mods["probes"].get_function(kernel)
        for _ in range(2):
            fn((grid,), (block,), (*args_before, out, cyc, *args_after))
        cp.cuda.Device().synchronize()
        return cp.asnumpy(cyc)


def atomics(t: Launcher) -> list[dict[str, Any]]:
    """Global and shared atomic throughput over bins x warp pattern; the suite's histogram over bins."""
    cp, rows, iters = t.cp, [], 32
    n_atom = GRID * BLOCK * iters
    sink = cp.zeros(2, cp.uint64)
    kinds = (("atom_red_u32", cp.uint32), ("atom_ret_u32", cp.uint32), ("atom_red_u64", cp.uint64))
    for kernel, dtype in kinds:
        for lg in (0, 1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24):
            bins = cp.zeros(1 << lg, dtype)
            for mode in (0, 1, 2):
                if mode == 2 and lg < 5:
                    continue
                args = (bins, sink, np.uint32((1 << lg) - 1), np.int32(iters), np.int32(mode))
                ms = t.ms("probes", kernel, GRID, BLOCK, args)
                rows.append({"bench": kernel, "bins": 1 << lg, "pattern": MODES[mode], "atomics": n_atom,
                             "ms": ms})
            del bins
    for kernel, dtype, per_thread in (("atom_shared_u32", cp.uint32, iters * 4),
                                      ("atom_shared_u64", cp.uint64, iters // 4),
                                      ("atom_shared_f32", cp.float32, iters // 4)):
        out = cp.zeros(1, dtype)
        for lg in (0, 1, 2, 4, 6, 8, 10, 12):
            for mode in (0, 1, 2):
                if mode == 2 and lg < 5:
                    continue
                args = (out, np.uint32((1 << lg) - 1), np.int32(per_thread), np.int32(mode))
                ms = t.ms("probes", kernel, GRID, BLOCK, args)
                rows.append({"bench": kernel, "bins": 1 << lg, "pattern": MODES[mode],
                             "atomics": GRID * BLOCK * per_thread, "ms": ms})
    n = 1 << 20
    x = cp.random.randint(0, 1 << 30, n, dtype=cp.int32)
    grid = min(-(-n // 256), SMS * 4)
    for lg in (0, 1, 2, 3, 4, 6, 8, 10, 12, 14, 16):
        bins = cp.zeros(1 << lg, cp.uint32)
        ms = t.ms("atomics", "histogram_atomic", grid, 256, (x, bins, np.int32(1 << lg), np.int32(n)))
        rows.append({"bench": "suite.histogram_atomic", "bins": 1 << lg, "pattern": "data", "atomics": n,
                     "ms": ms})
    for r in rows:
        r["atomics_per_ns"] = r["atomics"] / (r["ms"] * 1e6)
        r["ns_per_atomic_per_bin"] = r["ms"] * 1e6 / (r["atomics"] / r["bins"])
    return rows


def l2_reads(t: Launcher) -> list[dict[str, Any]]:
    """Scattered vs streamed independent loads, L2- and DRAM-sized; 1 CTA per SM of 1..32 warps, or 8 CTAs."""
    cp, rows = t.cp, []
    sink = cp.zeros(1, cp.uint32)
    for mib in (16, 1024):
        words = mib << 18
        src = cp.ones(words, cp.uint32)
        for mode in (0, 2, 3):
            for grid, block in ((SMS, 32), (SMS, 128), (SMS, 256), (SMS, 512), (SMS, 1024), (GRID, BLOCK)):
                iters = 64 if mode == 0 else 256
                ms = t.ms("probes", "l2_read", grid, block, (src, sink, np.uint32(words - 1), np.int32(iters),
                                                             np.int32(mode)))
                loads = grid * block // 32 * iters
                sectors = loads * (32 if mode == 0 else 4)
                warps = grid * block // 32 // SMS
                rows.append({"working_set_mib": mib, "pattern": MODES[mode], "warps_per_sm": warps,
                             "warp_loads": loads, "sectors": sectors, "ms": ms,
                             "sectors_per_sm_per_ns": sectors / SMS / (ms * 1e6),
                             "warp_loads_per_sm_per_ns": loads / SMS / (ms * 1e6)})
        del src
    return rows


def wmma_loads(t: Launcher) -> list[dict[str, Any]]:
    """Cycles per wmma.load(+mma) iteration: dependent and independent, lda x span x warps per SM."""
    cp, rows, iters = t.cp, [], 256
    spans = {"l1": 16 << 10, "l2": 8 << 20, "dram": 512 << 20}  # in halves
    a = cp.full(max(spans.values()) + 16 * 1024, 0.25, cp.float16)
    for kernel in ("wmma_load_dep", "wmma_load_ind"):
        for lda in (16, 1024):
            step = 256 if lda == 16 else 16  # the next fragment: 512 bytes on (lda 16) or 16 columns over
            for where, span in spans.items():
                for grid, block in ((1, 32), (SMS, 32), (SMS, 128), (SMS, 256), (SMS * 2, 512)):
                    cyc = t.cycles(kernel, grid, block, (a,), (np.int32(lda), np.uint32(span),
                                                               np.uint32(step), np.int32(iters)))
                    warps = max(1, grid * block // 32 // SMS)
                    rows.append({"bench": kernel, "lda": lda, "span": where, "warps_per_sm": warps,
                                 "grid": grid, "block": block, "cycles_per_iter_mean": cyc.mean() / iters,
                                 "cycles_per_iter_max": cyc.max() / iters, "ms": float("nan")})
    for size in (256, 512, 1024):  # the suite's kernel with warm caches (ncu measures it with flushed caches)
        a16, b16, c32 = cp.full(size * size, 0.25, cp.float16), cp.full(size * size, 0.5, cp.float16), \
            cp.empty(size * size, cp.float32)
        for kernel, cols in (("wmma_frag_global", 64), ("mma_frag_global", 32)):
            args = (a16, b16, c32, np.int32(size), np.int32(size), np.int32(size))
            fn = t.mods["fragments"].get_function(kernel)
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            fn((size // cols, size // 16), (128,), args)
            start.record()
            fn((size // cols, size // 16), (128,), args)
            stop.record()
            stop.synchronize()
            ms = cp.cuda.get_elapsed_time(start, stop)
            rows.append({"bench": f"suite.{kernel}", "lda": size, "span": f"{size}^3 warm", "warps_per_sm": 0,
                         "grid": size // cols * (size // 16), "block": 128, "ms": ms,
                         "cycles_per_iter_mean": float("nan"), "cycles_per_iter_max": float("nan")})
    return rows


def fma(t: Launcher) -> list[dict[str, Any]]:
    """Cycles per iteration of C FMA chains x warps per SM (clock64); the suite's fma_loop (CUDA events)."""
    rows, iters = [], 4096
    for chains in (1, 2, 4, 8):
        for block in (32, 64, 128, 256, 512, 1024):
            cyc = t.cycles(f"fma_chain{chains}", SMS, block, (), (np.int32(iters),))
            rows.append({"bench": f"fma_chain{chains}", "ctas": SMS, "block": block, "iters": iters,
                         "cycles_per_iter_mean": cyc.mean() / iters, "cycles_per_iter_max": cyc.max() / iters,
                         "ms": float("nan")})
    cp = t.cp
    for ctas in (1, 8, 132):
        for it in (0, 1024, 4096, 16384):
            x = cp.random.uniform(-1, 1, ctas * 128).astype(cp.float32)
            y = cp.empty_like(x)
            ms = t.ms("compute", "fma_loop", ctas, 128, (x, y, np.int32(it)))
            rows.append({"bench": "suite.fma_loop", "ctas": ctas, "block": 128, "iters": it,
                         "cycles_per_iter_mean": float("nan"), "cycles_per_iter_max": float("nan"), "ms": ms})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Compiles the probes, runs them (unless --dry) and writes the CSVs and the SASS under --out."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dry", action="store_true", help="only compile (and dump SASS where cuobjdump exists)")
    ap.add_argument("--only", default="atomics,l2_read,wmma_load,fma", help="comma-separated probe tables")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cubins = [compile_cubin(PROBES, Path(tmp))]
        cubins += [compile_cubin(KERNELS / f"{m}.cu", Path(tmp)) for m in ("compute", "atomics", "fragments")]
        (out / "sass.txt").write_text(sass_dump(cubins))
        if a.dry:
            return 0
        t = Launcher(cubins[0])
        probes = {"atomics": atomics, "l2_read": l2_reads, "wmma_load": wmma_loads, "fma": fma}
        for name in a.only.split(","):
            df = pd.DataFrame(probes[name](t))
            for key, value in gpu_meta().items():
                df[key] = value
            df.to_csv(out / f"{name}.csv", index=False)
            shown = df.drop(columns=["date", "gpu", "driver"])
            print(f"== {name}\n{shown.to_string(index=False)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

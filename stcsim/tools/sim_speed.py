"""`invoke bench`: the engine's speed and memory, measured on the kernel set.

Functional speed (warp instructions per host second, no timing) for the WMMA and mma.sync GEMMs at 512^3,
and timing-mode speed plus host seconds for the multistage mma.sync GEMM at 1024^3 (on a100 and h100: the V100
has neither mma.sync m16n8k16 nor cp.async, and the engine refuses to invent their timing) and the WMMA GEMM
at a ResNet-50 layer shape (M=256, N=3136, K=2304) on the v100 and h100 configs. Peak host memory (max RSS) is
reported for the whole run. One host core (the engine is single-threaded). `--classes`: one case per kernel
class of the project's set, then kernels in other styles (STYLE_CASES, from the calibration suite).

The network case times a whole network run as `invoke run --workload` does it (planning, every unique layer
shape simulated and checked against numpy, the results file written) on all cores: ResNet-50 at batch 1,
dense weights, v100. Target: under 60 s on two cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stcsim.harness.jobs import fixed_sparsity
from stcsim.kernels import Kernel, get_kernel, random_operands, run_gemm
from stcsim.kernels.problem import GemmProblem
from stcsim.kernels.registry import kernel_pattern
from stcsim.sim import Engine
from stcsim.sparsity.base import Pattern

WMMA = "gemm_wmma_f16_f32_tile64x64x32_warp32x32"
MMA = "gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3"

# (kernel, MxNxK, config or None)
DEFAULT_CASES: tuple[tuple[str, tuple[int, int, int], str | None], ...] = (
    (WMMA, (512, 512, 512), None),
    (MMA, (512, 512, 512), None),
    (MMA, (1024, 1024, 1024), "a100"),
    (MMA, (1024, 1024, 1024), "h100"),
    (WMMA, (256, 3136, 2304), "v100"),
    (WMMA, (256, 3136, 2304), "h100"),
)
QUICK_CASES = tuple((k, (256, 256, 256), c) for k, _, c in DEFAULT_CASES[:4])
# One case per kernel class on the timing model (the issue-12 speed figures): mma.sync and WMMA at 1024^3,
# the WMMA GEMM that loads fragments from global memory and the SIMT SGEMM at 512^3.
CLASS_CASES: tuple[tuple[str, tuple[int, int, int], str | None], ...] = (
    (MMA, (1024, 1024, 1024), "h100"),
    (WMMA, (1024, 1024, 1024), "v100"),
    ("gemm_wmma_global_f16_f32_tile32x32x16_warp16x16", (512, 512, 512), "v100"),
    ("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", (512, 512, 512), "v100"),
)
# Kernels written outside the project's style (issue 48: the speed must not depend on writing kernels the
# project's way), from the calibration suite (benchmarks/calibration/kernels/): (module, kernel, shape,
# plan builder, its arguments, config). Each checks its output against numpy as the suite does.
STYLE_CASES: tuple[tuple[str, str, str, str, tuple[Any, ...], str], ...] = (
    # WMMA fragments straight from global memory (the CUDA samples' GEMM), the ResNet-50 layer of issue 48
    ("tc_styles", "tcs_wmma_sample", "256x3136x2304,w16", "wmma_sample", (256, 3136, 2304, 4, 4), "v100"),
    # uncoalesced loads: a sector per lane (stride 32 words), and a gather through a random index array
    ("access", "strided_read", "n=1M,stride=32", "strided", (1 << 20, 32), "v100"),
    ("access", "gather", "n=1M", "gather", (1 << 20,), "v100"),
    # one warp per CTA: mma.sync + ldmatrix, a 32x32 tile per CTA (the H100's instructions)
    ("tc_styles", "tcs_mma_ldm_1w", "512x512x512", "row_major_1w", (512, 512, 512), "h100"),
    # atomics at L2: a histogram of 4096 bins
    ("atomics", "histogram_atomic", "n=1M,bins=4096", "histogram", (1 << 20, 4096), "v100"),
)
PERF_REPORT_LINES = 30
PERF_HZ = 2000  # --profile's samples per second
# --profile's child: this command with the engine module named by its first argument
PROFILE_CHILD = ("import sys; from pathlib import Path; "
                 "from stcsim.tools.pgo_train import load_engine_module; "
                 "load_engine_module(Path(sys.argv[1])); "
                 "from stcsim.tools.sim_speed import main; sys.exit(main(sys.argv[2:]))")
NETWORK_CASE = ("resnet50", "dense", "v100")
NETWORK_TARGET_SECONDS = 60.0


@dataclass(frozen=True)
class BenchRow:
    """One measured case."""

    kernel: str
    shape: str
    config: str
    host_seconds: float
    warp_insts: int
    warp_insts_per_second: float
    gpu_sim_cycle: int
    cpu_seconds: float = 0.0  # CPU time of the launch (less disturbed than wall time on a shared machine)


class _TimedLaunches:
    """An engine whose launches are timed (wall and CPU seconds each); everything else is the engine's own."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def launch(self, *args: Any, **kwargs: Any) -> Any:
        """The engine's launch, timed."""
        t0, c0 = time.perf_counter(), time.process_time()
        stats = self.engine.launch(*args, **kwargs)
        self.wall.append(time.perf_counter() - t0)
        self.cpu.append(time.process_time() - c0)
        return stats


CASE_SPARSITY = 0.75
"""The sparsity of a bench case whose kernel's pattern takes any target (CSR, tile-wise, ...)."""


def case_pattern(kernel: Kernel) -> tuple[Pattern, float]:
    """The pattern a bench case runs its kernel with (its family's default instance, as the sparse silicon
    table picks it) and the sparsity: the pattern's own (2:4: 0.5), 0 for dense, else CASE_SPARSITY."""
    pattern = kernel_pattern(kernel)
    if pattern is None:
        raise ValueError(f"{kernel.procedural_name}: no pattern instance of {kernel.pattern_name!r} fits it")
    own = fixed_sparsity(pattern)
    return pattern, own if own is not None else 0.0 if pattern.spec() == "dense" else CASE_SPARSITY


def bench_case(kernel: str, shape: tuple[int, int, int], config: str | None, seed: int = 0,
               repeat: int = 1) -> BenchRow:
    """Times one launch (the launch alone: allocation and copies excluded); with `repeat` > 1 the fastest
    of that many runs (wall and CPU time each their minimum: other processes only ever add time)."""
    k = get_kernel(kernel)
    pattern, sparsity = case_pattern(k)
    a, b = random_operands(GemmProblem(*shape), np.random.default_rng(seed))
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(repeat):  # one engine at a time: each is freed when its run ends
        eng = _TimedLaunches(Engine(config))
        _, stats = run_gemm(k, eng, a, b, pattern=pattern, sparsity=sparsity)
        wall += eng.wall
        cpu += eng.cpu
    dt = min(wall)
    wi = int(stats["warp_insts"])
    return BenchRow(kernel, "x".join(map(str, shape)), config or "functional", dt, wi, wi / dt,
                    int(stats.get("gpu_sim_cycle", 0)), min(cpu))


def _style_case(module: str, kernel: str, shape: str, plan: str, args: tuple[Any, ...]) -> Any:
    """The calibration-suite case (stcsim.experiments.calibration_cases.Case) of a STYLE_CASES row."""
    from stcsim.experiments import calibration_cases as cc
    from stcsim.experiments import tc_style_cases as tc

    builders: dict[str, Any] = {
        "wmma_sample": tc._wmma_sample,
        "row_major_1w": lambda m, n, k: tc._row_major(m, n, k, (32, 32), 32),
        "strided": cc._strided,
        "gather": cc._gather,
        "histogram": cc._histogram,
    }
    return cc.Case(kernel, module, shape, builders[plan](*args))


def bench_style(module: str, kernel: str, shape: str, plan: str, args: tuple[Any, ...], config: str | None,
                seed: int = 0, repeat: int = 1) -> BenchRow:
    """bench_case() for a calibration-suite kernel (STYLE_CASES): the launch alone timed, its output
    checked against numpy; with `repeat` > 1 the fastest of that many runs."""
    from stcsim.experiments.calibration_cases import run_case

    case = _style_case(module, kernel, shape, plan, args)
    wall: list[float] = []
    cpu: list[float] = []
    stats: dict = {}
    for _ in range(repeat):
        eng = _TimedLaunches(Engine(config))
        stats = run_case(case, eng, np.random.default_rng(seed))
        wall += eng.wall
        cpu += eng.cpu
    dt = min(wall)
    wi = int(stats["warp_insts"])
    cycles = int(stats.get("gpu_sim_cycle", 0))
    return BenchRow(kernel, shape, config or "functional", dt, wi, wi / dt, cycles, min(cpu))


@dataclass(frozen=True)
class NetworkBenchRow:
    """The network case: wall seconds of the whole run and what it simulated."""

    network: str
    pattern: str
    config: str
    layers: int
    workers: int
    host_seconds: float
    gpu_sim_cycle: int
    target_seconds: float = NETWORK_TARGET_SECONDS

    @property
    def met(self) -> bool:
        """Whether the run finished within the target."""
        return self.host_seconds < self.target_seconds


def bench_network(network: str = NETWORK_CASE[0], pattern: str = NETWORK_CASE[1],
                  config: str = NETWORK_CASE[2], workers: int = os.cpu_count() or 1,
                  layers: int | None = None) -> NetworkBenchRow:
    """Times one network run at batch 1 (planning included) into a temporary folder (`layers`: only the
    cheapest few unique shapes, for a smoke run)."""
    from stcsim.harness.jobs import Variant, plan_network
    from stcsim.harness.network_run import run_jobs

    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        jobs = plan_network(network, [Variant.make(pattern, 0.75, config)], batch=1, max_layers=layers)
        summary = run_jobs(jobs, out, progress=False, make={"workers": workers})
        seconds = time.perf_counter() - start
    if not summary.ok:
        raise RuntimeError(f"the network run failed: {summary.failed or 'a numpy check failed'}")
    total = summary.frame[summary.frame["row_type"] == "total"]
    return NetworkBenchRow(network, pattern, config, len(jobs), workers, seconds,
                           int(total["gpu_sim_cycle"].iloc[0]))


def format_network(row: NetworkBenchRow) -> str:
    """One line: what ran, how long, and the target."""
    verdict = "met" if row.met else "NOT met"
    return (f"network run {row.network} batch 1, {row.pattern} on {row.config}, {row.layers} unique layers "
            f"on {row.workers} worker(s): {row.host_seconds:.1f} s host, {row.gpu_sim_cycle:,} simulated "
            f"cycles (target < {row.target_seconds:.0f} s on 2 cores: {verdict})")


def host_description() -> str:
    """The host the figures were measured on: CPU model, cores this process may use, last-level cache (Linux
    sysfs; what is not known is left out). Speed figures depend on it (docs/performance.md, i12s)."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        model = names[0] if names else model
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parts = [model, f"{cores} cores"]
    levels = []  # (level, KiB) of cpu0's caches
    for c in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            size = (c / "size").read_text().strip()  # e.g. "32768K"
            unit = {"K": 1, "M": 1024}.get(size[-1:])
            kib = int(size[:-1]) * unit if unit else int(size) // 1024
            levels.append((int((c / "level").read_text()), kib))
        except (OSError, ValueError):
            continue
    if levels:
        level, kib = max(levels)
        parts.append(f"L{level} {kib / 1024:g} MiB")
    return ", ".join(parts)


def peak_rss_mib() -> float:
    """Peak resident memory of this process in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def format_rows(rows: list[BenchRow]) -> str:
    """A plain-text table of the rows."""
    head = (
        f"{'kernel':<50} {'shape':<18} {'config':<11} {'host s':>8} {'cpu s':>8} {'warp insts':>12} "
        f"{'winst/s':>10} {'winst/cpu-s':>11} {'cycles':>10}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.kernel:<50} {r.shape:<18} {r.config:<11} {r.host_seconds:>8.2f} {r.cpu_seconds:>8.2f} "
            f"{r.warp_insts:>12,} {r.warp_insts_per_second / 1e6:>9.2f}M "
            f"{r.warp_insts / max(r.cpu_seconds, 1e-9) / 1e6:>10.2f}M {r.gpu_sim_cycle:>10,}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI: python -m stcsim.tools.sim_speed [--quick | --network] [--csv PATH] (--quick: small kernel
    cases, no network case; --network: only the network case)."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small shapes (a smoke run)")
    ap.add_argument("--csv", default=None, help="also write the rows to this CSV file")
    ap.add_argument("--network", action="store_true", help="only the network case")
    ap.add_argument("--classes", action="store_true",
                    help="only the kernel-class cases (mma.sync, WMMA, WMMA-global, SIMT, and the styles of "
                         "the calibration suite: WMMA from global, uncoalesced, one-warp CTAs, atomics) on "
                         "the timing model, then each on the functional core alone")
    ap.add_argument("--case", default=None,
                    help="only this case: KERNEL:MxNxK:CONFIG (CONFIG none: functional), or the name of "
                         "one of --classes' style cases (" + ", ".join(st[1] for st in STYLE_CASES) + ")")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case; the fastest is reported")
    ap.add_argument("--profile", default=None, metavar="PERF_DATA",
                    help="run the selected cases under `perf record` into this file and print where the "
                         "launches' host time went, by function (needs perf and an engine with symbols)")
    ap.add_argument("--sampling", action="store_true",
                    help="only the sampling error: sampled vs full cycles per ResNet-50 batch-1 layer")
    ap.add_argument("--layers", type=int, default=None, help="--sampling: only the N cheapest layer shapes")
    ap.add_argument("--batch", type=int, default=1, help="--sampling: the batch")
    ap.add_argument("--always-full", action="store_true",
                    help="--sampling: run full detail also where the sampler fell back to it")
    ap.add_argument("--large", action="store_true",
                    help="--sampling: the multi-wave GEMMs instead of the network's layers")
    a = ap.parse_args(argv)
    if not a.profile:  # (a profile reruns this command, which prints it)
        print(f"host: {host_description()}", flush=True)
    if a.sampling:
        return _sampling(a.batch, a.layers, a.always_full, a.large, a.csv)
    if a.profile:
        import sys

        return _profile(sys.argv[1:] if argv is None else argv, a.profile)
    cases = () if a.network else QUICK_CASES if a.quick else DEFAULT_CASES
    if a.classes:
        cases = CLASS_CASES
    styles = STYLE_CASES if a.classes and not a.case else ()
    if a.case and a.case in {st[1] for st in STYLE_CASES}:
        cases, styles = (), tuple(st for st in STYLE_CASES if st[1] == a.case)
    elif a.case:
        try:
            cases = (parse_case(a.case),)
            case_pattern(get_kernel(cases[0][0]))
        except (ValueError, KeyError) as err:
            ap.error(str(err.args[0]).split(";")[0])
    rows = [bench_case(k, s, c, repeat=a.repeat) for k, s, c in cases]
    rows += [bench_style(*st[:5], st[5], repeat=a.repeat) for st in styles]
    if a.classes:  # the same launches on the functional core alone: what the timing model adds to each
        rows += [bench_case(k, s, None, repeat=a.repeat) for k, s, _ in cases]
        rows += [bench_style(*st[:5], None, repeat=a.repeat) for st in styles]
    if rows:
        print(format_rows(rows))
    if a.network or not (a.quick or a.classes or a.case):
        print(format_network(bench_network()), flush=True)
    print(f"peak host memory (max RSS): {peak_rss_mib():.0f} MiB")
    if a.csv and rows:
        import pandas as pd

        from stcsim.harness.files import write_csv_atomic

        write_csv_atomic(pd.DataFrame([asdict(r) for r in rows]), a.csv)
    return 0


def parse_case(text: str) -> tuple[str, tuple[int, int, int], str | None]:
    """'KERNEL:MxNxK:CONFIG' -> (kernel, shape, config or None for 'none')."""
    try:
        kernel, shape, config = text.split(":")
        m, n, k = (int(x) for x in shape.lower().split("x"))
    except ValueError:
        raise ValueError(f"--case must be KERNEL:MxNxK:CONFIG, got {text!r}") from None
    return kernel, (m, n, k), None if config == "none" else config


def _symbol_engine() -> Path | None:
    """The engine module of the build tree (`pip install -e` builds it there, then installs a stripped
    copy): the newest `build/cpXY-*/_engine*.so` of this checkout for this Python, or None."""
    import sys

    root = Path(__file__).resolve().parents[2]
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    found = sorted(root.glob(f"build/{tag}-*/_engine*.so"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def _profile(argv: list[str], data: str) -> int:
    """Re-runs this command without --profile under `perf record` (a timer event, DWARF call chains), then
    prints where the timed launches' host time went, by function (`perf_profile.launch_profile`). The
    child runs the build tree's engine module where there is one (the installed copy has no symbols)."""
    import shutil
    import subprocess
    import sys

    from stcsim.tools.perf_profile import launch_profile

    if shutil.which("perf") is None:
        raise SystemExit("--profile needs perf (linux-tools); see docs/performance.md for the recipe")
    args = [x for i, x in enumerate(argv) if x != "--profile" and (i == 0 or argv[i - 1] != "--profile")]
    args = [x for x in args if not x.startswith("--profile=")]
    cmd = [sys.executable, "-m", "stcsim.tools.sim_speed", *args]
    engine = _symbol_engine()
    if engine is not None:
        print(f"profiling the engine module {engine}", flush=True)
        cmd = [sys.executable, "-c", PROFILE_CHILD, str(engine), *args]
    record = ["perf", "record", "-e", "cpu-clock", "-F", str(PERF_HZ), "--call-graph", "dwarf,8192"]
    child = subprocess.run([*record, "-o", data, *cmd])
    if child.returncode:  # the child printed its own one-line error
        return child.returncode
    script = subprocess.run(["perf", "script", "-i", data], check=True, capture_output=True, text=True).stdout
    print(launch_profile(script).table(PERF_REPORT_LINES))
    return 0


def _sampling(batch: int, layers: int | None, always_full: bool, large: bool, csv: str | None) -> int:
    from stcsim.tools.sampling_bench import (
        DEFAULT_KERNELS,
        LARGE_GEMMS,
        SPARSE_KERNELS,
        format_markdown,
        measure_gemm,
        measure_network,
    )

    rows = []
    if large:
        rows = [measure_gemm(kernel, shape, config) for kernel, shape, config in LARGE_GEMMS]
    else:
        for kernel, config, pattern, sparsity in DEFAULT_KERNELS + SPARSE_KERNELS:
            rows += measure_network(kernel, config, batch=batch, always_full=always_full, layers=layers,
                                    pattern=pattern, sparsity=sparsity)
    print(format_markdown(rows), flush=True)
    print(f"peak host memory (max RSS): {peak_rss_mib():.0f} MiB")
    if csv:
        import pandas as pd

        from stcsim.harness.files import write_csv_atomic

        write_csv_atomic(pd.DataFrame([{**asdict(r), "error": r.error} for r in rows]), csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`invoke bench --sampling`: the error of sampled simulation, measured against full detail.

Every unique GEMM shape of a network (ResNet-50 at batch 1 by default) runs with a kernel on its config
(the dense kernels of DEFAULT_KERNELS and one kernel of each sparse family, SPARSE_KERNELS), sampled
(`launch(..., sample=tol)`) and in full detail; a row per layer gives both cycle counts, the error, what the
sampler did (`sample_mode`, docs/stats.md) and the host seconds of each, and the network total weights each
shape by its repeat count. A sampled run that stayed in full detail (every mode but 1, 5 and 6) runs the
same simulation as full detail, so its full-detail run is skipped unless `always_full` (its error is 0 by
construction; tests/sim/test_sim_sampling.py checks that equality).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from stcsim.harness.jobs import Variant, plan_network
from stcsim.harness.layer_run import run_job
from stcsim.kernels import GemmProblem, get_kernel, random_operands
from stcsim.kernels.protocol import as_pattern
from stcsim.kernels.run import launch
from stcsim.sim import Engine

SAMPLE_TOLERANCE = 0.02
# (kernel, config, pattern, sparsity): the dense SIMT, WMMA and mma.sync GEMMs (mma.sync needs cp.async: an
# Ampere+ config) and the 2:4 mma.sp GEMM at 50 %.
DEFAULT_KERNELS: tuple[tuple[str, str, str, float], ...] = (
    ("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", "v100", "dense", 0.0),
    ("gemm_wmma_f16_f32_tile64x64x32_warp32x32", "v100", "dense", 0.0),
    ("gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3", "h100", "dense", 0.0),
    ("gemm_mma_sp_f16_f32_tile128x128x64_warp64x64_stage3", "h100", "nm:N=2,M=4", 0.5),
)
# (kernel, config, pattern, sparsity): one kernel of each other sparse family, on a config it runs on (SHMMA:
# the V100 with the sparse Tensor Core extension, Extensor: the Titan V with its extension; the sm80
# gathered-tile kernels and the wgmma ones: the H100) at a sparsity its paper evaluates; a layer the kernel
# cannot implement would run the harness's dense fallback, marked in the sampler column. Not here: SparseRT's
# generated kernels (no loop to fast-forward, every layer in full detail, error 0 by construction; 53 s and
# about 700 MiB for the network: docs/performance.md).
SPARSE_KERNELS: tuple[tuple[str, str, str, float], ...] = (
    ("spmm_csr_f32_f32_tile4x64_warp1x64", "v100", "unstructured", 0.9),
    ("gemm_simt_channel_f32_f32_tile64x64x8_warp32x16_thread4x4", "v100", "channel", 0.5),
    ("gemm_simt_vw_l16k4_f32_f32_tile64x64x8_warp32x16_thread4x4", "v100", "vw:L=16,K=4", 0.75),
    ("gemm_shmma_k4_f16_f32_tile64x64x32_warp32x32", "v100+stc", "vw:L=16,K=4", 0.75),
    ("spmm_extensor_l32_f16_f32_tile32x32_warp16x16", "titanv+extensor", "extensor", 0.9),
    ("spmm_tvw_g64_f16_f32_tile64x64x64_warp32x32_stage3", "h100", "tvw", 0.75),
    ("spmm_shflbw_f16_f32_tile64x128x32_warp32x64_stage3", "h100", "shflbw", 0.75),
    ("gemm_tilewise_f16_f32_tile64x128x32_warp32x64_stage3", "h100", "tw", 0.75),
    ("gemm_tew_f16_f32_tile64x128x32_warp32x64_stage3", "h100", "tew", 0.75),
    ("gemm_wgmma_sp_f16_f32_tile128x128x64_stage5", "h100", "nm:N=2,M=4", 0.5),
)
# Multi-wave GEMMs (several waves of CTAs on their config), where the sampler has waves to skip.
LARGE_GEMMS: tuple[tuple[str, tuple[int, int, int], str], ...] = (
    ("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", (4096, 2048, 16), "v100"),
    ("gemm_wmma_f16_f32_tile64x64x32_warp32x32", (2048, 4096, 128), "v100"),
    ("gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3", (4096, 8192, 64), "h100"),
)
# sample_mode (docs/stats.md): 1/5 waves skipped, 6 loop iterations fast-forwarded within the launch.
MODES = {0: "off", 1: "sampled", 2: "full: few waves", 3: "full: CTAs differ", 4: "full: not stable",
         5: "sampled, scaled", 6: "loop fast-forwarded", 7: "full: no steady loop",
         8: "full: uneven CTAs per SM"}


@dataclass(frozen=True)
class SamplingRow:
    """One layer shape: sampled and full-detail cycles, the error, and host seconds."""

    kernel: str
    config: str
    layer: str
    shape: str
    repeat: int
    grid_ctas: int
    wave_ctas: int
    mode: str
    full_cycles: int
    sampled_cycles: int
    error_estimate: float
    full_seconds: float
    sampled_seconds: float

    @property
    def error(self) -> float:
        """Relative error of the sampled cycles."""
        return (self.sampled_cycles - self.full_cycles) / self.full_cycles


def _timed(job) -> tuple[dict, float]:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    row = run_job(job)
    if row.get("check_ok") is False:
        raise RuntimeError(f"{job.layer.name}: the numpy check failed ({row.get('rel_error')})")
    return row, time.perf_counter() - start


def measure_network(kernel: str, config: str, network: str = "resnet50", batch: int = 1,
                    tolerance: float = SAMPLE_TOLERANCE, always_full: bool = False,
                    layers: int | None = None, pattern: str = "dense",
                    sparsity: float = 0.0) -> list[SamplingRow]:
    """Sampled vs full-detail cycles of every unique layer shape of `network` with `kernel` on `config`
    (weights pruned to `sparsity` with `pattern` for a sparse kernel)."""
    jobs = plan_network(network, [Variant.make(pattern, sparsity, config, kernel)], batch, max_layers=layers,
                        sample=tolerance)
    rows = []
    for job in jobs:
        sampled, sampled_s = _timed(job)
        mode = int(sampled["sample_mode"])
        if mode in (1, 5, 6) or always_full:
            full, full_s = _timed(dataclasses.replace(job, sample=0.0))
        else:
            full, full_s = sampled, sampled_s
        shape = f"{job.layer.m}x{job.layer.n}x{job.layer.k}"
        sampler = MODES[mode] + (f" (dense fallback: {job.choice.kernel})" if job.choice.fallback else "")
        rows.append(SamplingRow(kernel, config, job.layer.name, shape, job.repeat,
                                int(sampled["grid_ctas"]), int(sampled["sample_wave_ctas"]), sampler,
                                int(full["gpu_sim_cycle"]), int(sampled["gpu_sim_cycle"]),
                                float(sampled["sample_error_estimate"]), full_s, sampled_s))
    return rows


def measure_gemm(kernel: str, shape: tuple[int, int, int], config: str,
                 tolerance: float = SAMPLE_TOLERANCE) -> SamplingRow:
    """Sampled vs full-detail cycles of one GEMM; the two outputs must be bit-identical."""
    k = get_kernel(kernel)
    a, b = random_operands(GemmProblem(*shape), np.random.default_rng(0))
    operands = k.prepare(a, b, as_pattern("dense"), 0.0)
    runs = []
    for sample in (tolerance, 0.0):
        start = time.perf_counter()
        out, stats = launch(k, Engine(config), operands, sample)
        runs.append((out, stats, time.perf_counter() - start))
    (out_s, sampled, sampled_s), (out_f, full, full_s) = runs
    if not np.array_equal(out_s, out_f):
        raise RuntimeError(f"{kernel} {shape}: the sampled launch computed a different output")
    return SamplingRow(kernel, config, "gemm", "x".join(map(str, shape)), 1, int(sampled["grid_ctas"]),
                       int(sampled["sample_wave_ctas"]), MODES[int(sampled["sample_mode"])],
                       int(full["gpu_sim_cycle"]), int(sampled["gpu_sim_cycle"]),
                       float(sampled["sample_error_estimate"]), full_s, sampled_s)


def network_error(rows: list[SamplingRow]) -> float:
    """Relative error of the network total (each shape weighted by its repeat count)."""
    full = sum(r.full_cycles * r.repeat for r in rows)
    sampled = sum(r.sampled_cycles * r.repeat for r in rows)
    return (sampled - full) / full


def format_markdown(rows: list[SamplingRow]) -> str:
    """A markdown table of the rows plus one total line per (kernel, config)."""
    head = ("| kernel | config | layer | MxNxK | x | CTAs | wave | sampler | full cycles | sampled cycles | "
            "error | estimate | full s | sampled s |")
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        lines.append(f"| {r.kernel} | {r.config} | {r.layer} | {r.shape} | {r.repeat} | {r.grid_ctas} | "
                     f"{r.wave_ctas} | {r.mode} | {r.full_cycles:,} | {r.sampled_cycles:,} | "
                     f"{100 * r.error:+.2f}% | {100 * r.error_estimate:.2f}% | {r.full_seconds:.1f} | "
                     f"{r.sampled_seconds:.1f} |")
    for kernel, config in dict.fromkeys((r.kernel, r.config) for r in rows):
        sel = [r for r in rows if (r.kernel, r.config) == (kernel, config)]
        lines.append(f"| **{kernel}** | {config} | **network total** | | | | | | "
                     f"{sum(r.full_cycles * r.repeat for r in sel):,} | "
                     f"{sum(r.sampled_cycles * r.repeat for r in sel):,} | "
                     f"{100 * network_error(sel):+.2f}% | | "
                     f"{sum(r.full_seconds for r in sel):.1f} | {sum(r.sampled_seconds for r in sel):.1f} |")
    return "\n".join(lines)

"""Simulated cycles in physical units: microseconds at the config's clock, TFLOP/s, % of the config's peak.

* time: ``cycles / gpu.core_clock_mhz`` microseconds (every cycle count of a config is at that clock).
* TFLOP/s: ``2 x M x N x K`` (the dense layer's multiply-adds, so a sparse kernel's rate is the effective
  one) over that time.
* peak: derived from the config's math units, per SM and cycle, times ``gpu.num_sms`` and the clock:
  - ``tensor-core``: the fastest dense Tensor Core instruction the config times: ``wmma``/``mma`` as
    FMAs per warp instruction (m x n x k of its shape) x ``tensor.pipes_per_subcore`` x ``sm.sub_cores`` /
    its ``issue_interval`` (the cycles its pipe is busy, set from the vendor's peak), and on Hopper
    ``hopper.wgmma_fma_per_cycle`` (per SM); sparse instructions (``mma.sp``) are not a dense peak;
  - ``cuda-core``: FP32 FMA, ``32 / units.fp32.issue_interval`` lanes x ``sm.sub_cores``.
  The h100 config gives 1,070 TFLOP/s (Tensor, wgmma at 1980 MHz) and 66.9 (FP32); v100 100 (its wmma
  interval of 40 cycles, measured, against the datasheet's 32) and 15.7.
"""

from __future__ import annotations

import re
from functools import cache

from stcsim.config import load_config

TENSOR_CORE, CUDA_CORE = "tensor-core", "cuda-core"
_WARP_MMA = re.compile(r"^tensor\.(?:wmma|mma)_m(\d+)n(\d+)k(\d+)_\w+\.issue_interval$")


@cache
def _flat(config: str) -> dict[str, object]:
    return dict(load_config(config).flat())


def clock_mhz(config: str) -> float:
    """The config's core clock (``gpu.core_clock_mhz``)."""
    return float(_flat(config)["gpu.core_clock_mhz"])


def time_us(cycles: float, config: str) -> float:
    """Microseconds that ``cycles`` core cycles take at the config's clock."""
    return float(cycles) / clock_mhz(config)


def tflops(macs: float, cycles: float, config: str) -> float:
    """TFLOP/s of ``macs`` multiply-adds (2 FLOP each) done in ``cycles`` at the config's clock."""
    return 2.0 * float(macs) / time_us(cycles, config) / 1e6 if cycles else float("nan")


@cache
def fma_per_sm_cycle(config: str, units: str) -> float:
    """Peak FMAs per SM per cycle of the config's ``tensor-core`` or ``cuda-core`` math (module docstring);
    0 when the config times no such instruction."""
    flat = _flat(config)
    sub_cores = int(flat["sm.sub_cores"])
    if units == CUDA_CORE:
        return 32 / int(flat["units.fp32.issue_interval"]) * sub_cores
    if units != TENSOR_CORE:
        raise ValueError(f"units must be {TENSOR_CORE} or {CUDA_CORE}, got {units!r}")
    pipes = float(flat.get("tensor.pipes_per_subcore", 1))
    rates = [int(m.group(1)) * int(m.group(2)) * int(m.group(3)) / int(value) * pipes * sub_cores
             for key, value in flat.items() if (m := _WARP_MMA.match(key))]
    if flat.get("hopper.enabled") and flat.get("hopper.wgmma_fma_per_cycle"):
        rates.append(float(flat["hopper.wgmma_fma_per_cycle"]))
    return max(rates, default=0.0)


def peak_tflops(config: str, units: str) -> float:
    """Peak TFLOP/s of the config's ``units`` (NaN when it has none)."""
    fma = fma_per_sm_cycle(config, units)
    if not fma:
        return float("nan")
    return 2.0 * fma * int(_flat(config)["gpu.num_sms"]) * clock_mhz(config) / 1e6


def columns(macs: float, cycles: float, config: str, units: str) -> dict[str, float]:
    """The unit columns of one launch (or a sum of launches): ``time_us``, ``tflops``, ``peak_tflops`` (of
    ``units``) and ``pct_peak``."""
    rate, peak = tflops(macs, cycles, config), peak_tflops(config, units)
    return {"time_us": time_us(cycles, config), "tflops": rate, "peak_tflops": peak,
            "pct_peak": 100.0 * rate / peak if peak == peak and peak else float("nan")}


def _is_number(value: object) -> bool:
    try:
        return float(value) == float(value)
    except (TypeError, ValueError):
        return False


def row_units(row: dict) -> str:
    """The math units of a result row's kernel (its ``math_units`` column, or read from the kernel's PTX for
    a row written before that column existed)."""
    which = row.get("math_units")
    if isinstance(which, str) and which in (TENSOR_CORE, CUDA_CORE):
        return which
    from stcsim.harness.kernel_choice import math_units

    return math_units(str(row["kernel"]))


def row_columns(row: dict, cycles_column: str = "gpu_sim_cycle") -> dict[str, float]:
    """``columns`` of one launch of a layer row (M x N x K MACs, its cycles, its config and kernel)."""
    cycles = row.get(cycles_column)
    if not _is_number(cycles):
        return {"time_us": float("nan"), "tflops": float("nan"), "peak_tflops": float("nan"),
                "pct_peak": float("nan")}
    macs = int(row["m"]) * int(row["n"]) * int(row["k"]) * launch_batch(row)
    return columns(macs, float(cycles), str(row["config"]), row_units(row))


def launch_batch(row: dict) -> int:
    """GEMMs per launch of a layer row: its ``launch_batch`` (a strided-batched launch), 1 where the row has
    none (one GEMM per launch, or a file from before the column)."""
    value = row.get("launch_batch")
    return int(value) if _is_number(value) else 1


def total_columns(layer_rows: list[dict], cycles_column: str = "gpu_sim_cycle") -> dict[str, float]:
    """``columns`` of a network total: every layer's cycles x repeat and MACs x repeat summed; the peak is the
    Tensor Cores' when any layer ran on them, else FP32's."""
    if not layer_rows or not all(_is_number(r.get(cycles_column)) for r in layer_rows):
        return row_columns({}, cycles_column)
    cycles = sum(float(r[cycles_column]) * int(r["repeat"]) for r in layer_rows)
    macs = sum(int(r["m"]) * int(r["n"]) * int(r["k"]) * launch_batch(r) * int(r["repeat"])
               for r in layer_rows)
    which = TENSOR_CORE if any(row_units(r) == TENSOR_CORE for r in layer_rows) else CUDA_CORE
    return columns(macs, cycles, str(layer_rows[0]["config"]), which)

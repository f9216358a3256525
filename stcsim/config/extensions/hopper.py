"""Config of the Hopper extension (engine/ext/hopper): wgmma, mbarrier and TMA timing on sm_90.

Every key exists only on ``gpu.sm_version`` >= 90, so the extension is enabled on sm_90 configs (h100) and
absent elsewhere (a kernel using its instructions is then a LaunchError). Keys whose source says "to be
measured" are placeholders awaiting the H100 microbenchmarks of benchmarks/gpu/hopper_micro.sh.
"""

from __future__ import annotations

from stcsim.config.params import Derived, Group, Int, Param

NAME = "hopper"
_WP = ("NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 989.4 dense FP16 Tensor TFLOPS on "
       "132 SMs at 1830 MHz = 4096 FLOP = 2048 FMA per cycle per SM; 1979 TFLOPS with 2:4 sparsity (2x)")
_MEASURE = "to be measured (placeholder; benchmarks/gpu/hopper_micro.sh on the H100)"


def _sm90_int(doc: str, unit: str, source: str, default: int, hi: int) -> Param:
    return Int(doc, unit, source, default, hi=hi, min_sm=90)


GROUP = Group("Hopper wgmma / mbarrier / TMA extension (engine/ext/hopper); sm_90 only", {
    "enabled": Param("bool", "Time the Hopper instructions (wgmma, mbarrier, cp.async.bulk.tensor)", "bool",
                     "present on every sm_90 config", True, min_sm=90),
    "wgmma_fma_per_cycle": _sm90_int("Dense f16/bf16 wgmma FMA per cycle per SM (the four sub-cores' "
                                     "Tensor Cores together): a m64nNk16 keeps each sub-core's pipe busy "
                                     "16 N 16 / (this / 4) cycles", "count", _WP, 2048, 1 << 16),
    "wgmma_latency": _sm90_int("Cycles from the end of a wgmma's Tensor Core occupancy until its "
                               "accumulators are ready", "cycles", _MEASURE, 16, 4096),
    "wgmma_sparse_speedup_pct": _sm90_int("Math rate of wgmma.sp (m64nNk32, 2:4 A) relative to the dense "
                                          "m64nNk16 per dense-equivalent FMA, in percent", "count",
                                          f"{_WP}; silicon rate {_MEASURE}", 200, 400),
    "tma_latency": _sm90_int("Cycles from cp.async.bulk.tensor issue until its first bytes arrive in shared "
                             "memory (the copy engine's latency, including the global read)", "cycles",
                             _MEASURE, 600, 100_000),
    "tma_bytes_per_cycle": _sm90_int("Bytes per cycle the SM's TMA copy engine moves into shared memory",
                                     "B/cycle", _MEASURE, 128, 4096),
})

DERIVED: dict[str, Derived] = {}

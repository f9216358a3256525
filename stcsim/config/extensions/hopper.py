"""Config of the Hopper extension (engine/ext/hopper): wgmma, mbarrier and TMA timing on sm_90.

Every key exists only on ``gpu.sm_version`` >= 90, so the extension is enabled on sm_90 configs (h100) and
absent elsewhere (a kernel using its instructions is then a LaunchError). The timing keys are calibrated on
the H100 microbenchmarks of benchmarks/gpu/hopper_micro.sh (results/reference/h100_hopper_micro.csv); the
fixed latencies are the measured ones less the instructions between the clock reads that the engine times
itself (docs/calibration.md, "Hopper microbenchmarks", compares the two per N).
"""

from __future__ import annotations

from stcsim.config.params import Derived, Group, Int, Param

NAME = "hopper"
_WP = ("NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 989.4 dense FP16 Tensor TFLOPS on "
       "132 SMs at 1830 MHz = 4096 FLOP = 2048 FMA per cycle per SM; 1979 TFLOPS with 2:4 sparsity (2x)")
_CSV = "results/reference/h100_hopper_micro.csv (H100 SXM, 2026-11-23, driver 580.159.04, 1980 MHz)"


def _sm90_int(doc: str, unit: str, source: str, default: int, hi: int) -> Param:
    return Int(doc, unit, source, default, hi=hi, min_sm=90)


GROUP = Group("Hopper wgmma / mbarrier / TMA extension (engine/ext/hopper); sm_90 only", {
    "enabled": Param("bool", "Time the Hopper instructions (wgmma, mbarrier, cp.async.bulk.tensor)", "bool",
                     "present on every sm_90 config", True, min_sm=90),
    "wgmma_fma_per_cycle": _sm90_int(
        "Dense f16/bf16 wgmma FMA per cycle per SM (the four sub-cores' Tensor Cores together): the math "
        "of a m64nNk16 takes 16 N 16 / (this / 4) cycles", "count",
        f"{_WP}; {_CSV}, rows wgmma_interval 128 and 256 (64 and 127 cycles = N/2)", 2048, 1 << 16),
    "wgmma_operand_bytes_per_cycle": _sm90_int(
        "Shared-memory bytes per cycle the wgmma operand fetch reads (A when it comes from a descriptor, "
        "64 x 16 f16 = 2048 B, the kept half when sparse; B, N x K f16): a wgmma occupies the Tensor Core "
        "pipes for the longer of its math and this fetch", "B/cycle",
        f"{_CSV}, rows wgmma_interval 8..64 (18, 20, 24, 31.25 = (2048 + 32 N) / 128) and "
        "wgmma_sp_interval 8..256 (20 .. 143 = (2048 + 64 N) / 128); 128 B/cycle is the 32 banks x 4 B of "
        "shared memory", 128, 4096),
    "wgmma_latency": _sm90_int(
        "Cycles from a dense wgmma's issue, beyond its math time, until its accumulators are ready", "cycles",
        f"{_CSV}, rows wgmma_latency 8..256 (65 .. 189 = 61 + N/2; 61 less the 4 cycles of "
        "fence/commit/wait the engine times itself)", 57, 4096),
    "wgmma_sp_latency": _sm90_int(
        "Cycles from a wgmma.sp's issue, beyond its math time, until its accumulators are ready", "cycles",
        f"{_CSV}, rows wgmma_sp_latency 8..256 (67 .. 191 = 63 + N/2; 63 less the 4 cycles of "
        "fence/commit/wait the engine times itself)", 59, 4096),
    "wgmma_sparse_speedup_pct": _sm90_int(
        "Math rate of wgmma.sp (m64nNk32, 2:4 A) relative to the dense m64nNk16 per dense-equivalent FMA, "
        "in percent (the 1.78x measured at N = 256 is the operand fetch, wgmma_operand_bytes_per_cycle)",
        "count", f"{_WP}; {_CSV}: wgmma_sp_latency grows N/2 for k32 as wgmma_latency does for k16",
        200, 400),
    "tma_latency": _sm90_int(
        "Cycles from cp.async.bulk.tensor issue until its first bytes arrive in shared memory (the copy "
        "engine's latency, including the global read)", "cycles",
        f"{_CSV}, rows tma_latency 1024..32768: least-squares fit latency = 355.7 + bytes / 107.2 (a fit of "
        "two parameters to six points, residuals -19..+11 cycles), less the 22 cycles of instructions the "
        "engine times itself between the clock reads (expect_tx, try_wait, a branch: 6 + "
        "units.branch.latency 16; 10 and 346 before the branch latency was measured, calibration step 30)",
        334, 100_000),
    "tma_bytes_per_cycle": _sm90_int(
        "Bytes per cycle the SM's TMA copy engine moves into shared memory", "B/cycle",
        f"{_CSV}, rows tma_latency 1024..32768: slope of the same least-squares fit (1 / 0.00933 cycles "
        "per byte)", 107, 4096),
})

DERIVED: dict[str, Derived] = {}

"""The T4 (Turing, sm_75) config: its published headline numbers and the sm_75 instruction set."""

from __future__ import annotations

from stcsim.config import load_config
from stcsim.harness.units import peak_tflops


def test_t4_headline_numbers_from_the_datasheet() -> None:
    flat = load_config("t4").flat()
    assert (flat["gpu.sm_version"], flat["gpu.num_sms"], flat["gpu.core_clock_mhz"]) == (75, 40, 1590)
    assert flat["tensor.cores_per_subcore"] * flat["sm.sub_cores"] * flat["gpu.num_sms"] == 320
    assert (flat["sm.unified_l1_shared_bytes"], flat["sm.shared_mem_bytes"]) == (96 * 1024, 64 * 1024)
    assert (flat["sm.max_threads"], flat["sm.max_ctas"]) == (1024, 16)
    assert flat["l2.size_bytes"] == 4 * 2**20 and flat["dram.bandwidth_gbps"] == 320


def test_t4_has_the_sm75_tensor_instructions_only() -> None:
    flat = load_config("t4").flat()
    assert "tensor.mma_m16n8k8_f32.latency" in flat and "smem.ldmatrix_x4.latency" in flat
    for key in ("tensor.mma_m16n8k16_f32.latency", "tensor.mma_sp_m16n8k32_f32.latency", "cp_async.mode"):
        assert key not in flat
    # wmma m16n16k16 = 4 x HMMA.1688: the same peak as mma.sync m16n8k8
    wmma = flat["tensor.wmma_m16n16k16_f32.issue_interval"]
    assert wmma == 4 * flat["tensor.mma_m16n8k8_f32.issue_interval"]


def test_t4_peaks_match_the_datasheet() -> None:
    assert round(peak_tflops("t4", "tensor-core"), 1) == 65.1   # T4 datasheet: 65 TFLOPS FP16 mixed
    assert round(peak_tflops("t4", "cuda-core"), 1) == 8.1      # T4 datasheet: 8.1 TFLOPS FP32

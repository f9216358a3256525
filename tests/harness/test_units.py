"""Cycles in physical units: time at the config's clock, TFLOP/s, the config's peak per math unit."""

import math

import pytest

from stcsim.harness import units


def test_time_is_cycles_at_the_config_clock() -> None:
    assert units.clock_mhz("h100") == 1980.0
    assert units.time_us(1980, "h100") == 1.0
    assert units.time_us(3060, "v100") == 2.0


def test_tflops_counts_two_flops_per_mac() -> None:
    # 1e6 MACs in 1980 cycles (1 us on the h100): 2e6 FLOP per us = 2 TFLOP/s
    assert units.tflops(1_000_000, 1980, "h100") == pytest.approx(2.0)
    assert math.isnan(units.tflops(1, 0, "h100"))


@pytest.mark.parametrize("config,units_,expected", [
    # a100: mma.m16n8k16 (2048 FMA) every 8 cycles per sub-core, 4 sub-cores, 108 SMs, 1410 MHz: 312 TFLOP/s
    ("a100", "tensor-core", 2 * 2048 / 8 * 4 * 108 * 1410e6 / 1e12),
    # h100: wgmma 2048 FMA per SM and cycle, 132 SMs, 1980 MHz (989.4 at the datasheet's 1830 MHz)
    ("h100", "tensor-core", 2 * 2048 * 132 * 1980e6 / 1e12),
    # v100: wmma m16n16k16 (4096 FMA) every 40 cycles per sub-core (the measured interval)
    ("v100", "tensor-core", 2 * 4096 / 40 * 4 * 80 * 1530e6 / 1e12),
    # FP32: 32 lanes / issue interval per sub-core: V100 64 FMA per SM and cycle (15.7), H100 128 (66.9)
    ("v100", "cuda-core", 2 * 64 * 80 * 1530e6 / 1e12),
    ("h100", "cuda-core", 2 * 128 * 132 * 1980e6 / 1e12),
])
def test_peak_from_the_config(config: str, units_: str, expected: float) -> None:
    assert units.peak_tflops(config, units_) == pytest.approx(expected)


def test_columns_give_the_share_of_peak() -> None:
    cols = units.columns(2048 * 132 * 1980, 1980, "h100", "tensor-core")  # one us at exactly the peak rate
    assert cols["time_us"] == 1.0 and cols["pct_peak"] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="units must be"):
        units.peak_tflops("h100", "fpga")


def test_network_run_prints_units_and_takes_phase_seq_kv_len(tmp_path, capsys) -> None:
    from stcsim.harness.network_run import main

    assert main(["--workload", "bert_base", "--seq", "8", "--layers", "1", "--config", "h100", "--jobs", "1",
                 "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "bert_base:seq_len=8 (batch 1)" in out and "us x repeat  TFLOP/s  % peak" in out
    assert "us at 1980 MHz" in out and "of the config's peak (1,070.5 TFLOP/s)" in out
    assert main(["--workload", "bert_base", "--phase", "decode", "--out", str(tmp_path)]) == 2
    assert "bert_base: bad parameter 'phase=decode'" in capsys.readouterr().err

"""TMA copies through the memory system (engine/timing/memsys.cc bulk_read): the streaming microbenchmark of
benchmarks/micro/tma_stream.py on the h100 config. One CTA is bounded by its copy engine and the latency of
memory (four copies in flight); every SM streaming an L2-resident tensor is bounded by the L2 slices' read
bandwidth, where the copy engines alone (132 x hopper.tma_bytes_per_cycle) would allow four times more; a
tensor that lives in DRAM streams at most at DRAM's sustained bandwidth; and every copied sector is counted
(bulk_copy_sectors) and read from DRAM once it misses L2. These pin what the config promises; silicon
(docs/calibration.md, step 31) streams TMA from L2 at up to twice the slices' rate with four CTAs per SM,
and does not overlap one CTA's copies as the engine does."""

from __future__ import annotations

from functools import cache

from benchmarks.micro.tma_stream import BOX_BYTES, Case, simulate_case
from stcsim.config import load_config

MIB = 1 << 20


@cache
def _keys() -> dict:
    return load_config("h100").flat()


def _rate(case: Case, stats: dict) -> float:
    return case.ctas * case.iters * BOX_BYTES / float(stats["gpu_sim_cycle"])


def test_every_copied_sector_goes_through_l2() -> None:
    """bulk_copy_sectors counts the copies' bytes in 32-byte sectors; a cold tensor is read from DRAM."""
    case = Case("one", 1, 8, 4 * MIB)
    stats = simulate_case("h100", case)
    assert stats["bulk_copy_sectors"] == case.iters * BOX_BYTES / 32
    assert stats["dram_read_bytes"] >= case.iters * BOX_BYTES


def test_all_sms_are_bounded_by_the_l2_slices() -> None:
    """132 CTAs re-reading a 16 MiB tensor: at most the slices' read bandwidth, at least 70 % of it (the
    first pass comes from DRAM), far below the copy engines' 132 x tma_bytes_per_cycle."""
    k = _keys()
    case = Case("sms_l2", k["gpu.num_sms"], 128, 16 * MIB)
    rate = _rate(case, simulate_case("h100", case))
    l2 = k["l2.slices"] * k["l2.slice_bytes_per_cycle"]
    assert 0.7 * l2 < rate <= l2
    assert rate < 0.5 * k["gpu.num_sms"] * k["hopper.tma_bytes_per_cycle"]


def test_a_dram_resident_stream_is_bounded_by_dram() -> None:
    """132 CTAs reading 1 GiB once: at most DRAM's sustained bandwidth per core cycle."""
    k = _keys()
    case = Case("sms_dram", k["gpu.num_sms"], 32, 1024 * MIB)
    rate = _rate(case, simulate_case("h100", case))
    dram = k["dram.sustained_bandwidth_gbps"] * 1e3 / k["gpu.core_clock_mhz"]
    assert 0.5 * dram < rate <= 1.02 * dram


def test_a_cheap_index_copies_the_same_boxes() -> None:
    """The issue cases' loop (masks instead of two rem.u32) copies the boxes the rem loop copies: the same
    sectors and DRAM bytes, in no more cycles; a cheap index needs power-of-two sizes."""
    import pytest

    plain, cheap = Case("rem", 1, 16, 4 * MIB), Case("and", 1, 16, 4 * MIB, cheap_index=True)
    a, b = simulate_case("h100", plain), simulate_case("h100", cheap)
    assert a["bulk_copy_sectors"] == b["bulk_copy_sectors"] and a["dram_read_bytes"] == b["dram_read_bytes"]
    assert b["gpu_sim_cycle"] <= a["gpu_sim_cycle"]
    with pytest.raises(ValueError, match="power-of-two"):
        Case("bad", 1, 12, 4 * MIB, cheap_index=True)


def test_rows_16_kib_apart_stay_in_l2_under_the_xor_set_index() -> None:
    """l2.set_index (h100: xor): each SM re-reading its rows 16 KiB apart (8.7 MB in all, a fifth of L2)
    reads them from DRAM once; the linear index crowds each slice's rows into 2 of its 256 sets and misses
    the second pass too (silicon: such rows re-read as fast as contiguous ones, docs/calibration.md)."""
    from benchmarks.micro.tma_stream import strided_cases

    case = strided_cases(132)[0]
    footprint = case.ctas * case.boxes * BOX_BYTES
    assert _keys()["l2.set_index"] == "xor"
    xor = simulate_case("h100", case)
    linear = simulate_case(load_config("h100", {"l2.set_index": "linear"}), case)
    assert xor["dram_read_bytes"] == footprint
    assert linear["dram_read_bytes"] == 2 * footprint
    assert xor["gpu_sim_cycle"] < 0.8 * linear["gpu_sim_cycle"]


def test_an_unknown_case_prefix_is_a_usage_error() -> None:
    """--cases naming no case: a one-line error and exit code 2, before any launch."""
    import pytest

    from benchmarks.micro.tma_stream import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--simulate", "h100", "--out", "unused.csv", "--cases", "nosuch"])
    assert exit_info.value.code == 2

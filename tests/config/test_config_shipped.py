"""Every shipped config and overlay loads, carries sources, and yields the papers' numbers."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from stcsim.config import CONFIG_DIR, PARAMS, available, load_config
from stcsim.config.yaml_comments import leaf_comments, split_source

BASES, OVERLAYS = available()


def test_the_shipped_set() -> None:
    assert BASES == ["a100", "h100", "t4", "titanv", "v100"]
    assert OVERLAYS == ["extensor", "stc", "stc-pingpong", "warm-icache"]


@pytest.mark.parametrize("spec", BASES + [f"{b}+{o}" for b, o in itertools.product(BASES, OVERLAYS)])
def test_every_config_and_overlay_loads_to_scalars(spec: str) -> None:
    flat = load_config(spec).flat()
    assert all(isinstance(v, (int, float, str, bool)) for v in flat.values())
    assert flat["gpu.num_sms"] > 0


FILES = sorted(CONFIG_DIR.glob("*.yaml")) + sorted(CONFIG_DIR.glob("overlays/*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_value_has_a_unit_and_source_comment(path: Path) -> None:
    comments = leaf_comments(path.read_text())
    assert comments
    for key, leaf in comments.items():
        unit, source = split_source(leaf.comment)
        assert unit == PARAMS[key].unit, f"{path.name}: {key}: comment unit {unit!r} != {PARAMS[key].unit!r}"
        assert source, f"{path.name}: {key}: no source"


@pytest.mark.parametrize(
    ("name", "sms", "clock", "l2_mb", "gbps"),
    [
        ("v100", 80, 1530, 6, 900),
        ("titanv", 80, 1200, 4.5, 652.8),
        ("a100", 108, 1410, 40, 1555),
        ("h100", 132, 1980, 50, 3350),
        ("t4", 40, 1590, 4, 320),
    ],
)
def test_headline_facts(name: str, sms: int, clock: float, l2_mb: float, gbps: float) -> None:
    cfg = load_config(name)
    assert cfg.get("gpu.num_sms") == sms
    assert cfg.get("gpu.core_clock_mhz") == clock
    assert cfg.get("l2.size_bytes") == l2_mb * 2**20
    assert cfg.get("dram.bandwidth_gbps") == gbps


def test_v100_is_paper_001() -> None:
    flat = load_config("v100").flat()
    assert flat["tensor.wmma_m16n16k16_f32.latency"] == 40
    assert flat["tensor.cores_per_subcore"] * flat["sm.sub_cores"] * flat["gpu.num_sms"] == 640
    assert flat["sm.unified_l1_shared_bytes"] == 128 * 1024
    assert flat["tensor.pipes_per_subcore"] == 1


def test_stc_overlay_exposes_the_paper_001_timings() -> None:
    flat = load_config("v100+stc").flat()
    assert flat["stc.enabled"] is True and flat["stc.pingpong"] is False
    assert (flat["stc.dense_cycles"], flat["stc.smma_k4.latency"]) == (40, 26)
    assert flat["stc.dense_pingpong.latency"] == 34
    assert (flat["stc.smma_k2.latency"], flat["stc.smma_k8.latency"]) == (18, 50)


def test_pingpong_overlay_switches_the_latencies_in_effect() -> None:
    cfg = load_config("v100+stc-pingpong")
    assert cfg.get("stc.enabled") is True
    assert (cfg.get("stc.dense_pingpong.latency"), cfg.get("stc.smma_k4.latency")) == (34, 20)
    assert (cfg.get("stc.smma_k2.latency"), cfg.get("stc.smma_k8.latency")) == (12, 38)


def test_extensor_overlay() -> None:
    flat = load_config("titanv+extensor").flat()
    assert flat["extensor.enabled"] is True
    assert (flat["extensor.max_l"], flat["extensor.block_skip"]) == (64, "phase_skip")
    assert (flat["extensor.min_block_cycles"], flat["extensor.phase_overhead_cycles"]) == (2, 2)


def test_overlays_compose_in_order_and_accept_paths(tmp_path) -> None:
    off = tmp_path / "off.yaml"
    off.write_text("stc:\n  pingpong: false\n")
    assert load_config(f"v100+stc-pingpong+{off}").get("stc.smma_k4.latency") == 26
    assert load_config(f"{CONFIG_DIR / 'v100.yaml'}+stc").get("stc.enabled") is True


def test_sm_gated_keys_exist_only_where_the_isa_has_them() -> None:
    v100, h100 = load_config("v100").flat(), load_config("h100").flat()
    for key in ("tensor.mma_sp_m16n8k32_f32.latency", "cp_async.mode", "smem.ldmatrix_x4.latency"):
        assert key not in v100 and key in h100
    assert h100["smem.ldmatrix_x4.latency"] == (h100["smem.latency"] + 3 * h100["smem.wavefront_latency"]
                                                + h100["smem.matrix_extra_latency"])


def test_latency_split_reproduces_the_configured_totals() -> None:
    for name in BASES:
        f = load_config(name).flat()
        assert f["l1d.hit_latency"] + 2 * f["icnt.latency"] + f["l2.access_cycles"] == f["l2.hit_latency"]
        assert f["l2.hit_latency"] + f["dram.access_cycles"] == f["dram.latency"]


def test_sources_say_where_each_value_comes_from() -> None:
    cfg = load_config("v100+stc")
    assert cfg.source("gpu.core_clock_mhz").startswith("configs/v100.yaml: paper 001")
    assert cfg.source("stc.enabled").startswith("configs/overlays/stc.yaml: ")
    assert cfg.source("stc.sets").startswith("default: paper 001")
    assert cfg.source("stc.dense_cycles").startswith("derived: ")

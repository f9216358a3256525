"""Bad configs fail with a ConfigError that names the key, the file and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from stcsim.config import CONFIG_DIR, ConfigError, load_config


def _v100_with(tmp_path: Path, old: str, new: str) -> str:
    text = (CONFIG_DIR / "v100.yaml").read_text()
    assert old in text
    path = tmp_path / "broken.yaml"
    path.write_text(text.replace(old, new, 1))
    return str(path)


def _overlay(tmp_path: Path, text: str) -> str:
    path = tmp_path / "over.yaml"
    path.write_text(text)
    return f"v100+{path}"


def test_missing_required_key(tmp_path: Path) -> None:
    spec = _v100_with(tmp_path, "  hit_latency: 28 ", "  # hit_latency: 28 ")
    with pytest.raises(ConfigError, match=r"l1d\.hit_latency: missing required key .*cycles") as err:
        load_config(spec)
    assert "broken.yaml" in str(err.value) and err.value.key == "l1d.hit_latency"


def test_wrong_type(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"over\.yaml: l1d\.assoc: expected an integer, got 'four' \(str\)"):
        load_config(_overlay(tmp_path, "l1d:\n  assoc: four\n"))
    with pytest.raises(ConfigError, match=r"stc\.enabled: expected true or false"):
        load_config(_overlay(tmp_path, "stc:\n  enabled: 1\n"))
    with pytest.raises(ConfigError, match=r"sm\.max_ctas: expected an integer, got 2.5"):
        load_config(_overlay(tmp_path, "sm:\n  max_ctas: 2.5\n"))


def test_out_of_range(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"over\.yaml: sm\.max_threads: 4100 is out of range; "
                                          r"allowed: int in \[1, 4096\], multiple of 32"):
        load_config(_overlay(tmp_path, "sm:\n  max_threads: 4100\n"))
    with pytest.raises(ConfigError, match=r"extensor\.block_skip: 'some' is not allowed; allowed: one of "
                                          r"'literal', 'row_skip', 'phase_skip'"):
        load_config(_overlay(tmp_path, "extensor:\n  block_skip: some\n"))
    with pytest.raises(ConfigError, match=r"sched\.policy: 'fifo' is not allowed; "
                                          r"allowed: one of 'gto', 'lrr'"):
        load_config(_overlay(tmp_path, "sched:\n  policy: fifo\n"))


def test_unknown_key_suggests_the_near_miss(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"over\.yaml: l1d\.asoc: unknown key; did you mean 'l1d\.assoc'"):
        load_config(_overlay(tmp_path, "l1d:\n  asoc: 4\n"))
    with pytest.raises(ConfigError, match=r"l1\.hit_latency: unknown key; did you mean 'l1d\.hit_latency'"):
        load_config(_overlay(tmp_path, "l1:\n  hit_latency: 4\n"))
    with pytest.raises(ConfigError, match=r"tensor\.wmma_m16n16k16_f32: is a group"):
        load_config(_overlay(tmp_path, "tensor:\n  wmma_m16n16k16_f32: 40\n"))


def test_derived_keys_cannot_be_set(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"stc\.dense_cycles: is derived \(.*\) and cannot be set"):
        load_config(_overlay(tmp_path, "stc:\n  dense_cycles: 30\n"))


def test_bad_overlay_and_base_names_list_what_is_available() -> None:
    with pytest.raises(ConfigError, match=r"unknown overlay 'stc-pingpnog'; available: extensor, stc, "
                                          r"stc-pingpong, warm-icache; did you mean 'stc-pingpong'"):
        load_config("v100+stc-pingpnog")
    with pytest.raises(ConfigError, match=r"unknown config 'v1000'; available: a100, h100, t4, titanv, v100"):
        load_config("v1000")


def test_keys_absent_below_their_sm_version(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"over\.yaml: cp_async\.mode: exists only on "
                                          r"gpu\.sm_version >= 80"):
        load_config(_overlay(tmp_path, "cp_async:\n  mode: sync\n"))
    with pytest.raises(ConfigError, match=r"needs gpu\.sm_version >= 80"):
        load_config("v100").get("tensor.mma_m16n8k16_f32.latency")


def test_cross_key_rules_name_keys_and_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"l1d\.size_bytes: violates: L1D and the shared carve-out "
                                          r".*over\.yaml"):
        load_config(_overlay(tmp_path, "l1d:\n  size_bytes: 65536\n"))
    with pytest.raises(ConfigError, match=r"stc\.smma_k4\.latency: is derived"):
        load_config(_overlay(tmp_path, "stc:\n  smma_k4:\n    latency: 30\n"))
    with pytest.raises(ConfigError, match=r"units\.shfl\.issue_interval: violates: a measured shfl latency"):
        load_config(_overlay(tmp_path, "units:\n  shfl:\n    latency: 26\n"))


@pytest.mark.parametrize(("overlay", "message"), [
    ("icache:\n  l0_bytes: 1000\n", r"icache\.l0_bytes: violates: the L0 instruction cache is whole lines"),
    ("l2:\n  dram_fetch_bytes: 96\n", r"l2\.dram_fetch_bytes: violates: an L2 miss fetches whole sectors"),
    ("l2:\n  slice_interleave_bytes: 96\n", r"l2\.slice_interleave_bytes: violates: the slice interleave"),
    ("l1d:\n  sector_bytes: 64\n  store_sector_cycles: 2.0\n", r"l1d\.store_sector_cycles: violates"),
    ("l2:\n  set_index: xor\n  size_bytes: 4718592\n",
     r"l2\.(set_index|size_bytes): violates: an xor set index needs a power-of-two number of sets"),
])
def test_the_checks_the_engine_once_made_are_rules(tmp_path: Path, overlay: str, message: str) -> None:
    """Constraints the C++ reader used to check (and could word differently) are Python rules, reported
    against the config file before the engine sees it."""
    with pytest.raises(ConfigError, match=message):
        load_config(_overlay(tmp_path, overlay))


def test_get_unknown_key_suggests() -> None:
    with pytest.raises(ConfigError, match=r"gpu\.num_sm: unknown key; did you mean 'gpu\.num_sms'"):
        load_config("v100").get("gpu.num_sm")


def test_overrides_are_checked_like_a_file() -> None:
    cfg = load_config("v100", overrides={"l2": {"size_bytes": 12 * 2**20}})
    assert cfg.get("l2.sets_per_slice") == 64 and cfg.source("l2.size_bytes") == "<overrides>: "
    with pytest.raises(ConfigError, match=r"<overrides>: dram\.latency: expected an integer"):
        load_config("v100", overrides={"dram.latency": "slow"})


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf"])
@pytest.mark.parametrize("key", ["dram.bandwidth_gbps", "gpu.core_clock_mhz"])
def test_non_finite_numbers_are_rejected(tmp_path: Path, key: str, value: str) -> None:
    group, leaf = key.split(".")
    shown = {"n": "nan", "i": "inf", "-": "-inf"}[value.lower()[1] if value[0] == "." else "-"]
    with pytest.raises(ConfigError, match=rf"over\.yaml: {key}: expected a finite number, got {shown}$"):
        load_config(_overlay(tmp_path, f"{group}:\n  {leaf}: {value}\n"))


def test_non_finite_numbers_name_the_base_file_and_overrides(tmp_path: Path) -> None:
    spec = _v100_with(tmp_path, "  bandwidth_gbps: 900 ", "  bandwidth_gbps: .nan ")
    with pytest.raises(ConfigError, match=r"broken\.yaml: dram\.bandwidth_gbps: expected a finite number"):
        load_config(spec)
    finite = r"<overrides>: gpu\.core_clock_mhz: expected a finite number, got nan$"
    with pytest.raises(ConfigError, match=finite):
        load_config("v100", overrides={"gpu.core_clock_mhz": float("nan")})
    with pytest.raises(ConfigError, match=r"<overrides>: l2\.size_bytes: 1{40} is too large"):
        load_config("v100", overrides={"l2.size_bytes": int("1" * 40)})


def test_duplicate_keys_name_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"over\.yaml:4: l1d\.assoc: duplicate key \(first set at line 2\)"):
        load_config(_overlay(tmp_path, "l1d:\n  assoc: 4\n  hit_latency: 30\n  assoc: 8\n"))
    with pytest.raises(ConfigError, match=r"over\.yaml:3: l1d: duplicate key \(first set at line 1\)$"):
        load_config(_overlay(tmp_path, "l1d:\n  assoc: 4\nl1d:\n  hit_latency: 30\n"))
    text = (CONFIG_DIR / "v100.yaml").read_text()
    line = next(i for i, s in enumerate(text.splitlines(), 1) if s.startswith("  bandwidth_gbps:"))
    spec = _v100_with(tmp_path, "  bandwidth_gbps: 900 ", "  bandwidth_gbps: 900\n  bandwidth_gbps: 901 ")
    with pytest.raises(ConfigError, match=rf"broken\.yaml:{line + 1}: dram\.bandwidth_gbps: duplicate key "
                                          rf"\(first set at line {line}\)"):
        load_config(spec)

"""Capabilities as explicit keys (issue 47): features.<name>, derived from gpu.sm_version and the schema's
min_sm of each feature's timing keys, are what the engine reads to decide whether a GPU has an instruction."""

from __future__ import annotations

from pathlib import Path

import pytest

from stcsim.config import ConfigError, load_config
from stcsim.config.derived import FEATURE_KEYS
from stcsim.config.schema import PARAMS


@pytest.mark.parametrize(("config", "expected"), [
    ("v100", {"wmma": True, "mma_m16n8k8": False, "mma_m16n8k16": False, "mma_sp": False, "cp_async": False}),
    ("t4", {"wmma": True, "mma_m16n8k8": True, "mma_m16n8k16": False, "mma_sp": False, "cp_async": False}),
    ("a100", {"wmma": True, "mma_m16n8k8": True, "mma_m16n8k16": True, "mma_sp": True, "cp_async": True}),
    ("h100", {"wmma": True, "mma_m16n8k8": True, "mma_m16n8k16": True, "mma_sp": True, "cp_async": True}),
])
def test_features_follow_the_sm_version(config: str, expected: dict[str, bool]) -> None:
    flat = load_config(config).flat()
    assert {name: flat[f"features.{name}"] for name in FEATURE_KEYS} == expected


def test_a_feature_is_on_exactly_where_its_timing_keys_exist() -> None:
    for config in ("v100", "t4", "a100", "h100"):
        flat = load_config(config).flat()
        for name, (_, key) in FEATURE_KEYS.items():
            assert flat[f"features.{name}"] == (key in flat), (config, name)


def test_features_cannot_be_set(tmp_path: Path) -> None:
    path = tmp_path / "over.yaml"
    path.write_text("features:\n  mma_sp: true\n")
    with pytest.raises(ConfigError, match=r"features\.mma_sp: is derived"):
        load_config(f"v100+{path}")


def test_every_feature_names_a_declared_timing_key() -> None:
    assert all(key in PARAMS for _, key in FEATURE_KEYS.values())

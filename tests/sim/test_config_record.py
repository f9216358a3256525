"""The engine's typed config record against the Python flat config, key for key (config read once)."""

from __future__ import annotations

import itertools

import pytest

from stcsim import _engine
from stcsim.config import ConfigError, available, load_config
from stcsim.config.derived import DERIVED
from stcsim.config.extensions import extension_groups
from stcsim.config.schema import PARAMS
from stcsim.sim import Engine
from stcsim.sim.config_check import consumer_of, unread_engine_keys

BASES, OVERLAYS = available()
SPECS = [*BASES, *(f"{b}+{o}" for b, o in itertools.product(BASES, OVERLAYS))]


def _all_on(base: str) -> dict[str, bool]:
    """Overrides that switch every ISA extension on that `base`'s sm_version has (hopper: sm_90 only)."""
    sm = int(load_config(base).flat()["gpu.sm_version"])
    return {f"{name}.enabled": True for name in extension_groups()
            if (PARAMS[f"{name}.enabled"].min_sm or 0) <= sm}


def _record(spec: str, overrides: dict | None = None) -> tuple[dict, dict]:
    flat = load_config(spec, overrides).flat()
    eng = _engine.Engine(True)
    eng.set_config(flat)
    return flat, dict(eng.config_record())


@pytest.mark.parametrize("spec", BASES)
def test_record_holds_exactly_the_python_values(spec: str) -> None:
    flat, record = _record(spec)
    assert record, "the engine read no key"
    for key, value in record.items():
        assert key in flat, f"the engine read {key}, which the Python config does not have"
        expected = float(value) if isinstance(flat[key], bool) else flat[key]
        assert value == expected, key


@pytest.mark.parametrize("spec", BASES)
def test_engine_reads_every_engine_key_of_a_base_config(spec: str) -> None:
    flat, record = _record(spec)
    assert unread_engine_keys(load_config(spec), record) == []


def test_declared_consumers_are_true_across_the_shipped_configs() -> None:
    """`used_by="engine"` keys are read somewhere; every other key is never read by the engine."""
    read: set[str] = set()
    present: set[str] = set()
    for spec, overrides in [*((s, None) for s in SPECS), *((b, _all_on(b)) for b in BASES)]:
        flat, record = _record(spec, overrides)
        read |= set(record)
        present |= set(flat)
    for key in present:
        if consumer_of(key) == "engine":
            assert key in read, f"{key}: declared engine, never read"
        else:
            assert key not in read, f"{key}: declared {consumer_of(key)!r} but the engine reads it"
    assert present <= set(PARAMS) | set(DERIVED)


def test_the_engine_has_no_default_for_a_missing_key() -> None:
    flat = load_config("v100").flat()
    keys = ("gpu.launch_overhead_cycles", "sched.issue_width", "smem.wavefront_latency", "l2.access_cycles")
    for key in keys:
        partial = {k: v for k, v in flat.items() if k != key}
        eng = _engine.Engine(True)
        with pytest.raises(ValueError, match=key.replace(".", r"\.")):
            eng.set_config(partial)


def test_shared_memory_limit_comes_from_the_config() -> None:
    from stcsim.sim import LaunchError

    ptx = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k() { .reg .b32 %r<2>; mov.u32 %r1, 1; ret; }
"""
    limit = int(load_config("v100").get("sm.max_shared_per_cta_bytes"))
    eng = Engine("v100")
    eng.load_ptx(ptx)
    eng.launch("k", 1, 32, [], limit)
    with pytest.raises(LaunchError, match=f"allows {limit}"):
        eng.launch("k", 1, 32, [], limit + 16)


def test_an_enabled_feature_nobody_reads_is_refused() -> None:
    """A feature group switched on whose keys the engine does not read is a ConfigError naming them (the
    record of an engine built without the stc extension: no stc.* key read)."""
    from stcsim.sim import config_check

    gpu = load_config("v100+stc")
    record = {k: v for k, v in _record("v100+stc")[1].items() if not k.startswith("stc.")}
    unread = config_check.unread_engine_keys(gpu, record)
    assert "stc.enabled" in unread and all(k.startswith("stc.") for k in unread)
    with pytest.raises(ConfigError, match=r"stc\.enabled"):
        config_check.check_engine_reads(gpu, record)

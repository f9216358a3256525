"""Check that the engine reads every config key declared as read by it (``used_by="engine"``).

A key the engine was meant to read but does not would let a config pretend to model something it does not
(e.g. ``v100+stc`` simulating exactly as ``v100``). Keys of a feature group switched off by its
``<group>.enabled: false`` are exempt: nothing should read them.
"""

from __future__ import annotations

from collections.abc import Mapping

from stcsim.config import ConfigError, GpuConfig
from stcsim.config.derived import DERIVED
from stcsim.config.schema import PARAMS


def consumer_of(key: str) -> str:
    """Who reads ``key``: the ``used_by`` of its declaration (a param or a derived value)."""
    if key in PARAMS:
        return PARAMS[key].used_by
    return DERIVED[key].used_by


def unread_engine_keys(gpu: GpuConfig, record: Mapping[str, object]) -> list[str]:
    """Keys of ``gpu`` declared as read by the engine that are missing from the engine's ``record``."""
    flat = gpu.flat()
    disabled = {key.rsplit(".", 1)[0] for key, value in flat.items()
                if key.endswith(".enabled") and not value}
    return [key for key in flat
            if consumer_of(key) == "engine" and key.split(".")[0] not in disabled and key not in record]


def check_engine_reads(gpu: GpuConfig, record: Mapping[str, object]) -> None:
    """Raise ConfigError naming the engine keys of ``gpu`` that no engine code read."""
    unread = unread_engine_keys(gpu, record)
    if unread:
        raise ConfigError(f"enables what the engine does not model: no engine code reads {', '.join(unread)} "
                          "(the feature these keys describe is not implemented in this engine build)",
                          where=gpu.spec)

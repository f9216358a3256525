"""Property tests: random valid overrides load, read back unchanged, and survive a YAML round trip."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from stcsim.config import PARAMS, ConfigError, load_config
from stcsim.config.params import Param
from stcsim.config.rules import RULES

RULE_KEYS = sorted({key for rule in RULES for key in rule.keys})
FREE_KEYS = sorted(set(PARAMS) - set(RULE_KEYS))
BASE = "h100"  # sm_90: every sm-gated key exists


def values_of(key: str) -> st.SearchStrategy[object]:
    """Every value the schema allows for ``key`` (sm_version kept >= 90 so no key is gated away)."""
    param: Param = PARAMS[key]
    if param.choices is not None:
        return st.sampled_from(param.choices)
    if param.kind == "bool":
        return st.booleans()
    if param.kind == "ints":  # ascending integers, as their canonical text
        top = int(param.hi) if param.hi is not None else 1 << 20
        return st.sets(st.integers(0, top), max_size=6).map(lambda v: ",".join(map(str, sorted(v))))
    if param.kind == "str":
        letters = st.characters(codec="ascii", categories=["L", "N", "Zs", "Pd"])
        return st.text(letters, min_size=1, max_size=24)
    lo = 90 if key == "gpu.sm_version" else param.lo
    hi = param.hi if param.hi is not None else 1 << 40
    if param.kind == "float":
        return st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    step = param.multiple_of or 1
    return st.integers(math.ceil(lo / step), int(hi) // step).map(lambda n: n * step)


def overrides(keys: list[str], max_size: int) -> st.SearchStrategy[dict[str, object]]:
    pair = st.sampled_from(keys).flatmap(lambda k: st.tuples(st.just(k), values_of(k)))
    return st.lists(pair, min_size=1, max_size=max_size).map(dict)


@settings(max_examples=60, deadline=None)
@given(overrides(FREE_KEYS, 6))
def test_valid_overrides_read_back_and_round_trip_through_yaml(over: dict[str, object]) -> None:
    cfg = load_config(BASE, overrides=over)
    for key, value in over.items():
        assert cfg.get(key) == value
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "resolved.yaml"
        path.write_text(yaml.safe_dump(cfg.nested(), sort_keys=False))
        assert load_config(str(path)).flat() == cfg.flat()


@settings(max_examples=60, deadline=None)
@given(overrides(RULE_KEYS, 2))
def test_overrides_of_related_keys_load_or_fail_naming_a_rule_key(over: dict[str, object]) -> None:
    try:
        cfg = load_config(BASE, overrides=over)
    except ConfigError as err:
        assert err.key in RULE_KEYS and "violates" in str(err)
    else:
        assert all(cfg.get(key) == value for key, value in over.items())

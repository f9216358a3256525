"""The schema is self-consistent: keys declared once, defaults valid, rules refer to declared keys."""

from __future__ import annotations

import pytest

from stcsim.config import PARAMS
from stcsim.config.derived import DERIVED
from stcsim.config.params import Int, Ints
from stcsim.config.rules import RULES

UNITS = {"text", "version", "MHz", "count", "threads", "CTAs", "registers", "bytes", "cycles", "ways",
         "entries", "B/cycle", "GB/s", "bool", "enum", "rounds/cycle", "words/cycle", "KB"}


def test_declared_and_derived_keys_are_disjoint_and_documented() -> None:
    assert not set(PARAMS) & set(DERIVED)
    for key, param in PARAMS.items():
        assert param.doc and param.source and param.unit in UNITS, key
    for key, item in DERIVED.items():
        assert item.doc and item.unit in UNITS, key


def test_rules_refer_to_declared_keys() -> None:
    for rule in RULES:
        assert set(rule.keys) <= set(PARAMS), rule.doc


def test_a_default_outside_its_own_range_is_rejected_at_declaration() -> None:
    with pytest.raises(ValueError, match="out of range"):
        Int("bad", "cycles", "test", 0)


def test_bool_is_not_an_int() -> None:
    with pytest.raises(ValueError, match="expected an integer, got true"):
        PARAMS["sm.max_ctas"].check(True)
    assert PARAMS["gpu.core_clock_mhz"].check(1530) == 1530.0


def test_a_list_of_ints_is_kept_as_its_canonical_text_and_checked() -> None:
    param = Ints("carve-outs", "KB", "test", "", hi=512)
    assert param.check([0, 8, 16]) == "0,8,16"
    assert param.check("0, 8,16") == "0,8,16"
    assert param.check("") == "" and param.check([]) == ""
    for bad in ([8, 8], [16, 8], [-1], [1024], ["x"], [True], 3, "8,,16"):
        with pytest.raises(ValueError):
            param.check(bad)

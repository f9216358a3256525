"""Typed parameter declarations for GPU configs (in the style of gem5's ``Param.Cycles("doc")``).

A :class:`Param` says everything about one config key: its type, unit, default (or that it is required),
the allowed values, where the default comes from and a one-line description. :class:`Group` nests params
the way the YAML files nest them. Nothing here knows about particular keys; those live in ``schema.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Value = int | float | str | bool
"""A resolved config value: configs hold scalars only (no mini-languages); the one list kind, ``ints``, holds
ascending non-negative integers as their canonical text ``"0,8,16"`` (YAML may write a list)."""

KINDS = ("int", "float", "str", "bool", "enum", "ints")

CONSUMERS = {
    "engine": "the C++ engine reads it (checked: stcsim.sim.Engine refuses a config whose engine keys it "
              "does not read)",
    "derived": "only used to compute derived values (stcsim/config/derived.py), which the engine reads",
    "loader": "used by the config loader itself (sm_N+ gating)",
    "rules": "only checked by cross-key rules (stcsim/config/rules.py)",
    "reports": "shown in reports and docs, not simulated",
}
"""Who reads a config value (`Param.used_by`, `Derived.used_by`) and what that means."""

EXACT_INT_MAX = 2**53
"""The largest integer a config may hold: the engine reads every number as a double."""


class _Required:
    """Marker for a param that has no default and must be set by a config file."""

    def __repr__(self) -> str:
        return "required"


REQUIRED = _Required()


@dataclass(frozen=True)
class Param:
    """One config key: type, unit, default, allowed values, source of the default and documentation."""

    kind: str
    doc: str
    unit: str
    source: str
    default: Value | _Required = REQUIRED
    lo: float | None = None
    hi: float | None = None
    multiple_of: int | None = None
    choices: tuple[Value, ...] | None = None
    min_sm: int | None = None
    used_by: str = "engine"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown param kind {self.kind!r}; allowed: {', '.join(KINDS)}")
        if self.used_by not in CONSUMERS:
            raise ValueError(f"unknown consumer {self.used_by!r}; allowed: {', '.join(CONSUMERS)}")
        if not isinstance(self.default, _Required):
            self.check(self.default)

    @property
    def required(self) -> bool:
        """True when the key has no default (every base config must set it)."""
        return isinstance(self.default, _Required)

    def allowed(self) -> str:
        """Human-readable description of the allowed values, used in errors and docs."""
        if self.choices is not None:
            return "one of " + ", ".join(_show(c) for c in self.choices)
        if self.kind == "bool":
            return "true or false"
        if self.kind == "str":
            return "non-empty text"
        if self.kind == "ints":
            hi = "inf" if self.hi is None else _show(self.hi)
            return f"a list of ascending integers in [{_show(self.lo or 0)}, {hi}] (may be empty)"
        lo = "-inf" if self.lo is None else _show(self.lo)
        hi = "inf" if self.hi is None else _show(self.hi)
        text = f"{self.kind} in [{lo}, {hi}]"
        if self.multiple_of is not None:
            text += f", multiple of {self.multiple_of}"
        return text

    def check(self, value: object) -> Value:
        """Return ``value`` converted to this param's type, or raise ``ValueError`` saying what is allowed."""
        converted = self._convert(value)
        if self.choices is not None and converted not in self.choices:
            raise ValueError(f"{_show(value)} is not allowed; allowed: {self.allowed()}")
        if isinstance(converted, (int, float)) and not isinstance(converted, bool):
            too_low = self.lo is not None and converted < self.lo
            too_high = self.hi is not None and converted > self.hi
            if too_low or too_high:
                raise ValueError(f"{_show(value)} is out of range; allowed: {self.allowed()}")
            if self.multiple_of is not None and converted % self.multiple_of != 0:
                raise ValueError(f"{_show(value)} is not a multiple of {self.multiple_of}")
        return converted

    def _ints(self, value: object) -> str:
        items: object = (value.split(",") if value else []) if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise ValueError(f"expected a list of integers, got {_show(value)} ({type(value).__name__})")
        out: list[int] = []
        for item in items:
            text = item.strip() if isinstance(item, str) else item
            if isinstance(text, str) and text.isdigit():
                text = int(text)
            if isinstance(text, bool) or not isinstance(text, int):
                raise ValueError(f"expected a list of integers, got {_show(value)}")
            if text < (self.lo or 0) or (self.hi is not None and text > self.hi) or (out and text <= out[-1]):
                raise ValueError(f"{_show(value)} is not allowed; allowed: {self.allowed()}")
            out.append(text)
        return ",".join(map(str, out))

    def _convert(self, value: object) -> Value:
        if self.kind == "ints":
            return self._ints(value)
        expected = {"int": "an integer", "float": "a number", "bool": "true or false"}.get(self.kind, "text")
        wrong = ValueError(f"expected {expected}, got {_show(value)} ({type(value).__name__})")
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise wrong
            return value
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise wrong
            if abs(value) > EXACT_INT_MAX:
                raise ValueError(f"{_show(value)} is too large: the engine reads config values as doubles, "
                                 f"exact up to 2^53")
            return value
        if self.kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise wrong
            if isinstance(value, int) and abs(value) > EXACT_INT_MAX or not math.isfinite(value):
                raise ValueError(f"expected a finite number, got {_show(value)}")
            return float(value)
        if not isinstance(value, str) or not value:
            raise wrong
        return value


@dataclass(frozen=True)
class Group:
    """A named section of the config (a YAML mapping): a doc line and its members."""

    doc: str
    members: Mapping[str, Param | Group]


@dataclass(frozen=True)
class Derived:
    """A value computed from other keys (``derived.py``, or an extension's config module); ``doc`` states the
    formula and ``used_by`` who reads it."""

    unit: str
    doc: str
    fn: Callable[[Mapping[str, Value]], Value | None]
    used_by: str = "engine"


def Int(doc: str, unit: str, source: str, default: Value | _Required = REQUIRED, *, lo: float | None = 1,
        hi: float | None = None, multiple_of: int | None = None, choices: tuple[int, ...] | None = None,
        min_sm: int | None = None, used_by: str = "engine") -> Param:
    """Declare an integer key (lower bound 1 unless ``lo`` says otherwise)."""
    return Param("int", doc, unit, source, default, lo, hi, multiple_of, choices, min_sm, used_by)


def Float(doc: str, unit: str, source: str, default: Value | _Required = REQUIRED, *, lo: float | None = 0,
          hi: float | None = None, used_by: str = "engine") -> Param:
    """Declare a real-valued key (integers in YAML are accepted and converted)."""
    return Param("float", doc, unit, source, default, lo, hi, used_by=used_by)


def Ints(doc: str, unit: str, source: str, default: Value | _Required = REQUIRED, *, hi: float | None = None,
         used_by: str = "engine") -> Param:
    """Declare a list of ascending non-negative integers (canonical text ``"0,8,16"``; empty allowed)."""
    return Param("ints", doc, unit, source, default, 0, hi, used_by=used_by)


def Str(doc: str, source: str, default: Value | _Required = REQUIRED) -> Param:
    """Declare a free-text key (names only: never a value with internal syntax)."""
    return Param("str", doc, "text", source, default)


def Bool(doc: str, source: str, default: Value | _Required = REQUIRED) -> Param:
    """Declare a boolean key."""
    return Param("bool", doc, "bool", source, default)


def Enum(doc: str, choices: tuple[str, ...], source: str, default: Value | _Required = REQUIRED,
         *, min_sm: int | None = None) -> Param:
    """Declare a key whose value is one of a fixed set of names."""
    return Param("enum", doc, "enum", source, default, choices=choices, min_sm=min_sm)


def flatten_schema(tree: Mapping[str, Param | Group], prefix: str = "") -> dict[str, Param]:
    """Flatten a nested schema into ``{"l1d.size_bytes": Param, ...}`` in declaration order."""
    flat: dict[str, Param] = {}
    for name, member in tree.items():
        key = f"{prefix}{name}"
        if isinstance(member, Group):
            flat.update(flatten_schema(member.members, key + "."))
        else:
            flat[key] = member
    return flat


def group_docs(tree: Mapping[str, Param | Group], prefix: str = "") -> dict[str, str]:
    """Return ``{"l1d": "L1 data cache ...", ...}`` for every group of a nested schema."""
    docs: dict[str, str] = {}
    for name, member in tree.items():
        if isinstance(member, Group):
            docs[f"{prefix}{name}"] = member.doc
            docs.update(group_docs(member.members, f"{prefix}{name}."))
    return docs


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if not isinstance(value, str) else repr(value)

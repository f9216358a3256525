"""Look patterns up by name with parameters: ``get("vw:L=16,K=4")`` -> ``VectorWise(L=16, K=4)``.

Spec grammar: ``name`` or ``name:key=value,key=value``. Values are converted to the dataclass field's type
(int, float, str, an Enum by value, ``none`` for optional fields). Unknown names or parameters, and values
of the wrong type, raise ValueError listing what is allowed.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing

from stcsim.sparsity.base import Pattern, spec_value
from stcsim.sparsity.blockwise import BlockWise
from stcsim.sparsity.channel import Channel
from stcsim.sparsity.dense import Dense
from stcsim.sparsity.extensor import ExTensor
from stcsim.sparsity.nm import NM
from stcsim.sparsity.shflbw import ShflBW
from stcsim.sparsity.tew import TileElementWise
from stcsim.sparsity.tilewise import TileWise
from stcsim.sparsity.tvw import TileVectorWise
from stcsim.sparsity.unstructured import SparseRT, Unstructured
from stcsim.sparsity.vectorwise import VectorWise

PATTERNS: dict[str, type[Pattern]] = {
    cls.name: cls
    for cls in (
        Dense,
        Unstructured,
        VectorWise,
        ShflBW,
        TileVectorWise,
        TileWise,
        TileElementWise,
        NM,
        BlockWise,
        Channel,
        ExTensor,
        SparseRT,
    )
}

ALIASES: dict[str, str] = {"block": "bw", "blockwise": "bw", "block-wise": "bw"}
"""Other names users type for a pattern (``get("blockwise:B=16")`` is ``get("bw:B=16")``)."""


def names() -> list[str]:
    """All registered pattern names, in registry order."""
    return list(PATTERNS)


def parameters(name: str) -> dict[str, str]:
    """Parameter names of pattern ``name`` with their type and default, e.g. ``{"L": "int = 16"}``."""
    cls = pattern_class(name)
    hints = typing.get_type_hints(cls)
    return {f.name: f"{_type_name(hints[f.name])} = {spec_value(f.default)}" for f in dataclasses.fields(cls)}


def pattern_class(name: str) -> type[Pattern]:
    """The class registered as ``name`` (or an alias of it); ValueError listing the known names otherwise."""
    try:
        return PATTERNS[ALIASES.get(name, name)]
    except KeyError:
        aliases = ", ".join(f"{alias} = {target}" for alias, target in ALIASES.items())
        raise ValueError(f"unknown sparsity pattern {name!r}; allowed: {', '.join(PATTERNS)} "
                         f"(aliases: {aliases})") from None


def get(spec: str) -> Pattern:
    """Parse ``name[:key=value,...]`` into a pattern instance (see module docstring)."""
    name, _, params = spec.strip().partition(":")
    cls = pattern_class(name.strip())
    hints = typing.get_type_hints(cls)
    allowed = parameters(cls.name)
    kwargs: dict[str, object] = {}
    for item in filter(None, (p.strip() for p in params.split(","))):
        key, sep, text = (s.strip() for s in item.partition("="))
        if not sep or key not in allowed:
            listing = ", ".join(f"{k}: {v}" for k, v in allowed.items()) or "none"
            raise ValueError(f"{cls.name}: bad parameter {item!r}; allowed parameters: {listing}")
        kwargs[key] = _convert(cls.name, key, text, hints[key])
    return cls(**kwargs)


def _type_name(hint: object) -> str:
    """Readable name of a field type."""
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return "{" + "|".join(str(m.value) for m in hint) + "}"
        return hint.__name__
    return str(hint).replace("typing.", "")


def _convert(pattern: str, key: str, text: str, hint: object) -> object:
    """Convert a parameter string to the field type ``hint``."""
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if text.lower() == "none" and type(None) in options:
        return None
    for option in options:
        if option is type(None):
            continue
        try:
            if isinstance(option, type) and issubclass(option, enum.Enum):
                return option(text)
            if option is int:
                return int(text)
            if option is float:
                return float(text)
            if option is str:
                return text
        except ValueError:
            continue
    raise ValueError(f"{pattern}: parameter {key}={text!r} is not a valid {_type_name(hint)}")

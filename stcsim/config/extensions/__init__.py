"""Config sections of the ISA extensions (engine/ext/<name>/): one module per extension.

Each module defines ``NAME`` (its config group, whose ``enabled`` key switches the extension on), ``GROUP``
(its keys, declared as in schema.py) and ``DERIVED`` (its derived values, evaluated after the core's).
schema.py and derived.py collect them, so an extension's config is one module here.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from stcsim.config.params import Derived, Group


def modules() -> list[ModuleType]:
    """The extension config modules, by name."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__))
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


def extension_groups() -> dict[str, Group]:
    """Every extension's config group, by name."""
    return {m.NAME: m.GROUP for m in modules()}


def extension_derived() -> dict[str, Derived]:
    """Every extension's derived values, in module order."""
    return {key: value for m in modules() for key, value in m.DERIVED.items()}

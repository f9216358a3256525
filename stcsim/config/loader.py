"""Load, compose, check and flatten GPU configs: ``load_config("v100+stc-pingpong") -> GpuConfig``.

A spec is a base config followed by overlays, joined with ``+`` and applied in order. Each part is a name
(``configs/<name>.yaml`` for the base, ``configs/overlays/<name>.yaml`` for overlays) or a path to a YAML
file. Every file is checked on its own (unknown keys, types, ranges: the error names the file), then the
merged config is checked for missing keys, keys the GPU's ``gpu.sm_version`` does not have, and the
cross-key rules; finally derived values are added.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from stcsim.config.derived import DERIVED, derive
from stcsim.config.errors import ConfigError, did_you_mean
from stcsim.config.params import Value
from stcsim.config.rules import RULES
from stcsim.config.schema import PARAMS
from stcsim.config.yaml_comments import leaf_comments, split_source
from stcsim.resources import data_dir

CONFIG_DIR = data_dir("configs")
"""Where named base configs live; overlays are in its ``overlays/`` subfolder."""

OVERRIDES = "<overrides>"
"""The origin recorded for values passed to :func:`load_config` as ``overrides``."""


class Origin(NamedTuple):
    """Where a value comes from: a file (or ``default``, ``derived``, ``<overrides>``) and the source text."""

    where: str
    source: str

    def __str__(self) -> str:
        return f"{self.where}: {self.source}"


@dataclass(frozen=True)
class GpuConfig:
    """A resolved, checked GPU config: declared values plus derived values, each with its origin."""

    spec: str
    files: tuple[Path, ...]
    values: Mapping[str, Value] = field(repr=False)
    origins: Mapping[str, Origin] = field(repr=False)

    def flat(self) -> dict[str, Value]:
        """Every value the engine reads, as ``{"l1d.size_bytes": 32768, ...}`` (declared, then derived)."""
        return dict(self.values)

    def digest(self) -> str:
        """A short hash of every resolved value (16 hex digits): two configs with the same digest time every
        launch alike, whatever files and overrides they came from."""
        return self._digest

    @cached_property
    def _digest(self) -> str:
        text = json.dumps(self.values, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        """Configs are equal when they time every launch alike: the same resolved values (``digest``)."""
        return isinstance(other, GpuConfig) and self.digest() == other.digest()

    def __hash__(self) -> int:
        return hash(self.digest())

    def get(self, key: str) -> Value:
        """Return one value by dotted key; unknown or (on this GPU) absent keys raise ``ConfigError``."""
        if key in self.values:
            return self.values[key]
        param = PARAMS.get(key)
        if param is not None and param.min_sm is not None:
            raise ConfigError(f"not available on sm_{self.values['gpu.sm_version']} "
                              f"(needs gpu.sm_version >= {param.min_sm})", key=key, where=self.spec)
        raise ConfigError("unknown key" + did_you_mean(key, self.values), key=key, where=self.spec)

    def source(self, key: str) -> str:
        """Where a value comes from: ``"configs/v100.yaml: paper 001 ..."``, a default, or a formula."""
        self.get(key)
        return str(self.origins[key])

    def nested(self) -> dict[str, object]:
        """The declared values (not derived ones) as nested mappings, ready to be written as YAML."""
        tree: dict[str, Any] = {}
        for key, value in self.values.items():
            if key in PARAMS:
                *groups, leaf = key.split(".")
                node = tree
                for name in groups:
                    node = node.setdefault(name, {})
                node[leaf] = value
        return tree


def available(config_dir: Path = CONFIG_DIR) -> tuple[list[str], list[str]]:
    """Names of the base configs and of the overlays shipped in ``config_dir``."""
    def names(folder: Path) -> list[str]:
        return sorted(p.stem for p in folder.glob("*.yaml"))

    return names(config_dir), names(config_dir / "overlays")


def load_config(spec: str | Path, overrides: Mapping[str, object] | None = None,
                config_dir: Path = CONFIG_DIR) -> GpuConfig:
    """Resolve ``spec`` (``"v100+stc"``, a path, or ``base+overlay+...``), apply ``overrides`` last, check.

    ``overrides`` maps dotted keys (or nested mappings) to values and is checked like a file.
    Raises :class:`ConfigError` naming the key, the file and what is allowed.
    """
    files = _resolve(str(spec), config_dir)
    values: dict[str, Value] = {}
    origins: dict[str, Origin] = {}
    for path in files:
        text = path.read_text()
        where = _display(path)
        comments = leaf_comments(text)
        for key, value in _check_file(_parse(text, where), where).items():
            values[key] = value
            leaf = comments.get(key)
            origins[key] = Origin(where, split_source(leaf.comment)[1] if leaf else "")
    if overrides:
        for key, value in _check_file(dict(overrides), OVERRIDES).items():
            values[key], origins[key] = value, Origin(OVERRIDES, "")
    names = " + ".join([_display(p) for p in files] + ([OVERRIDES] if overrides else []))
    _complete(values, origins, names)
    explicit = frozenset(k for k, o in origins.items() if o.where != "default")
    _check_rules(values, explicit, origins)
    resolved = derive(values)
    for key in resolved.keys() - values.keys():
        origins[key] = Origin("derived", DERIVED[key].doc)
    ordered = {key: resolved[key] for key in (*PARAMS, *DERIVED) if key in resolved}
    return GpuConfig(str(spec), tuple(files), ordered, origins)


def _resolve(spec: str, config_dir: Path) -> list[Path]:
    if Path(spec).suffix in (".yaml", ".yml") and Path(spec).is_file():
        return [Path(spec)]
    base, *overlays = spec.split("+")
    overlay_dir = config_dir / "overlays"
    return [_find(base, config_dir, "config")] + [_find(o, overlay_dir, "overlay") for o in overlays]


def _find(part: str, folder: Path, kind: str) -> Path:
    if part.endswith((".yaml", ".yml")) or "/" in part:
        if not Path(part).is_file():
            raise ConfigError(f"no such {kind} file: {part}")
        return Path(part)
    path = folder / f"{part}.yaml"
    if not path.is_file():
        names = sorted(p.stem for p in folder.glob("*.yaml"))
        hint = did_you_mean(part, names)
        raise ConfigError(f"unknown {kind} {part!r}; available: {', '.join(names)}{hint}")
    return path


def _parse(text: str, where: str) -> dict[str, object]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _reject_duplicate_keys(node, where)
        data = None if node is None else loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", where=where) from exc
    finally:
        loader.dispose()
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("a config file must be a mapping of groups to keys", where=where)
    return data


MAX_YAML_KEYS = 100_000
"""Keys (aliases expanded) a config file may have: far above any config (a few hundred), and a bound on
alias bombs, whose expansion grows exponentially with their size."""


def _reject_duplicate_keys(node: yaml.Node, where: str, prefix: str = "",
                           within: tuple[yaml.Node, ...] = (), seen: list[int] | None = None) -> None:
    """Raise ConfigError at the second occurrence of a key in any mapping (PyYAML keeps the last silently),
    at a mapping that contains itself through an alias (a recursive alias: no config is infinite), and
    when aliases expand to more than MAX_YAML_KEYS keys. `within`: the mappings that contain `node`."""
    if not isinstance(node, yaml.MappingNode):
        return
    seen = [0] if seen is None else seen
    seen[0] += len(node.value)
    if seen[0] > MAX_YAML_KEYS:
        raise ConfigError(f"aliases expand to more than {MAX_YAML_KEYS:,} keys", where=where)
    first_line: dict[str, int] = {}
    for key_node, value_node in node.value:
        name = str(key_node.value)
        line = key_node.start_mark.line + 1
        if name in first_line:
            raise ConfigError(f"duplicate key (first set at line {first_line[name]})", key=prefix + name,
                              where=f"{where}:{line}")
        first_line[name] = line
        if any(value_node is outer for outer in (*within, node)):
            raise ConfigError(f"recursive alias: its value is the mapping of line "
                              f"{value_node.start_mark.line + 1}, which contains it", key=prefix + name,
                              where=f"{where}:{line}")
        _reject_duplicate_keys(value_node, where, f"{prefix}{name}.", (*within, node), seen)


def _check_file(data: Mapping[object, object], where: str) -> dict[str, Value]:
    """Flatten one file's mapping and check every key and value in it (not completeness)."""
    checked: dict[str, Value] = {}
    for key, value in _flatten(data, where).items():
        if key in DERIVED:
            raise ConfigError(f"is derived ({DERIVED[key].doc}) and cannot be set", key=key, where=where)
        if key not in PARAMS:
            if any(p.startswith(key + ".") for p in PARAMS):
                raise ConfigError("is a group; give it a mapping of its keys", key=key, where=where)
            raise ConfigError("unknown key" + did_you_mean(key, PARAMS), key=key, where=where)
        try:
            checked[key] = PARAMS[key].check(value)
        except ValueError as exc:
            raise ConfigError(str(exc), key=key, where=where) from None
    return checked


def _flatten(data: Mapping[object, object], where: str, prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for name, value in data.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            if key in PARAMS:
                raise ConfigError(f"expected a value ({PARAMS[key].allowed()}), got a mapping", key=key,
                                  where=where)
            flat.update(_flatten(value, where, key + "."))
        else:
            flat[key] = value
    return flat


def _complete(values: dict[str, Value], origins: dict[str, Origin], names: str) -> None:
    """Fill defaults, and reject missing required keys and keys this GPU's sm_version does not have."""
    for key in ("gpu.sm_version", *PARAMS):
        param = PARAMS[key]
        gated = param.min_sm is not None and int(values["gpu.sm_version"]) < param.min_sm
        if gated and key in values:
            raise ConfigError(f"exists only on gpu.sm_version >= {param.min_sm}, this GPU is "
                              f"sm_{values['gpu.sm_version']}; remove it", key=key, where=origins[key].where)
        if gated or key in values:
            continue
        if param.required:
            raise ConfigError(f"missing required key ({param.doc}; {param.unit}; {param.allowed()})",
                              key=key, where=names)
        values[key] = param.default  # type: ignore[assignment]
        origins[key] = Origin("default", param.source)


def _check_rules(values: Mapping[str, Value], explicit: frozenset[str],
                 origins: Mapping[str, Origin]) -> None:
    for rule in RULES:
        if not rule.holds(values, explicit):
            shown = ", ".join(f"{k} = {values[k]} ({origins[k].where})" for k in rule.keys)
            raise ConfigError(f"violates: {rule.doc} [{shown}]", key=rule.keys[0])


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(CONFIG_DIR.parent))
    except ValueError:
        return str(path)

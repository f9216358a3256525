"""GPU configs: a typed schema (each key declared once), YAML files composed by name, a flat dict for
the engine.

``load_config("v100+stc-pingpong")`` returns a checked :class:`GpuConfig`; the engine reads ``.flat()``.
"""

from stcsim.config.errors import ConfigError
from stcsim.config.loader import CONFIG_DIR, GpuConfig, available, load_config
from stcsim.config.schema import PARAMS

__all__ = ["CONFIG_DIR", "PARAMS", "ConfigError", "GpuConfig", "available", "load_config"]

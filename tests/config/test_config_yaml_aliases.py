"""YAML aliases in config files (issue 46): a recursive alias or an alias bomb is a ConfigError naming the
file, never a RecursionError or a hang; plain aliases still work."""

from __future__ import annotations

import pytest

from stcsim.config import ConfigError, load_config


def test_a_recursive_alias_is_a_config_error_naming_the_file(tmp_path):
    overlay = tmp_path / "loop.yaml"
    overlay.write_text("gpu: &a\n  x: *a\n")
    with pytest.raises(ConfigError, match=rf"^{overlay}:2: gpu\.x: recursive alias: its value is the mapping "
                                          r"of line 1, which contains it$"):
        load_config(f"v100+{overlay}")


def test_a_recursive_alias_deeper_down_names_its_line(tmp_path):
    overlay = tmp_path / "deep.yaml"
    overlay.write_text("l1d:\n  size_bytes: 32768\nsm: &s\n  inner:\n    again: *s\n")
    with pytest.raises(ConfigError, match=rf"^{overlay}:5: sm\.inner\.again: recursive alias: its value is "
                                          "the mapping of line 3, which contains it"):
        load_config(f"v100+{overlay}")


def test_an_alias_bomb_is_refused_quickly(tmp_path):
    lines = ["a0: &a0 {k: 1}"]
    for i in range(1, 7):  # 10^6 keys expanded: seconds before this check (which stops at 10^5)
        lines.append(f"a{i}: &a{i} {{" + ", ".join(f"x{j}: *a{i - 1}" for j in range(10)) + "}")
    overlay = tmp_path / "bomb.yaml"
    overlay.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=rf"^{overlay}: aliases expand to more than 100,000 keys$"):
        load_config(f"v100+{overlay}")


def test_plain_aliases_still_load(tmp_path):
    overlay = tmp_path / "alias.yaml"
    overlay.write_text("l1d:\n  assoc: &ways 4\nl2:\n  assoc: *ways\n")
    config = load_config(f"v100+{overlay}")
    assert config.get("l1d.assoc") == 4 and config.get("l2.assoc") == 4

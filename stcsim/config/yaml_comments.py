"""Read the trailing ``# unit; source`` comment of every leaf key in a block-style YAML config file.

PyYAML drops comments, and the comments are where configs record each value's unit and source, so this
small line scanner recovers them for docs and ``show --sources``. It understands the subset of YAML our
config files use: nested block mappings of scalars, one key per line, indented with spaces.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)\s*:(?P<rest>.*)$")


class Leaf(NamedTuple):
    """One leaf line: the value as written and its trailing comment (``""`` when there is none)."""

    value: str
    comment: str


def leaf_comments(text: str) -> dict[str, Leaf]:
    """Map each dotted leaf key of ``text`` to its value text and trailing comment."""
    stack: list[tuple[int, str]] = []
    comments: dict[str, Leaf] = {}
    for line in text.splitlines():
        match = _KEY_LINE.match(line)
        if not match:
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        value, comment = _split_comment(match["rest"])
        key = ".".join([name for _, name in stack] + [match["key"]])
        if value:
            comments[key] = Leaf(value, comment)
        else:
            stack.append((indent, match["key"]))
    return comments


def split_source(comment: str) -> tuple[str, str]:
    """Split a ``unit; source`` comment into its unit and its source (``("", comment)`` without a ``;``)."""
    unit, sep, source = comment.partition(";")
    if not sep:
        return "", comment.strip()
    return unit.strip(), source.strip()


def _split_comment(rest: str) -> tuple[str, str]:
    """Split ``' value  # comment'`` into value and comment, ignoring ``#`` inside quotes."""
    quote = ""
    for i, char in enumerate(rest):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or rest[i - 1].isspace()):
            return rest[:i].strip(), rest[i + 1:].strip()
    return rest.strip(), ""

"""The one exception the config package raises, and "did you mean" suggestions for it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ConfigError(ValueError):
    """A config problem; the message names the dotted key (if any), the file(s) and what is allowed."""

    def __init__(self, message: str, *, key: str | None = None, where: str | None = None) -> None:
        self.key = key
        self.where = where
        prefix = "".join(f"{part}: " for part in (where, key) if part)
        super().__init__(prefix + message)


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest candidates to ``word``, or ``""`` if none is close.

    Dotted keys are also matched on their last component, so ``l1d.asoc`` finds ``l1d.assoc`` and
    ``l1.assoc`` finds ``l1d.assoc``.
    """
    pool = list(candidates)
    close = difflib.get_close_matches(word, pool, n=3, cutoff=0.75)
    if not close and "." in word:
        leaf = word.rsplit(".", 1)[1]
        close = [c for c in pool if c.rsplit(".", 1)[-1] == leaf][:3]
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"

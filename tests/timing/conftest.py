"""Puts the repository root on sys.path: the tests import `benchmarks.micro`, which is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

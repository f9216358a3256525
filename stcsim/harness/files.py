"""Result files written atomically (a temporary file in the same folder, then rename)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd


def write_csv_atomic(df: pd.DataFrame, path: str | os.PathLike[str], **to_csv: Any) -> None:
    """Writes `df` to `path` so that readers see either the old file or the complete new one (`to_csv`:
    more options of DataFrame.to_csv, e.g. float_format)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            df.to_csv(f, index=False, **to_csv)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

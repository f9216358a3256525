"""Atomic CSV writes: a failed write leaves the old file intact and no temporary behind."""

import pandas as pd
import pytest

from stcsim.harness.files import write_csv_atomic


def test_write_then_read_back(tmp_path):
    p = tmp_path / "sub" / "r.csv"
    write_csv_atomic(pd.DataFrame({"a": [1, 2]}), p)
    assert pd.read_csv(p)["a"].tolist() == [1, 2]


def test_failed_write_keeps_the_old_file(tmp_path):
    p = tmp_path / "r.csv"
    write_csv_atomic(pd.DataFrame({"a": [1]}), p)

    class Boom(pd.DataFrame):
        def to_csv(self, *args, **kwargs):  # type: ignore[override]
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_csv_atomic(Boom({"a": [9]}), p)
    assert pd.read_csv(p)["a"].tolist() == [1]
    assert [x.name for x in tmp_path.iterdir()] == ["r.csv"]

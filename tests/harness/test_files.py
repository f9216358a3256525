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


def test_comment_lines_come_before_the_table(tmp_path):
    p = tmp_path / "r.csv"
    write_csv_atomic(pd.DataFrame({"a": [1.5]}), p, comments=["gpu: test", "date: today"])
    assert p.read_text() == "# gpu: test\n# date: today\na\n1.5\n"
    assert pd.read_csv(p, comment="#")["a"].tolist() == [1.5]


def test_rows_as_the_csv_module_writes_them(tmp_path):
    # stcsim.gpu.time_kernels' files: the bytes csv.DictWriter wrote before it used the one writer
    import csv
    import io

    rows = [{"kernel": "k", "m": 1024, "ms": 0.1234, "tflops": 1e-05, "err": "1.20e-04", "ok": True},
            {"kernel": "k2", "m": 64, "ms": 12345678.0, "tflops": 0.0, "err": "3.00e-03", "ok": False}]
    ref = io.StringIO()
    writer = csv.DictWriter(ref, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    p = tmp_path / "t.csv"
    write_csv_atomic(pd.DataFrame(rows, columns=list(rows[0])), p, lineterminator="\r\n")
    assert p.read_bytes() == ref.getvalue().encode()


def test_object_columns_as_the_csv_module_writes_them(tmp_path):
    # benchmarks/micro/silicon.py's and hopper.py's files: None empty, a column's ints and floats as they are
    import csv
    import io

    rows = [{"bench": "lat.add.s32", "silicon": 4, "expected": 4.0, "note": ""},
            {"bench": "chase.l1", "silicon": 33.5, "expected": None, "note": 'error: "x", y\nz'},
            {"bench": "bw", "silicon": None, "expected": 1e-07, "note": "n/a"}]
    ref = io.StringIO()
    writer = csv.DictWriter(ref, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    p = tmp_path / "s.csv"
    write_csv_atomic(pd.DataFrame(rows, columns=list(rows[0]), dtype=object), p, lineterminator="\r\n")
    assert p.read_bytes() == ref.getvalue().encode()

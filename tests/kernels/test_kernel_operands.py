"""Operands: named host arrays with their dtypes, unique names, at least one output, NaN-poisoned outputs."""

import numpy as np
import pytest

from stcsim.kernels import GemmProblem, OperandArray, Operands, operands, poisoned
from stcsim.sparsity.dense import Dense

P = GemmProblem(3, 4, 5)


def _arrays(rng):
    return (
        OperandArray("A", rng.uniform(-1, 1, (3, 5)).astype(np.float16)),
        OperandArray("meta", rng.integers(1, 2**16, 7, dtype=np.uint16)),
        poisoned("C", (3, 4), "float32"),
    )


def test_operands_by_name_with_dtypes():
    rng = np.random.default_rng()
    arrays = _arrays(rng)
    ops = Operands(P, Dense(), arrays)
    assert ops.names == ["A", "meta", "C"]
    assert ops.dtypes == {"A": np.float16, "meta": np.uint16, "C": np.float32}
    assert ops["meta"] is arrays[1].data and [a.name for a in ops] == ops.names
    assert ops.outputs == (arrays[2],) and np.isnan(ops["C"]).all()
    assert ops.nbytes == 3 * 5 * 2 + 7 * 2 + 3 * 4 * 4
    with pytest.raises(KeyError, match="operands: A, meta, C"):
        ops["B"]


def test_operand_arrays_are_contiguous_and_immutable_records():
    data = np.random.default_rng().uniform(-1, 1, (6, 4))[:, ::2]
    a = OperandArray("x", data)
    assert a.data.flags.c_contiguous and np.array_equal(a.data, data) and a.dtype == np.float64
    with pytest.raises(AttributeError):
        a.name = "y"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [("2x", np.ones(3), "identifier"), ("x", np.ones(0), "non-empty"), ("x", [1.0, 2.0], "numpy array")],
)
def test_operand_array_rejects_bad_input(name, data, message):
    with pytest.raises(ValueError, match=message):
        OperandArray(name, data)


def test_operands_need_unique_names_and_an_output():
    rng = np.random.default_rng()
    a, meta, c = _arrays(rng)
    with pytest.raises(ValueError, match="unique"):
        Operands(P, Dense(), (a, OperandArray("A", meta.data), c))
    with pytest.raises(ValueError, match="no output"):
        Operands(P, Dense(), (a, meta))


def test_float64_product_blocks_rows_and_equals_the_whole_product(monkeypatch) -> None:
    """Converted a few rows at a time (block edges inside the matrix and a short last block), the same
    float64 product as converting the whole left operand."""
    from stcsim.kernels import operands

    monkeypatch.setattr(operands, "REFERENCE_ROWS", 16)
    rng = np.random.default_rng()
    for m, n, k in ((50, 3, 40), (16, 1, 7), (5, 9, 64)):
        a = rng.standard_normal((m, k)).astype(np.float16)
        bt = rng.standard_normal((n, k)).astype(np.float32)
        got = operands.float64_product(a, bt)
        assert got.dtype == np.float64 and np.array_equal(got, a.astype(np.float64) @ bt.astype(np.float64).T)


@pytest.mark.parametrize("shape", [(0, 5), (7,), (33, 65), (3, 40, 9)])
def test_uniform_float32_is_the_one_shot_draw_bit_for_bit(monkeypatch, shape):
    monkeypatch.setattr(operands, "UNIFORM_BLOCK", 64)  # several blocks, the last one partial
    got = operands.uniform_float32(np.random.default_rng([4, 2]), shape)
    want = np.random.default_rng([4, 2]).uniform(-1.0, 1.0, shape).astype(np.float32)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.array_equal(got, want)

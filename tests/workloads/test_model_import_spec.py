"""Model import without the optional extras (issue 45 item 2): spec strings, the layer table's naming and
merging rules, the attention data flow, and the errors when onnx or PyTorch is missing."""

from __future__ import annotations

import sys

import pytest

from stcsim.workloads import LayerKind, ModelImportError, get_network, with_params
from stcsim.workloads.cli import main as workloads_main
from stcsim.workloads.model_import import (
    MATMUL,
    WEIGHT,
    GemmRecord,
    LayerTable,
    is_import_spec,
    matmul_dims,
    split_import_spec,
)


@pytest.mark.parametrize("text,expected", [
    ("onnx:model.onnx", ("onnx", "model.onnx", {})),
    ("ONNX:dir/m.onnx:seq=128,launch=serial", ("onnx", "dir/m.onnx", {"seq": "128", "launch": "serial"})),
    ("torch:torchvision.models:resnet50", ("torch", "torchvision.models:resnet50", {})),
    ("torch:pkg.mod:build:input=3x8x8+16", ("torch", "pkg.mod:build", {"input": "3x8x8+16"})),
    ("torch:models/my.py:build:image_size=64", ("torch", "models/my.py:build", {"image_size": "64"})),
])
def test_split_import_spec(text: str, expected: tuple) -> None:
    assert is_import_spec(text)
    assert split_import_spec(text) == expected


def test_other_specs_are_not_imports() -> None:
    assert not any(map(is_import_spec, ["resnet50", "alexnet:variant=tf-slim", "llama2_7b:phase=decode"]))
    with pytest.raises(ValueError, match="given twice"):
        split_import_spec("onnx:m.onnx:seq=1,seq=2")
    with pytest.raises(ValueError, match="give the model"):
        split_import_spec("onnx:")


def test_with_params_on_import_specs() -> None:
    assert with_params("onnx:m.onnx", seq=128) == "onnx:m.onnx:seq_len=128"
    assert with_params("onnx:m.onnx:seq=8", phase=None, kv_len=None) == "onnx:m.onnx:seq=8"
    assert with_params("torch:p.m:f:input=3x8x8", image_size=8) == "torch:p.m:f:input=3x8x8,image_size=8"
    with pytest.raises(ValueError, match="conflicts"):
        with_params("onnx:m.onnx:seq_len=8", seq_len=16)


def test_unknown_network_names_the_import_forms() -> None:
    with pytest.raises(ValueError, match="or import one: onnx:FILE.onnx, torch:MODULE:CALLABLE"):
        get_network("resnet5O")


@pytest.mark.parametrize("spec,package", [
    ("onnx:examples/models/tiny_cnn_attn.onnx", "onnx"),
    ("torch:torchvision.models:resnet50:image_size=224", "torch"),
])
def test_a_missing_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, spec: str, package: str) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # `import onnx` / `import torch` raise ImportError
    monkeypatch.chdir(__file__.rsplit("/tests/", 1)[0])
    with pytest.raises(ModelImportError, match=rf"pip install 'stcsim\[{package}\]'"):
        get_network(spec)


def test_list_names_the_import_forms(capsys: pytest.CaptureFixture) -> None:
    assert workloads_main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "onnx:FILE.onnx" in out and "torch:MODULE:CALLABLE:input=3x224x224" in out and "resnet50" in out


def _record(base: str, m: int, role: str = WEIGHT) -> GemmRecord:
    kind = LayerKind.FC if role == WEIGHT else LayerKind.ATTN_CONTEXT
    return GemmRecord(base, role, kind, m, 4, 8, batched=role != WEIGHT, groups=1 if role == WEIGHT else 2)


def test_repeats_merge_and_other_shapes_get_a_suffix() -> None:
    table = LayerTable()
    for m in (16, 16, 32, 16):
        table.add(_record("cell", m), ["x"], "y")
    layers = table.layers()
    assert [(layer.name, layer.m, layer.repeat) for layer in layers] == [("cell", 16, 3), ("cell#2", 32, 1)]


def test_softmax_makes_scores_and_context() -> None:
    """q @ k -> scale -> softmax -> @ v: the first is scores, the second context; a matmul without a softmax
    on its path keeps its plain name."""
    table = LayerTable()
    table.add(_record("attn", 8, MATMUL), ["q", "k"], "s")
    table.flow(["s"], ["s2"])  # the scale
    table.flow(["s2"], ["p"], softmax=True)
    table.flow(["p"], ["p2"])  # dropout
    table.add(_record("attn", 16, MATMUL), ["p2", "v"], "o")
    table.add(_record("mix", 8, MATMUL), ["o", "o"], "z")
    scores, context, plain = table.layers()
    assert (scores.name, scores.kind, scores.batched) == ("attn.scores", LayerKind.ATTN_SCORE, True)
    assert (context.name, context.kind) == ("attn.context", LayerKind.ATTN_CONTEXT)
    assert (plain.name, plain.prunable) == ("mix.matmul", False)


@pytest.mark.parametrize("a,b,expected", [
    ((6, 32), (32, 8), ((), 6, 32, 8)),
    ((2, 4, 6, 8), (2, 4, 8, 6), ((2, 4), 6, 8, 6)),
    ((2, 1, 6, 8), (3, 8, 5), ((2, 3), 6, 8, 5)),
    ((8,), (8, 5), ((), 1, 8, 5)),
    ((3, 6, 8), (8,), ((3,), 6, 8, 1)),
])
def test_matmul_dims(a: tuple, b: tuple, expected: tuple) -> None:
    assert matmul_dims(a, b) == expected


def test_matmul_dims_mismatch() -> None:
    with pytest.raises(ValueError, match="do not multiply"):
        matmul_dims((4, 5), (6, 7))
    with pytest.raises(ValueError, match="do not broadcast"):
        matmul_dims((2, 4, 5), (3, 5, 7))

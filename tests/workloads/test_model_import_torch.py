"""Importing a PyTorch nn.Module as a GEMM layer table (issue 45 item 2), traced on the meta device.

The models are written here (torchvision is not a dependency): a torchvision-style ResNet-50 / ResNeXt-50
whose table must equal the hand-written one of stcsim.workloads.resnet layer by layer, a BERT-style encoder
layer against stcsim.workloads.transformers, an MLP, attention written with matmul and with
scaled_dot_product_attention, and the errors.
"""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from stcsim.workloads import (  # noqa: E402
    LayerKind,
    ModelImportError,
    get_network,
    import_torch,
    unique_gemm_shapes,
    with_params,
)
from stcsim.workloads.cli import main as workloads_main  # noqa: E402
from stcsim.workloads.resnet import resnet50, resnext50_32x4d  # noqa: E402
from stcsim.workloads.transformers import bert_base  # noqa: E402

# ----------------------------------------------------------------------------- torchvision-style models


class Bottleneck(nn.Module):
    """torchvision.models.resnet.Bottleneck (v1.5: the stride on the 3x3 conv)."""

    def __init__(self, cin: int, planes: int, stride: int, groups: int = 1, base_width: int = 64) -> None:
        super().__init__()
        width = int(planes * base_width / 64) * groups
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, planes * 4, 1, bias=False), nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != planes * 4:
            self.downsample = nn.Sequential(nn.Conv2d(cin, planes * 4, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes * 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision.models.resnet.ResNet with bottleneck blocks."""

    def __init__(self, blocks: tuple[int, ...] = (3, 4, 6, 3), groups: int = 1, width: int = 64) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64)
        self.relu, self.maxpool = nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
        cin = 64
        for stage, (planes, count) in enumerate(zip((64, 128, 256, 512), blocks, strict=True), start=1):
            layers = []
            for index in range(count):
                layers.append(Bottleneck(cin, planes, 2 if stage > 1 and index == 0 else 1, groups, width))
                cin = planes * 4
            setattr(self, f"layer{stage}", nn.Sequential(*layers))
        self.avgpool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(2048, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def _geometry(layer) -> tuple:  # noqa: ANN001
    return (layer.name, layer.kind, layer.m, layer.n, layer.k, layer.groups, layer.repeat, layer.batched,
            layer.conv)


@pytest.mark.parametrize("builder,groups,width", [(resnet50, 1, 64), (resnext50_32x4d, 32, 4)])
def test_resnet_import_matches_the_hand_written_table(builder, groups: int, width: int) -> None:  # noqa: ANN001
    """Every layer of the traced model equals the project's own table: name, kind, M, N, K, groups and the
    conv geometry (kernel, stride, padding, input and output size); the totals agree."""
    with torch.device("meta"):
        model = ResNet(groups=groups, width=width)
    imported = import_torch(model, [(3, 224, 224)], batch=2)
    reference = builder(2, 224)
    assert [_geometry(layer) for layer in imported.layers] == [_geometry(layer) for layer in reference.layers]
    assert imported.macs == reference.macs
    expected = sum(p.numel() for p in model.parameters())
    assert imported.params == reference.params == expected  # BatchNorm as extra_params vs norm_params
    assert {name for name, _ in imported.extra_params} == {
        name for name, _ in model.named_parameters() if ".bn" in name or name.startswith("bn")
        or "downsample.1" in name}


def test_resnet_block_layers() -> None:
    """One block alone, by name: layer2.0 of ResNet-50 (stride 2 with a downsample) from a 56x56 input."""
    with torch.device("meta"):
        block = Bottleneck(256, 128, 2)
    net = import_torch(block, [(256, 56, 56)], batch=1)
    reference = {layer.name.removeprefix("layer2.0."): layer for layer in resnet50(1, 224).layers
                 if layer.name.startswith("layer2.0.")}
    assert [layer.name for layer in net.layers] == ["conv1", "conv2", "conv3", "downsample.0"]
    for layer in net.layers:
        ref = reference[layer.name]
        assert (layer.m, layer.n, layer.k, layer.conv) == (ref.m, ref.n, ref.k, ref.conv), layer.name
    assert net.layer("conv2").conv.describe() == "k3x3 s2 p1" and net.layer("conv2").n == 28 * 28


# ----------------------------------------------------------------------------------- transformers


class BertSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)


class BertLayer(nn.Module):
    """HuggingFace BertLayer's module names: attention.self.{query,key,value}, attention.output.dense,
    intermediate.dense, output.dense."""

    def __init__(self, d: int = 768, heads: int = 12, ff: int = 3072) -> None:
        super().__init__()
        self.attention = nn.Module()
        self.attention.self = BertSelfAttention(d, heads)
        self.attention.output = nn.Module()
        self.attention.output.dense, self.attention.output.LayerNorm = nn.Linear(d, d), nn.LayerNorm(d)
        self.intermediate, self.output = nn.Module(), nn.Module()
        self.intermediate.dense, self.output.dense = nn.Linear(d, ff), nn.Linear(ff, d)
        self.output.LayerNorm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.attention.output.LayerNorm(x + self.attention.output.dense(self.attention.self(x)))
        return self.output.LayerNorm(x + self.output.dense(F.gelu(self.intermediate.dense(x))))


class Encoder(nn.Module):
    def __init__(self, layers: int = 2) -> None:
        super().__init__()
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(BertLayer() for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.encoder.layer:
            x = layer(x)
        return x


def test_bert_layers_match_the_hand_written_table() -> None:
    """Two BERT-base encoder layers: the projections (prunable, M x tokens x K) and the per-(batch, head)
    score and context GEMMs as batched, not prunable layers, exactly as stcsim.workloads.transformers."""
    with torch.device("meta"):
        model = Encoder(2)
    net = import_torch(model, [(128, 768)], batch=2)
    reference = [layer for layer in bert_base(2, 128).layers if layer.name.startswith(("encoder.layer.0.",
                                                                                       "encoder.layer.1."))]

    def row(layer) -> tuple:  # noqa: ANN001
        return (layer.name, layer.m, layer.n, layer.k, layer.groups, layer.batched, layer.prunable,
                layer.bias)

    assert [row(layer) for layer in net.layers] == [row(layer) for layer in reference]
    scores = net.layer("encoder.layer.0.attention.self.scores")
    context = net.layer("encoder.layer.0.attention.self.context")
    assert scores.kind is LayerKind.ATTN_SCORE and context.kind is LayerKind.ATTN_CONTEXT
    assert (scores.m, scores.n, scores.k, scores.groups, scores.launches) == (128, 128, 64, 24, 1)
    assert (context.m, context.n, context.k) == (64, 128, 128)


class SdpaBlock(nn.Module):
    """Self-attention through F.scaled_dot_product_attention with a fused qkv projection, and an MLP."""

    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.mlp(x)


def test_sdpa_and_mlp() -> None:
    with torch.device("meta"):
        model = SdpaBlock()
    net = import_torch(model, [(10, 64)], batch=3)
    rows = [(layer.name, layer.kind, layer.m, layer.n, layer.k, layer.groups, layer.bias, layer.prunable)
            for layer in net.layers]
    assert rows == [
        ("qkv", LayerKind.FC, 192, 30, 64, 1, True, True),
        ("scores", LayerKind.ATTN_SCORE, 10, 10, 16, 12, False, False),
        ("context", LayerKind.ATTN_CONTEXT, 16, 10, 10, 12, False, False),
        ("proj", LayerKind.FC, 64, 30, 64, 1, False, True),
        ("mlp.0", LayerKind.FC, 256, 30, 64, 1, True, True),
        ("mlp.2", LayerKind.FC, 64, 30, 256, 1, True, True),
    ]
    assert net.params == sum(p.numel() for p in model.parameters())
    shapes = unique_gemm_shapes(net)
    assert sum(s.macs for s in shapes) == net.gemm_macs


class Loop(nn.Module):
    """One module called three times (an RNN-style loop) and a 1-D conv and a depthwise conv."""

    def __init__(self) -> None:
        super().__init__()
        self.cell, self.conv1d = nn.Linear(32, 32), nn.Conv1d(4, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        for _ in range(3):
            x = torch.tanh(self.cell(x))
        y = self.conv1d(s)
        return x.sum() + self.dw(y.unsqueeze(2)).sum()


def test_repeats_conv1d_and_depthwise() -> None:
    with torch.device("meta"):
        model = Loop()
    net = import_torch(model, [(32,), (4, 20)], batch=2)
    cell, conv1d, dw = net.layers
    assert (cell.name, cell.m, cell.n, cell.k, cell.repeat) == ("cell", 32, 2, 32, 3)
    assert (conv1d.kind, conv1d.m, conv1d.n, conv1d.k) == (LayerKind.CONV, 8, 40, 12)
    assert (conv1d.conv.kernel, conv1d.conv.padding, conv1d.conv.in_hw) == ((1, 3), (0, 1), (1, 20))
    assert (dw.kind, dw.is_gemm, dw.groups, dw.k) == (LayerKind.DEPTHWISE, False, 8, 9)


def test_the_state_dict_loads_as_weights(tmp_path: Path) -> None:
    """Weight layers are named after their parameters, so the model's own state_dict is a --weights file."""
    from stcsim.workloads import load_weights

    model = SdpaBlock()
    torch.save(model.state_dict(), tmp_path / "block.pt")
    net = import_torch(model, [(10, 64)])
    weights = load_weights(net, tmp_path / "block.pt")
    assert sorted(weights) == ["mlp.0", "mlp.2", "proj", "qkv"]
    assert (weights["qkv"] == model.qkv.weight.detach().numpy()).all()


def test_a_model_on_the_cpu_is_left_as_it_was() -> None:
    model = SdpaBlock().train()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    net = import_torch(model, [(10, 64)], batch=1)
    assert model.training and all(p.device.type == "cpu" for p in model.parameters())
    assert all(torch.equal(before[name], p) for name, p in model.named_parameters())
    assert len(net.layers) == 6


class TinyGPT(nn.Module):
    """Token ids in, an embedding, a causal mask made inside the forward, an LM head tied to the embedding."""

    def __init__(self, vocab: int = 100, d: int = 32, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.wte, self.qkv = nn.Embedding(vocab, d), nn.Linear(d, 3 * d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx)
        b, t, d = x.shape
        q, k, v = (y.view(b, t, self.heads, -1).transpose(1, 2) for y in self.qkv(x).split(d, -1))
        mask = torch.triu(torch.ones(t, t), 1).bool()  # no device given: meta during the trace
        p = (q @ k.transpose(-1, -2)).masked_fill(mask, float("-inf")).softmax(-1)
        return self.head(x + (p @ v).transpose(1, 2).reshape(b, t, d))


def test_token_ids_and_a_tied_head() -> None:
    with torch.device("meta"):
        model = TinyGPT()
    net = import_torch(model, [(12,)], batch=2, dtype="int64")
    assert [(layer.name, layer.m, layer.n, layer.k, layer.groups) for layer in net.layers] == [
        ("qkv", 96, 24, 32, 1), ("scores", 12, 12, 16, 4), ("context", 16, 12, 12, 4),
        ("head", 100, 24, 32, 1)]
    assert net.extra_params == () and net.params == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("make,shape", [(SdpaBlock, (10, 64)),
                                        (lambda: Bottleneck(256, 128, 2), (256, 56, 56))])
def test_pytorch_onnx_export_imports_to_the_same_gemms(tmp_path: Path, make, shape: tuple) -> None:  # noqa: ANN001
    """The model exported by torch.onnx (dynamic batch: the exporter's Shape -> Gather -> Div -> Concat
    reshapes, folded by the importer) gives the GEMMs of the traced module, in order, under the exporter's
    node names (``/mlp/mlp.0/MatMul`` for ``mlp.0``)."""
    pytest.importorskip("onnx")
    import warnings

    from stcsim.workloads import import_onnx

    model = make().eval()
    path = tmp_path / "exported.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(model, (torch.zeros(1, *shape),), str(path), dynamo=False, input_names=["x"],
                          dynamic_axes={"x": {0: "batch"}})
    traced, exported = import_torch(model, [shape], batch=3), import_onnx(str(path), batch=3)

    def gemms(net) -> list[tuple]:  # noqa: ANN001
        return [(layer.kind, layer.m, layer.n, layer.k, layer.groups, layer.conv) for layer in net.layers]

    assert gemms(exported) == gemms(traced)
    assert [layer.name.split("/")[-2] for layer in exported.layers if layer.has_weights] == [
        layer.name for layer in traced.layers if layer.has_weights]


# ------------------------------------------------------------------------------ specs, CLI, errors


@pytest.fixture()
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "mymodels.py"
    path.write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Tiny(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3, padding=1)
                self.head = nn.Linear(8, 4)
                self.up = nn.ConvTranspose2d(8, 8, 2, 2)

            def forward(self, x):
                return self.head(self.conv(x).mean((2, 3)))

        class Upsampler(Tiny):
            def forward(self, x):
                return self.up(self.conv(x))

        class Branchy(Tiny):
            def forward(self, x):
                return self.head(x.mean((2, 3))) if x.sum() > 0 else x

        def tiny():
            return Tiny()

        def upsampler():
            return Upsampler()

        def branchy():
            return Branchy()

        def not_a_module():
            return 3
    """))
    return path


def test_torch_spec_through_get_network(model_file: Path) -> None:
    spec = f"torch:{model_file}:tiny:input=3x16x16"
    net = get_network(spec, batch=4)
    assert net.spec == spec and net.batch == 4
    assert [(layer.name, layer.m, layer.n, layer.k) for layer in net.layers] == [
        ("conv", 8, 4 * 16 * 16, 27), ("head", 4, 4, 8)]
    same = get_network(f"torch:{model_file}:tiny:image_size=16", batch=4)
    assert [_geometry(layer) for layer in same.layers] == [_geometry(layer) for layer in net.layers]
    assert with_params(spec, seq=None, kv_len=None) == spec
    assert get_network(spec + ",launch=serial").options[-1] == ("launch", "serial")


@pytest.mark.parametrize("entry,message", [
    ("upsampler:input=3x16x16", "node 'up': a transposed convolution is not lowered"),
    ("branchy:input=3x16x16", "the forward pass failed on the meta device"),
    ("not_a_module:input=3x16x16", "returned a int, not a torch.nn.Module"),
    ("missing:input=3x16x16", "has no callable 'missing'"),
])
def test_torch_errors_name_the_model_and_node(model_file: Path, entry: str, message: str) -> None:
    with pytest.raises(ModelImportError, match="torch:") as err:
        get_network(f"torch:{model_file}:{entry}")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_transposed_convolution_is_an_error_naming_the_module(model_file: Path) -> None:
    with pytest.raises(ModelImportError) as err:
        get_network(f"torch:{model_file}:upsampler:input=3x16x16")
    assert err.value.node == "up" and "transposed convolution" in str(err.value)


@pytest.mark.parametrize("spec,message", [
    ("torch:{file}:tiny", "give the per-sample input shape"),
    ("torch:{file}:tiny:input=3xax16", "is not a shape"),
    ("torch:{file}:tiny:input=3x16x16,dtype=complex", "dtype='complex' is not one of"),
    ("torch:{file}:tiny:input=3x16x16,colour=red", "bad parameter(s) colour"),
    ("torch:no_such_module_here:tiny:input=3x16x16", "cannot import no_such_module_here"),
    ("torch:{dir}/nothere.py:tiny:input=3", "nothere.py: no such file"),
])
def test_bad_torch_specs(model_file: Path, spec: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        get_network(spec.format(file=model_file, dir=model_file.parent))
    assert message in str(err.value)


def test_cli_error_is_one_line_with_status_2(model_file: Path, capsys: pytest.CaptureFixture) -> None:
    assert workloads_main([f"torch:{model_file}:upsampler:input=3x16x16"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: torch:") and err.count("\n") == 1
    assert workloads_main([f"torch:{model_file}:tiny:input=3x16x16", "--batch", "2"]) == 0
    assert "conv " in capsys.readouterr().out


def test_the_network_is_frozen_and_validated() -> None:
    with torch.device("meta"):
        model = SdpaBlock()
    net = import_torch(model, [(10, 64)])
    with pytest.raises(dataclasses.FrozenInstanceError):
        net.layers = ()  # type: ignore[misc]

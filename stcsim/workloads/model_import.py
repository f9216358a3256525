"""Import a model as a GEMM layer table: a PyTorch ``nn.Module`` traced on the meta device, or an ONNX file.

Spec strings (``--workload`` and ``get_network``):

* ``onnx:PATH[:key=value,...]``: the ONNX file at PATH; the keys are the model's symbolic input dimensions
  (``seq=128``); a symbolic first dimension of an input is the batch.
* ``torch:MODULE:CALLABLE[:key=value,...]``: ``CALLABLE`` of ``MODULE`` (an importable module such as
  ``torchvision.models`` or a ``.py`` file) called without arguments under ``torch.device("meta")`` returns
  the ``nn.Module``; keys ``input=3x224x224`` (the per-sample shape of each input, ``+`` between inputs;
  the batch is prepended), ``image_size=N`` (``input=3xNxN``) and ``dtype`` (``float32``; ``int64`` for token
  ids).

Both forms also take ``launch=batched|serial`` as every network does. What lowers to a layer (the project's
GEMM convention, docs/workloads.md): convolutions via im2col (``conv``; depthwise ones as ``depthwise``),
weight x activation products (``fc``; the layer is named after its weight: the module name, e.g.
``layer1.0.conv1``, or the ONNX node name) and activation x activation products (batched, not prunable:
``attn_score`` for one whose output feeds a softmax, ``attn_context`` otherwise, named
``<module>.scores`` / ``<module>.context`` / ``<module>.matmul``). Ops without GEMM work (activations,
additions, pooling, reshapes, normalisation, softmax) are skipped; an op with GEMM work that is not lowered
(transposed convolution, 3-D convolution, an RNN op in ONNX, ...) is a :class:`ModelImportError` naming the
file and node. The same GEMM executed again (a module called in a loop, an RNN step) is one layer with
``repeat`` > 1. Parameters that feed no GEMM (normalisation, embeddings) are the network's ``extra_params``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from stcsim.workloads.layer import ConvGeometry, Layer, LayerKind
from stcsim.workloads.network import Network

IMPORT_FORMS = ("onnx", "torch")
LAUNCH_KEY = "launch"
LAUNCH_VALUES = ("batched", "serial")


class ModelImportError(ValueError):
    """A model cannot be imported: ``source`` is the file or callable, ``node`` the op or module (if any)."""

    def __init__(self, source: str, message: str, node: str | None = None) -> None:
        """Record where the problem is; the message names the source and node."""
        self.source, self.node, self.reason = source, node, message
        where = source + (f", node {node!r}" if node else "")
        super().__init__(f"{where}: {message}")


def is_import_spec(text: str) -> bool:
    """True for ``onnx:...`` and ``torch:...`` spec strings."""
    head, sep, _ = text.strip().partition(":")
    return bool(sep) and head.lower() in IMPORT_FORMS


def split_import_spec(text: str) -> tuple[str, str, dict[str, str]]:
    """``(form, target, options)`` of an import spec: ``onnx:m.onnx:seq=8`` is ``("onnx", "m.onnx",
    {"seq": "8"})``; the options are the part after the last ``:`` when it holds ``key=value`` items."""
    form, _, rest = text.strip().partition(":")
    form = form.lower()
    if form not in IMPORT_FORMS:
        raise ValueError(f"{text!r} is not an import spec (onnx:PATH or torch:MODULE:CALLABLE)")
    target, sep, tail = rest.rpartition(":")
    options: dict[str, str] = {}
    if sep and "=" in tail:
        for item in filter(None, (part.strip() for part in tail.split(","))):
            key, eq, value = (part.strip() for part in item.partition("="))
            if not eq or not key:
                raise ValueError(f"{form}:{target}: bad parameter {item!r}; give key=value")
            if key in options:
                raise ValueError(f"{form}:{target}: {key} given twice in {text!r}")
            options[key] = value
    else:
        target = rest
    target = target.strip()
    if not target:
        raise ValueError(f"{text!r}: give the model, e.g. onnx:model.onnx or torch:package.module:factory")
    return form, target, options


def with_import_params(text: str, **params: object) -> str:
    """``registry.with_params`` for import specs: keys added after the options (``None`` values skipped)."""
    form, target, options = split_import_spec(text)
    added = []
    for key, value in params.items():
        if value is None:
            continue
        if key in options:
            if options[key] != str(value):
                raise ValueError(f"{key}={value} conflicts with {key}={options[key]} in {text!r}")
            continue
        added.append(f"{key}={value}")
    if not added:
        return text
    return text + ("," if options else ":") + ",".join(added)


def import_network(
    text: str, batch: int = 1, image_size: int | None = None, seq_len: int | None = None,
    hidden: int | None = None, kv_len: int | None = None,
) -> Network:
    """The network of an import spec (module docstring). ``image_size`` is the ``image_size`` key of a torch
    spec, ``seq_len`` / ``kv_len`` / ``hidden`` the key of that name (an ONNX dimension of that name); each
    may also be in the spec. Raises ModelImportError (a ValueError) for a model that cannot be imported."""
    form, target, options = split_import_spec(text)
    for key, value in (("image_size", image_size), ("seq_len", seq_len), ("hidden", hidden),
                       ("kv_len", kv_len)):
        if value is None:
            continue
        if key in options and options[key] != str(value):
            raise ValueError(f"{form}:{target}: {key}={value} conflicts with {key}={options[key]} in the "
                             "name")
        options[key] = str(value)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch for {form}:{target} must be an integer >= 1, got {batch!r}")
    launch = options.pop(LAUNCH_KEY, LAUNCH_VALUES[0])
    if launch not in LAUNCH_VALUES:
        raise ValueError(f"{form}:{target}: launch={launch!r} is not one of: {', '.join(LAUNCH_VALUES)}")
    if form == "onnx":
        from stcsim.workloads.onnx_import import import_onnx

        net = import_onnx(target, batch, options)
    else:
        from stcsim.workloads.torch_import import torch_spec_network

        net = torch_spec_network(target, batch, options)
    if launch != LAUNCH_VALUES[0]:
        layers = tuple(dataclasses.replace(layer, batched=False) for layer in net.layers)
        net = dataclasses.replace(net, layers=layers, options=(*net.options, (LAUNCH_KEY, launch)))
    return net


# ------------------------------------------------------------------------------------------ the table


SCORES, CONTEXT, MATMUL, WEIGHT = "scores", "context", "matmul", "weight"


@dataclass
class GemmRecord:
    """One GEMM seen while tracing, before names and repeats are settled."""

    base: str  # weight GEMMs: the layer name; activation GEMMs: the module / node the suffix is added to
    role: str  # WEIGHT, or MATMUL (activation x activation) that ``softmax`` may make SCORES / CONTEXT
    kind: LayerKind
    m: int
    n: int
    k: int
    groups: int = 1
    bias: bool = False
    conv: ConvGeometry | None = None
    batched: bool = False
    exact_name: bool = False  # ONNX: the node name is the layer name whatever the role

    def name(self) -> str:
        """The layer name: the base, or ``base.scores`` / ``.context`` / ``.matmul`` for activation GEMMs."""
        if self.role == WEIGHT or self.exact_name:
            return self.base
        return f"{self.base}.{self.role}" if self.base else self.role


@dataclass
class LayerTable:
    """GEMMs in execution order, with the data flow that tells attention scores from context products.

    Values (tensors, ONNX value names) carry the activation GEMMs they come from (through ops without GEMM
    work) and whether a softmax is on their path: a softmax over a GEMM's output makes it ``scores``, a GEMM
    with a softmax-derived operand is ``context``.
    """

    records: list[GemmRecord] = field(default_factory=list)
    _from: dict[object, frozenset[int]] = field(default_factory=dict)
    _softmaxed: set[object] = field(default_factory=set)

    def add(self, record: GemmRecord, operands: Iterable[object], output: object) -> None:
        """Record a GEMM whose inputs are the values ``operands`` and whose output is ``output``."""
        index = len(self.records)
        self.records.append(record)
        if record.role != WEIGHT:
            if any(op in self._softmaxed for op in operands):
                record.role, record.kind = CONTEXT, LayerKind.ATTN_CONTEXT
            self._from[output] = frozenset({index})

    def flow(self, inputs: Iterable[object], outputs: Iterable[object], softmax: bool = False) -> None:
        """An op without GEMM work from ``inputs`` to ``outputs``; ``softmax`` marks a softmax."""
        inputs = list(inputs)
        sources = frozenset().union(*(self._from.get(v, frozenset()) for v in inputs))
        if softmax:
            for index in sources:
                record = self.records[index]
                if record.role == MATMUL:
                    record.role, record.kind = SCORES, LayerKind.ATTN_SCORE
        marked = softmax or any(v in self._softmaxed for v in inputs)
        for out in outputs:
            if sources and not softmax:
                self._from[out] = sources
            if marked:
                self._softmaxed.add(out)

    def layers(self) -> tuple[Layer, ...]:
        """The layers: the same name and GEMM again is one layer with a higher ``repeat``; the same name with
        another GEMM gets a ``#2``, ``#3``, ... suffix."""
        merged: dict[str, tuple[GemmRecord, int]] = {}
        variants: dict[str, list[GemmRecord]] = {}
        for record in self.records:
            name = record.name()
            seen = variants.setdefault(name, [])
            same = next((i for i, other in enumerate(seen) if _same_gemm(other, record)), None)
            if same is None:
                seen.append(record)
                same = len(seen) - 1
            key = name if same == 0 else f"{name}#{same + 1}"
            first, count = merged.get(key, (record, 0))
            merged[key] = (first, count + 1)
        return tuple(
            Layer(key, r.kind, r.m, r.n, r.k, groups=r.groups, repeat=count, bias=r.bias, conv=r.conv,
                  batched=r.batched)
            for key, (r, count) in merged.items()
        )


def _same_gemm(a: GemmRecord, b: GemmRecord) -> bool:
    return (a.kind, a.m, a.n, a.k, a.groups, a.bias, a.conv, a.batched) == (
        b.kind, b.m, b.n, b.k, b.groups, b.bias, b.conv, b.batched)


def conv_record(
    name: str, batch: int, in_channels: int, in_hw: tuple[int, int], weight_shape: tuple[int, ...],
    stride: tuple[int, int], padding: tuple[int, int], dilation: tuple[int, int], groups: int, bias: bool,
) -> GemmRecord:
    """A 2-D convolution (a 1-D one has height 1) as its im2col GEMM record; ``depthwise`` when every group
    has one input and one output channel."""
    out_channels, _, kh, kw = weight_shape
    geom = ConvGeometry(in_channels, out_channels, (kh, kw), stride, padding, dilation, groups, in_hw)
    oh, ow = geom.out_hw
    if groups > 1 and groups == in_channels == out_channels:
        return GemmRecord(name, WEIGHT, LayerKind.DEPTHWISE, 1, batch * oh * ow, kh * kw, groups=groups,
                          bias=bias, conv=geom)
    return GemmRecord(name, WEIGHT, LayerKind.CONV, out_channels // groups, batch * oh * ow,
                      in_channels // groups * kh * kw, groups=groups, bias=bias, conv=geom)


def matmul_dims(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], int, int, int]:
    """``(batch dims, P, Q, R)`` of ``a @ b`` under numpy's rules (``a`` (..., P, Q), ``b`` (..., Q, R)); a
    1-D ``a`` is one row, a 1-D ``b`` one column. ValueError when the shapes do not multiply."""
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if len(a2) < 2 or len(b2) < 2 or a2[-1] != b2[-2]:
        raise ValueError(f"shapes {a} and {b} do not multiply")
    ba, bb = a2[:-2], b2[:-2]
    width = max(len(ba), len(bb))
    ba, bb = (1,) * (width - len(ba)) + ba, (1,) * (width - len(bb)) + bb
    batch = []
    for x, y in zip(ba, bb, strict=True):
        if x != y and 1 not in (x, y):
            raise ValueError(f"batch dimensions of {a} and {b} do not broadcast")
        batch.append(max(x, y))
    return tuple(batch), a2[-2], a2[-1], b2[-1]


def numel(shape: Iterable[int]) -> int:
    """Product of a shape's dimensions (1 for a scalar)."""
    total = 1
    for dim in shape:
        total *= int(dim)
    return total


def weight_layer_name(param: str) -> str:
    """A weight's layer name: the parameter name without a trailing ``.weight`` (``fc.weight`` -> ``fc``),
    so that a PyTorch state_dict's ``<layer>.weight`` keys fit ``--weights``."""
    return param[: -len(".weight")] if param.endswith(".weight") else param


def make_network(
    name: str, table: LayerTable, batch: int, options: dict[str, str], params: dict[str, tuple[int, ...]],
    used: set[str], image_size: int | None = None,
) -> Network:
    """The network: ``table``'s layers; the parameters of ``params`` not in ``used`` as ``extra_params``."""
    layers = table.layers()
    if not layers:
        raise ModelImportError(name, "no GEMM work found (no convolution, linear or matmul op)")
    extras = tuple((key, shape) for key, shape in params.items() if key not in used)
    return Network(name, layers, batch, image_size=image_size, extra_params=extras,
                   options=tuple(options.items()))

"""An ONNX file as a GEMM layer table: ``Conv`` (im2col), ``Gemm`` and ``MatMul`` nodes become layers.

The file is read with ``onnx`` (no runtime), checked, its symbolic input dimensions fixed (a symbolic first
dimension is the batch; the others from the spec's ``name=value`` keys) and its shapes inferred
(``onnx.shape_inference`` with data propagation). Values computed from initializers and ``Constant`` nodes
alone are weights (an initializer transposed or cast is still one); a GEMM with a weight operand is prunable
and named after its node, one without is batched and not prunable. An ``Add`` of a 1-D constant to a
``MatMul``'s output is that layer's bias. See :mod:`stcsim.workloads.model_import`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from stcsim.workloads.layer import LayerKind
from stcsim.workloads.model_import import (
    MATMUL,
    WEIGHT,
    GemmRecord,
    LayerTable,
    ModelImportError,
    conv_record,
    make_network,
    matmul_dims,
    numel,
)
from stcsim.workloads.network import Network

UNSUPPORTED = {
    "ConvTranspose": "a transposed convolution",
    "ConvInteger": "an integer convolution",
    "QLinearConv": "a quantized convolution",
    "DeformConv": "a deformable convolution",
    "MatMulInteger": "an integer matmul",
    "QLinearMatMul": "a quantized matmul",
    "Einsum": "an einsum",
    "LSTM": "an LSTM",
    "GRU": "a GRU",
    "RNN": "an RNN",
    "Attention": "a fused attention op",
}
"""Standard ops with GEMM work that are not lowered: each is an error naming the node."""
_CUSTOM_FLOP = re.compile(r"conv|gemm|matmul|einsum|attention|lstm|gru|rnn", re.IGNORECASE)
_SUBGRAPH_OPS = {"If", "Loop", "Scan"}
_LOWERED = {"Conv", "Gemm", "MatMul"}
_SOFTMAX = {"Softmax", "LogSoftmax"}
_STANDARD_DOMAINS = {"", "ai.onnx"}


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ModelImportError("onnx", "importing an ONNX file needs the onnx package, which is not "
                               "installed (pip install 'stcsim[onnx]')") from None
    return onnx


def load_model(path: str | Path) -> Any:
    """The checked ``ModelProto`` of ``path``; ModelImportError for a missing file or one that is not ONNX."""
    path = Path(path)
    if not path.exists():
        raise ModelImportError(str(path), "no such file")
    if not path.is_file():
        raise ModelImportError(str(path), "not a file")
    onnx = _onnx()
    try:
        model = onnx.load(str(path))
    except Exception as err:  # noqa: BLE001 - protobuf's decode errors have no common public base
        raise ModelImportError(str(path), f"not an ONNX model ({type(err).__name__}: {_first_line(err)})",
                               ) from None
    try:
        onnx.checker.check_model(model)
    except Exception as err:  # noqa: BLE001 - onnx.checker.ValidationError and friends
        raise ModelImportError(str(path), f"not a valid ONNX model ({_first_line(err)})") from None
    if not model.graph.node:
        raise ModelImportError(str(path), "not an ONNX model (its graph has no nodes)")
    return model


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else "no detail"


def import_onnx(path: str, batch: int = 1, dims: dict[str, str] | None = None) -> Network:
    """The GEMM layer table of the ONNX file ``path`` for ``batch``; ``dims`` gives the symbolic input
    dimensions other than the batch (``{"seq": "128"}``). Raises ModelImportError naming the file and
    node for a missing or invalid file, an unknown shape or an op with GEMM work that is not lowered."""
    model = load_model(path)
    options = dict(dims or {})
    values = _dim_values(model, path, batch, options)
    params = _params(model)
    constants = {t.name for t in model.graph.initializer}
    model = _infer(_skeleton(_fix_dims(model, values, batch)), path)
    return _lower(model, path, batch, options, params, constants)


def _skeleton(model: Any) -> Any:
    """``model`` without the data of its large initializers (declared as inputs of their shape instead):
    shape inference needs only their shapes, and runs on a model of kilobytes."""
    onnx = _onnx()
    graph = model.graph
    large = [t for t in graph.initializer if numel(t.dims) > _FOLD_LIMIT]
    names = {t.name for t in large}
    declared = [onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in large]
    inputs = [*[i for i in graph.input if i.name not in names], *declared]
    small = [t for t in graph.initializer if t.name not in names]
    skeleton = onnx.helper.make_graph(graph.node, graph.name, inputs, graph.output, small,
                                      value_info=graph.value_info)
    return _with_graph(model, skeleton)


def _infer(model: Any, path: str, rounds: int = 10_000) -> Any:
    """``model`` with its shapes inferred. ``onnx.shape_inference`` alone leaves the shapes after a
    ``Reshape`` whose target an exporter computes from ``Shape`` (Shape -> Gather -> Div -> Concat) unknown;
    with every input shape fixed, such shape arithmetic is constant: it is evaluated (onnx's reference
    implementation, small tensors only) and put in as initializers, and inference runs again, until nothing
    more folds."""
    onnx = _onnx()
    for _ in range(rounds):
        try:
            model = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
        except Exception as err:  # noqa: BLE001 - onnx.shape_inference.InferenceError
            raise ModelImportError(path, f"shape inference failed: {_first_line(err)}") from None
        folded = _fold(model)
        if not folded:
            return model
        graph = model.graph
        kept = [node for node in graph.node if not all(out in folded for out in node.output)]
        outputs = {o.name for o in graph.output}
        inits = [onnx.numpy_helper.from_array(value, name) for name, value in folded.items()
                 if name not in outputs]
        new_graph = onnx.helper.make_graph(kept, graph.name, graph.input, graph.output,
                                           [*graph.initializer, *inits])
        model = _with_graph(model, new_graph)
    return model


def _with_graph(model: Any, graph: Any) -> Any:
    onnx = _onnx()
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    fixed.graph.CopyFrom(graph)
    return fixed


_FOLD_LIMIT = 4096
"""Elements of a tensor shape arithmetic folds (inputs and outputs): shapes and scalars, never weights."""


def _fold(model: Any) -> dict[str, Any]:
    """Values of the nodes computable from small constants and known shapes (``Shape`` of a tensor whose
    shape is inferred); nothing with GEMM work, no ``Constant`` (inference reads those itself)."""
    import numpy as np

    onnx = _onnx()
    from onnx.reference import ReferenceEvaluator

    shapes = _shapes(model)
    known: dict[str, Any] = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer
                             if numel(t.dims) <= _FOLD_LIMIT}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.domain in _STANDARD_DOMAINS:
            try:
                known[node.output[0]] = ReferenceEvaluator(node).run(None, {})[0]
            except Exception:  # noqa: BLE001 - a constant the reference cannot build: not folded
                pass
    folded: dict[str, Any] = {}
    opset = next((o.version for o in model.opset_import if o.domain in _STANDARD_DOMAINS), None)
    for node in model.graph.node:
        if node.domain not in _STANDARD_DOMAINS or node.op_type in _LOWERED or node.op_type in UNSUPPORTED \
                or node.op_type in _SUBGRAPH_OPS or node.op_type == "Constant":
            continue
        ins = [i for i in node.input if i]
        if node.op_type == "Shape":
            shape = shapes.get(ins[0])
            if shape is None:
                continue
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            start, end = attrs.get("start", 0), attrs.get("end", None)
            values = [np.array(shape[start:end], dtype=np.int64)]
        elif ins and all(i in known for i in ins):
            try:
                evaluator = ReferenceEvaluator(node, opsets={"": opset} if opset else None)
                values = evaluator.run(None, {i: known[i] for i in ins})
            except Exception:  # noqa: BLE001 - an op the reference cannot run here: left to inference
                continue
        else:
            continue
        if any(np.asarray(v).size > _FOLD_LIMIT for v in values):
            continue
        for out, value in zip(node.output, values, strict=False):
            known[out] = folded[out] = np.asarray(value)
    return folded


def _dim_values(model: Any, path: str, batch: int, options: dict[str, str]) -> dict[str, int]:
    """Symbolic dimension name -> value: the first dimension of the inputs is the batch, the others from
    ``options``; ValueError for an option that names no dimension, ModelImportError for a missing one."""
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    values: dict[str, int] = {}
    symbolic: list[str] = []
    for value in inputs:
        dims = value.type.tensor_type.shape.dim
        for index, dim in enumerate(dims):
            if dim.HasField("dim_value"):
                if index == 0 and dim.dim_value != batch:
                    raise ModelImportError(path, f"input {value.name!r} has a fixed batch of "
                                           f"{dim.dim_value}; batch {batch} needs a model exported with a "
                                           "dynamic batch axis")
                continue
            if index == 0 and dim.dim_param:
                values[dim.dim_param] = batch
            elif dim.dim_param and dim.dim_param not in symbolic:
                symbolic.append(dim.dim_param)
    unknown = sorted(set(options) - set(symbolic) - set(values))
    if unknown:
        allowed = ", ".join(symbolic) or "none (all its dimensions are fixed)"
        raise ValueError(f"onnx:{path}: {', '.join(unknown)} is no symbolic input dimension of the model; "
                         f"it takes: {allowed}, launch")
    for name in symbolic:
        if name in values:
            continue
        if name not in options:
            raise ModelImportError(path, f"symbolic input dimension {name!r} has no value: give it as "
                                   f"onnx:{path}:{name}=N")
        try:
            values[name] = int(options[name])
        except ValueError:
            values[name] = 0
        if values[name] < 1:
            raise ValueError(f"onnx:{path}: {name} must be an integer >= 1, got {options[name]!r}")
    return values


def _fix_dims(model: Any, values: dict[str, int], batch: int) -> Any:
    """A copy of ``model`` with its symbolic dimensions replaced by ``values`` wherever they are declared (an
    unnamed unknown first dimension of an input by ``batch``)."""
    onnx = _onnx()
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    graph = fixed.graph
    inputs = {i.name for i in graph.input} - {t.name for t in graph.initializer}
    for value in [*graph.input, *graph.output, *graph.value_info]:
        for index, dim in enumerate(value.type.tensor_type.shape.dim):
            if dim.dim_param in values:
                dim.dim_value = values[dim.dim_param]
            elif index == 0 and value.name in inputs and not dim.HasField("dim_value") and not dim.dim_param:
                dim.dim_value = batch
    return fixed


def _shapes(model: Any) -> dict[str, tuple[int, ...] | None]:
    """Value name -> its static shape, None where a dimension is unknown."""
    shapes: dict[str, tuple[int, ...] | None] = {}
    graph = model.graph
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
            continue
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = (tuple(d.dim_value for d in dims)
                              if all(d.HasField("dim_value") for d in dims) else None)
    for tensor in graph.initializer:
        shapes[tensor.name] = tuple(tensor.dims)
    return shapes


def _has_gemm(graph: Any) -> bool:
    """True when a subgraph (an If / Loop / Scan body) has an op with GEMM work."""
    for node in graph.node:
        if node.op_type in _LOWERED or node.op_type in UNSUPPORTED:
            return True
        for attr in node.attribute:
            bodies = [attr.g] if attr.HasField("g") else list(attr.graphs)
            if any(_has_gemm(body) for body in bodies):
                return True
    return False


def _params(model: Any) -> dict[str, tuple[int, ...]]:
    """The model's parameters: its floating-point initializers with more than one element."""
    onnx = _onnx()
    float_types = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
                   onnx.TensorProto.DOUBLE}
    return {t.name: tuple(t.dims) for t in model.graph.initializer
            if t.data_type in float_types and len(t.dims) >= 1 and numel(t.dims) > 1}


def _lower(model: Any, path: str, batch: int, options: dict[str, str], params: dict[str, tuple[int, ...]],
           constants: set[str]) -> Network:
    onnx = _onnx()
    graph = model.graph
    shapes = _shapes(model)
    # constant value -> the initializer it comes from (shape arithmetic folded into initializers included)
    roots: dict[str, str] = {name: name for name in [*constants, *(t.name for t in graph.initializer)]}
    table, used = LayerTable(), set()
    matmul_out: dict[str, GemmRecord] = {}

    def shape(name: str, node: str) -> tuple[int, ...]:
        found = shapes.get(name)
        if found is None:
            raise ModelImportError(path, f"the shape of {name!r} is unknown after shape inference (a "
                                   "symbolic dimension without a value, or an op onnx cannot infer)",
                                   node=node)
        return found

    def use(value: str) -> None:
        if value in roots:
            used.add(roots[value])

    for index, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{index}"
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        ins = [i for i in node.input if i]
        if node.op_type == "Constant":
            for out in node.output:
                roots[out] = out
            continue
        if node.domain not in _STANDARD_DOMAINS:
            if _CUSTOM_FLOP.search(node.op_type):
                raise ModelImportError(path, f"op {node.domain}.{node.op_type} (outside the ONNX standard) "
                                       "carries GEMM work and is not supported", node=name)
        elif node.op_type in UNSUPPORTED:
            raise ModelImportError(path, f"op {node.op_type} ({UNSUPPORTED[node.op_type]}) carries GEMM work "
                                   "and is not supported", node=name)
        elif node.op_type in _SUBGRAPH_OPS and _has_gemm(node):
            raise ModelImportError(path, f"op {node.op_type} has GEMM work inside its subgraph: control flow "
                                   "is not supported", node=name)
        if node.domain in _STANDARD_DOMAINS and node.op_type == "Conv":
            rec = _conv(node, name, attrs, ins, shape, roots, path)
            use(ins[1])
            if len(ins) > 2:
                use(ins[2])
            table.add(rec, ins, node.output[0])
            continue
        if node.domain in _STANDARD_DOMAINS and node.op_type in ("Gemm", "MatMul"):
            rec, weight = _matmul(node, name, attrs, ins, shape, roots, path)
            if weight is not None:
                use(weight)
                if rec.bias:
                    use(ins[2])
                matmul_out[node.output[0]] = rec
            table.add(rec, ins, node.output[0])
            continue
        if ins and all(i in roots for i in ins):  # computed from constants alone: a weight
            for out in node.output:
                roots[out] = roots[ins[0]]
            continue
        if node.op_type == "Add" and len(ins) == 2:
            _bias_add(ins, matmul_out, roots, shapes, use)
        table.flow(ins, node.output, softmax=node.op_type in _SOFTMAX)
    return make_network(f"onnx:{path}", table, batch, options, params, used)


def _bias_add(ins: list[str], matmul_out: dict[str, GemmRecord], roots: dict[str, str],
              shapes: dict[str, tuple[int, ...] | None], use: Any) -> None:
    """``MatMul`` + ``Add`` of a constant vector of its output features (PyTorch's Linear on a 3-D input):
    the bias of that layer."""
    for out, other in ((ins[0], ins[1]), (ins[1], ins[0])):
        rec = matmul_out.get(out)
        const = shapes.get(other)
        if rec is not None and not rec.bias and other in roots and const is not None and \
                numel(const) == rec.m * rec.groups:
            rec.bias = True
            use(other)
            return


def _conv(node: Any, name: str, attrs: dict[str, Any], ins: list[str], shape: Any, roots: dict[str, str],
          path: str) -> GemmRecord:
    """A ``Conv`` node as its im2col GEMM; the padding must be one symmetric value per axis that gives the
    node's output size (PyTorch's exports always do)."""
    if ins[1] not in roots:
        raise ModelImportError(path, "a convolution whose filters are an activation is not supported",
                               node=name)
    x, w = shape(ins[0], name), shape(ins[1], name)
    y = shape(node.output[0], name)
    spatial = len(x) - 2
    if spatial not in (1, 2):
        raise ModelImportError(path, f"a {spatial}-D convolution is not supported (1-D and 2-D are)",
                               node=name)
    kernel = tuple(w[2:])
    strides = tuple(attrs.get("strides", (1,) * spatial))
    dilations = tuple(attrs.get("dilations", (1,) * spatial))
    pads = tuple(attrs.get("pads", (0,) * 2 * spatial))
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    padding = []
    for axis in range(spatial):
        span = dilations[axis] * (kernel[axis] - 1) + 1
        size, out = x[2 + axis], y[2 + axis]
        total = pads[axis] + pads[axis + spatial] if auto_pad == "NOTSET" else \
            max((out - 1) * strides[axis] + span - size, 0)
        choice = next((p for p in (total // 2, (total + 1) // 2)
                       if (size + 2 * p - span) // strides[axis] + 1 == out), None)
        if choice is None:
            raise ModelImportError(path, f"padding {pads or auto_pad} of axis {axis} is asymmetric in a way "
                                   "no symmetric padding reproduces: not supported", node=name)
        padding.append(choice)
    if spatial == 1:
        in_hw, shape4 = (1, x[2]), (w[0], w[1], 1, w[2])
        stride2, pad2, dil2 = (1, strides[0]), (0, padding[0]), (1, dilations[0])
    else:
        in_hw, shape4 = (x[2], x[3]), tuple(w)
        stride2, pad2, dil2 = strides, tuple(padding), dilations
    rec = conv_record(name, x[0], x[1], in_hw, shape4, stride2, pad2, dil2, int(attrs.get("group", 1)),
                      len(ins) > 2 and ins[2] in roots)
    return rec


def _matmul(node: Any, name: str, attrs: dict[str, Any], ins: list[str], shape: Any, roots: dict[str, str],
            path: str) -> tuple[GemmRecord, str | None]:
    """A ``Gemm`` or ``MatMul`` node as its GEMM record and the weight operand's value name (None: both
    operands are activations)."""
    a, b = shape(ins[0], name), shape(ins[1], name)
    if node.op_type == "Gemm":
        a = a[::-1] if attrs.get("transA", 0) else a
        b = b[::-1] if attrs.get("transB", 0) else b
    try:
        batch_dims, p, q, r = matmul_dims(a, b)
    except ValueError as err:
        raise ModelImportError(path, str(err), node=name) from None
    g = numel(batch_dims)
    const_a, const_b = ins[0] in roots, ins[1] in roots
    if const_a == const_b:  # two activations (or two constants): batched, not prunable
        return GemmRecord(name, MATMUL, LayerKind.ATTN_CONTEXT, r, p, q, groups=g, batched=g > 1,
                          exact_name=True), None
    weight, w_shape, (m, n) = (ins[1], b, (r, p)) if const_b else (ins[0], a, (p, r))
    bias = node.op_type == "Gemm" and len(ins) > 2 and ins[2] in roots
    w_groups = numel(w_shape[:-2])
    if w_groups == 1:  # one weight for every batch element: the batch along N
        return GemmRecord(name, WEIGHT, LayerKind.FC, m, n * g, q, bias=bias), weight
    if w_groups == g:
        return GemmRecord(name, WEIGHT, LayerKind.FC, m, n, q, groups=g, bias=bias, batched=True), weight
    raise ModelImportError(path, f"a matmul broadcasts a {w_shape} weight over batch {batch_dims}: not "
                           "supported", node=name)

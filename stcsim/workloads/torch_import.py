"""A PyTorch ``nn.Module`` as a GEMM layer table, traced on the meta device (no weights, no GPU, no download).

The module runs once with meta tensors in place of its parameters, buffers and inputs (``torch.func.
functional_call``; the module itself is left as it was) under a ``TorchDispatchMode`` that sees every ATen op:
``convolution`` (im2col), ``mm`` / ``addmm`` / ``mv`` and ``bmm`` / ``baddbmm`` (what ``nn.Linear``,
``torch.matmul``, ``@``, ``einsum`` and the math path of ``scaled_dot_product_attention`` run as) become
layers; forward hooks say which module runs an op. Operands derived from parameters (through views,
transposes, slices) are weights; the rest are activations. See :mod:`stcsim.workloads.model_import`.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Sequence
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
    numel,
    weight_layer_name,
)
from stcsim.workloads.network import Network

DTYPES = ("float32", "float16", "bfloat16", "int64", "int32")
TORCH_KEYS = ("input", "image_size", "dtype")
_SOFTMAX = {"_softmax", "softmax", "_safe_softmax", "_log_softmax", "log_softmax"}
FLOP_OP = re.compile(r"conv(?!ert)|^(_int_|add|b|baddb|addb)?mm$|matmul|^mv$|addmv|^v?dot$|einsum|tensordot|"
                     r"attention|lstm|gru|rnn|^linear$|^bilinear$")
"""ATen ops with GEMM work: one that is not lowered is an error, never skipped silently."""


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ModelImportError("torch", "importing a PyTorch model needs PyTorch, which is not installed "
                               "(pip install 'stcsim[torch]')") from None
    return torch


def parse_shape(text: str, source: str) -> tuple[int, ...]:
    """``3x224x224`` as ``(3, 224, 224)``; ModelImportError for anything but positive integers."""
    try:
        shape = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or any(dim < 1 for dim in shape):
        raise ModelImportError(source, f"input={text!r} is not a shape such as 3x224x224")
    return shape


def load_factory(target: str) -> Callable[[], Any]:
    """``MODULE:CALLABLE`` (MODULE importable, or a ``.py`` file) as the callable; ModelImportError else."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ModelImportError(f"torch:{target}", "give MODULE:CALLABLE, e.g. "
                               "torch:torchvision.models:resnet50")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise ModelImportError(module_name, "no such file")
            spec = importlib.util.spec_from_file_location(f"_stcsim_import_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ModelImportError:
        raise
    except Exception as err:  # noqa: BLE001 - any failure of the user's module is a bad input
        raise ModelImportError(f"torch:{target}", f"cannot import {module_name}: {type(err).__name__}: {err}",
                               ) from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ModelImportError(f"torch:{target}", f"{module_name} has no callable {attr!r}")
    return factory


def torch_spec_network(target: str, batch: int, options: dict[str, str]) -> Network:
    """The network of ``torch:MODULE:CALLABLE[:input=...,image_size=...,dtype=...]`` (model_import)."""
    torch = _torch()
    source = f"torch:{target}"
    unknown = sorted(set(options) - set(TORCH_KEYS))
    if unknown:
        raise ValueError(f"{source}: bad parameter(s) {', '.join(unknown)}; it takes: "
                         f"{', '.join(TORCH_KEYS)}, launch")
    image_size = None
    if "input" in options:
        shapes = [parse_shape(part, source) for part in options["input"].split("+")]
    elif "image_size" in options:
        image_size = parse_shape(options["image_size"], source)[0]
        shapes = [(3, image_size, image_size)]
    else:
        raise ValueError(f"{source}: give the per-sample input shape, e.g. {source}:input=3x224x224 "
                         "(the batch is prepended; + between several inputs) or image_size=224")
    dtype = options.get("dtype", "float32")
    if dtype not in DTYPES:
        raise ValueError(f"{source}: dtype={dtype!r} is not one of: {', '.join(DTYPES)}")
    factory = load_factory(target)
    try:
        with torch.device("meta"):
            model = factory()
    except Exception as err:  # noqa: BLE001
        raise ModelImportError(source, f"calling {target.rpartition(':')[2]}() failed: "
                               f"{type(err).__name__}: {err}") from None
    if not isinstance(model, torch.nn.Module):
        raise ModelImportError(source, f"{target.rpartition(':')[2]}() returned a {type(model).__name__}, "
                               "not a torch.nn.Module")
    return import_torch(model, shapes, batch=batch, dtype=dtype, name=source, options=options,
                        image_size=image_size)


def import_torch(
    model: Any, input_shapes: Sequence[Sequence[int]], batch: int = 1, dtype: str = "float32",
    name: str | None = None, options: dict[str, str] | None = None, image_size: int | None = None,
) -> Network:
    """The GEMM layer table of ``model`` (an ``nn.Module``, on any device) for one forward pass.

    ``input_shapes`` are the per-sample shapes of the forward's positional inputs; each gets ``batch`` in
    front. ``dtype`` is their type (``int64`` for token ids). The module is traced on the meta device: its
    own parameters are neither read nor changed (its training flag is restored). ``name`` names the network
    (default: the module's class). Raises ModelImportError naming the module whose forward fails on meta
    tensors (data-dependent control flow) or runs a GEMM op that is not lowered (a transposed convolution).
    """
    torch = _torch()
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    source = name or type(model).__name__
    if not isinstance(model, torch.nn.Module):
        raise ModelImportError(source, f"expected a torch.nn.Module, got {type(model).__name__}")
    if dtype not in DTYPES:
        raise ValueError(f"{source}: dtype={dtype!r} is not one of: {', '.join(DTYPES)}")
    meta = {key: torch.empty_like(t, device="meta") for key, t in
            [*model.named_parameters(), *model.named_buffers()]}
    params = {key: tuple(t.shape) for key, t in model.named_parameters()}
    first = {id(t): key for key, t in [*model.named_parameters(), *model.named_buffers()]}
    aliases: dict[str, list[str]] = {}  # a tied parameter's names (an LM head sharing the embedding's)
    every = [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]
    for key, t in every:
        aliases.setdefault(first[id(t)], []).append(key)
    # a tensor derived from parameters only: (parameter, weight values it covers, offset in the parameter)
    roots: dict[int, tuple[str, int, int]] = {id(t): (key, t.numel(), 0) for key, t in meta.items()}
    keep: list[Any] = list(meta.values())  # ids stay unique while the trace runs
    table, used, stack = LayerTable(), set(), [""]

    def weight_of(tensor: Any) -> str | None:
        found = roots.get(id(tensor))
        return found[0] if found else None

    def weight_name(tensor: Any) -> str:
        """The parameter's name (no ``.weight``); a part of it (``in_proj_weight`` split into q, k and v)
        adds the part's index ``.0``, ``.1``, ... (``@offset`` for uneven parts)."""
        param, size, offset = roots[id(tensor)]
        owned = [key for key in aliases.get(param, []) if key.rpartition(".")[0] == stack[-1]]
        name = weight_layer_name(owned[0] if owned else param)  # the running module's name for a tied one
        if size < numel(meta[param].shape):
            return f"{name}.{offset // size}" if offset % size == 0 else f"{name}@{offset}"
        return name

    def record(rec: GemmRecord, operands: Sequence[Any], out: Any, weight: str | None) -> None:
        if weight is not None:
            used.add(weight)
        table.add(rec, [id(t) for t in operands], id(out))

    def gemm_2d(a: Any, b: Any, out: Any, bias: Any = None) -> None:
        wa, wb = weight_of(a), weight_of(b)
        p, q = a.shape
        r = b.shape[1]
        has_bias = bias is not None and weight_of(bias) is not None
        if has_bias:
            used.add(weight_of(bias))
        if wb is not None and wa is None:
            rec = GemmRecord(weight_name(b), WEIGHT, LayerKind.FC, r, p, q, bias=has_bias)
        elif wa is not None and wb is None:
            rec = GemmRecord(weight_name(a), WEIGHT, LayerKind.FC, p, r, q, bias=has_bias)
        else:
            rec = GemmRecord(stack[-1], MATMUL, LayerKind.ATTN_CONTEXT, r, p, q)
        record(rec, (a, b), out, (wa or wb) if rec.role == WEIGHT else None)

    def gemm_batched(a: Any, b: Any, out: Any, bias: Any = None) -> None:
        g, p, q = a.shape
        r = b.shape[2]
        wa, wb = weight_of(a), weight_of(b)
        has_bias = bias is not None and weight_of(bias) is not None
        if has_bias:
            used.add(weight_of(bias))
        if (wa is None) == (wb is None):
            rec = GemmRecord(stack[-1], MATMUL, LayerKind.ATTN_CONTEXT, r, p, q, groups=g, batched=True)
            record(rec, (a, b), out, None)
            return
        operand, weight, (m, n) = (b, wb, (r, p)) if wb is not None else (a, wa, (p, r))
        size = roots[id(operand)][1]
        if size == m * q:  # one weight broadcast over the batch: one GEMM, the batch along N
            rec = GemmRecord(weight_name(operand), WEIGHT, LayerKind.FC, m, n * g, q,
                             bias=has_bias)
        elif size == g * m * q:  # a weight per batch element
            rec = GemmRecord(weight_name(operand), WEIGHT, LayerKind.FC, m, n, q, groups=g,
                             bias=has_bias, batched=True)
        else:
            raise ModelImportError(source, f"a batched matmul uses {size} values of {weight} as {g} "
                                   f"{m} x {q} weights: not supported", node=stack[-1] or None)
        record(rec, (a, b), out, weight)

    def convolution(args: Sequence[Any], out: Any) -> None:
        x, w, bias, stride, padding, dilation, transposed, _, groups = args[:9]
        node = stack[-1] or None
        if transposed:
            raise ModelImportError(source, "a transposed convolution is not lowered to a GEMM (not "
                                   "supported)", node=node)
        if x.dim() not in (3, 4):
            raise ModelImportError(source, f"a {x.dim() - 2}-D convolution is not supported (1-D and 2-D "
                                   "are)", node=node)
        two = x.dim() == 4
        in_hw = tuple(x.shape[2:]) if two else (1, x.shape[2])
        weight = weight_of(w)
        if weight is None:
            raise ModelImportError(source, "a convolution whose filters are an activation is not supported",
                                   node=node)
        has_bias = bias is not None and weight_of(bias) is not None
        if has_bias:
            used.add(weight_of(bias))
        shape = tuple(w.shape) if two else (w.shape[0], w.shape[1], 1, w.shape[2])
        rec = conv_record(weight_name(w), x.shape[0], x.shape[1], in_hw, shape,
                          _pair(stride, two, 1), _pair(padding, two, 0), _pair(dilation, two, 1), groups,
                          has_bias)
        if rec.conv.out_hw != (tuple(out.shape[2:]) if two else (1, out.shape[2])):
            raise ModelImportError(source, f"convolution output {tuple(out.shape)} does not match its "
                                   f"geometry {rec.conv.out_hw}", node=node)
        record(rec, (x, w), out, weight)

    class Tracer(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN202
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            op = func.overloadpacket.__name__
            keep.append(out)
            if op in ("mm", "_int_mm"):
                gemm_2d(args[0], args[1], out)
            elif op == "addmm":
                gemm_2d(args[1], args[2], out, bias=args[0])
            elif op == "mv":
                gemm_2d(args[0], args[1].unsqueeze(1), out)
            elif op == "bmm":
                gemm_batched(args[0], args[1], out)
            elif op == "baddbmm":
                gemm_batched(args[1], args[2], out, bias=args[0])
            elif op in ("convolution", "_convolution"):
                convolution(args, out)
            elif FLOP_OP.search(op):
                raise ModelImportError(source, f"op aten.{op} carries GEMM work and is not supported",
                                       node=stack[-1] or None)
            else:
                ins = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
                outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
                keep.extend(outs)
                if ins and all(id(t) in roots for t in ins):  # derived from parameters only: a weight
                    param, size, offset = roots[id(ins[0])]
                    size = max(roots[id(t)][1] for t in ins)
                    for t in outs:  # an expand covers no more values, a slice fewer; a view moves the offset
                        roots[id(t)] = (param, min(t.numel(), size),
                                        t.storage_offset() if func.is_view else offset)
                table.flow([id(t) for t in ins], [id(t) for t in outs], softmax=op in _SOFTMAX)
            return out

    names = {}
    for key, module in model.named_modules():
        names.setdefault(id(module), key)

    def pre(module: Any, _inputs: Any) -> None:
        stack.append(names.get(id(module), ""))

    def post(_module: Any, _inputs: Any, _output: Any) -> None:
        stack.pop()

    handles = [h for m in model.modules() for h in (m.register_forward_pre_hook(pre),
                                                       m.register_forward_hook(post))]
    torch_dtype = getattr(torch, dtype)
    inputs = tuple(torch.empty((batch, *map(int, shape)), dtype=torch_dtype, device="meta")
                   for shape in input_shapes)
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad(), torch.device("meta"), Tracer():  # tensors the forward makes land on meta too
            torch.func.functional_call(model, meta, inputs)
    except ModelImportError:
        raise
    except Exception as err:  # noqa: BLE001 - the model's forward on meta tensors
        where = stack[-1] if len(stack) > 1 else None
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ModelImportError(source, f"the forward pass failed on the meta device: {type(err).__name__}: "
                               f"{first}", node=where) from None
    finally:
        model.train(was_training)
        for handle in handles:
            handle.remove()
    return make_network(source, table, batch, dict(options or {}), params, used, image_size=image_size)


def _pair(value: Sequence[int], two: bool, fill: int) -> tuple[int, int]:
    """A convolution's stride / padding / dilation as (height, width); a 1-D one has height 1 (``fill``)."""
    return (int(value[0]), int(value[1])) if two else (fill, int(value[0]))

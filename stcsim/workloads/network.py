"""A network: its layers in execution order, the parameters it was built with, and its totals."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from stcsim.workloads.layer import Layer


@dataclass(frozen=True)
class Network:
    """A network as an ordered table of GEMM layers.

    ``extra_params`` lists tensors that belong to the model but lower to no GEMM (embedding tables, the
    Luong attention scale): they count towards ``params`` but are neither generated nor loaded as weights.
    ``kv_len`` is the number of keys attended by a decoder-only LLM (its phase is an option).
    ``options`` are the named choices it was built with (e.g. ``(("variant", "tf-slim"),)``), see ``spec``.
    Pooling, activations, residual additions and softmax are not listed (no GEMM, no parameters).
    """

    name: str
    layers: tuple[Layer, ...]
    batch: int
    image_size: int | None = None
    seq_len: int | None = None
    hidden: int | None = None
    kv_len: int | None = None
    extra_params: tuple[tuple[str, tuple[int, ...]], ...] = ()
    options: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        names = [layer.name for layer in self.layers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"{self.name}: duplicate layer names {duplicates}")

    @property
    def spec(self) -> str:
        """Name and options as the registry reads them back, e.g. ``alexnet:variant=tf-slim``."""
        options = ",".join(f"{key}={value}" for key, value in self.options)
        return f"{self.name}:{options}" if options else self.name

    def layer(self, name: str) -> Layer:
        """The layer called ``name``; KeyError naming a few valid names otherwise."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        first = [layer.name for layer in self.layers[:5]]
        raise KeyError(f"{self.name} has no layer {name!r} (first layers: {first})")

    @property
    def weighted_layers(self) -> tuple[Layer, ...]:
        """Layers that own a weight tensor, in order."""
        return tuple(layer for layer in self.layers if layer.has_weights)

    @property
    def params(self) -> int:
        """All parameters: layer weights, biases, normalisations and ``extra_params``."""
        return sum(layer.params for layer in self.layers) + sum(prod(shape) for _, shape in self.extra_params)

    @property
    def macs(self) -> int:
        """Multiply-accumulates of one forward pass, GEMM and depthwise layers together."""
        return sum(layer.macs for layer in self.layers)

    @property
    def gemm_macs(self) -> int:
        """Multiply-accumulates of the GEMM layers only (what the simulator runs)."""
        return sum(layer.macs for layer in self.layers if layer.is_gemm)

"""Seeded random weights with the right shapes, generated lazily one layer at a time."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping

import numpy as np

from stcsim.workloads.layer import Layer
from stcsim.workloads.network import Network


def kaiming_normal(layer: Layer, seed: int) -> np.ndarray:
    """Weight of ``layer`` drawn from N(0, 2 / fan_in) (He et al. 2015, fan-in mode), float32.

    fan_in is the GEMM reduction K (Cin/groups x kh x kw for a conv). The stream depends only on ``seed`` and
    the layer name, so a layer's weight is the same whatever other layers exist or were drawn first.
    """
    shape = layer.weight_shape
    if shape is None:
        raise ValueError(f"{layer.name} is a {layer.kind.value} layer and has no weights")
    rng = np.random.default_rng([seed, zlib.crc32(layer.name.encode())])
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(np.sqrt(2.0 / layer.k))


class LazyWeights(Mapping[str, np.ndarray]):
    """Read-only mapping layer name -> weight that draws each array when it is looked up.

    Nothing is cached: holding the mapping costs no memory, and each lookup returns a fresh, identical array.
    """

    def __init__(self, net: Network, seed: int) -> None:
        """Weights for every weighted layer of ``net`` from ``seed``."""
        self._layers = {layer.name: layer for layer in net.weighted_layers}
        self._seed = seed

    def __getitem__(self, name: str) -> np.ndarray:
        """Draw the weight of layer ``name``."""
        return kaiming_normal(self._layers[name], self._seed)

    def __iter__(self) -> Iterator[str]:
        """Layer names in network order."""
        return iter(self._layers)

    def __len__(self) -> int:
        """Number of weighted layers."""
        return len(self._layers)


def make_weights(net: Network, seed: int = 0) -> LazyWeights:
    """Seeded Kaiming-normal weights for ``net`` as a lazy mapping layer name -> float32 array."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return LazyWeights(net, seed)

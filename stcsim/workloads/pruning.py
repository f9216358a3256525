"""Prune a whole network with one pattern: every layer gets a decision, no layer stops the run.

Weight GEMMs go through :mod:`stcsim.sparsity.policy` (as they are, zero-padded, or dense, with the
reason); a grouped conv is ``groups`` GEMMs pruned one by one with the same decision. Layers that are not
weight GEMMs run dense and say why: a depthwise conv is not a GEMM, attention score/context multiply two
activations. The records are data for the network-run CSV (:meth:`LayerPruning.as_row`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from stcsim.sparsity.base import Pattern
from stcsim.sparsity.policy import DEFAULT_POLICY, PruneDecision, PrunedGemm, PrunePolicy, decide, prune_gemm
from stcsim.workloads.layer import Layer
from stcsim.workloads.lowering import gemm_operand
from stcsim.workloads.network import Network
from stcsim.workloads.weights import make_weights

NOT_A_GEMM = "depthwise conv is not a GEMM (M = 1 per channel): runs as a dense stencil"
NO_WEIGHTS = "activation x activation GEMM: no weights to prune"


@dataclass(frozen=True, eq=False)
class LayerPruning:
    """One layer's outcome: the decision (shared by its groups) and, for weight GEMMs, each group's result."""

    layer: Layer
    decision: PruneDecision
    gemms: tuple[PrunedGemm, ...] = ()

    @property
    def density(self) -> float:
        """Kept fraction of the layer's weights (1.0 for layers that run dense)."""
        if not self.gemms:
            return 1.0
        return float(np.mean([gemm.density for gemm in self.gemms]))

    def as_row(self) -> dict[str, object]:
        """Flat CSV columns: layer, kind, the decision's columns and the density."""
        return {"layer": self.layer.name, "kind": self.layer.kind.value, **self.decision.as_row(),
                "density": self.density}


def layer_decision(layer: Layer, pattern: Pattern, policy: PrunePolicy = DEFAULT_POLICY) -> PruneDecision:
    """The decision for ``layer`` from its shape alone (no weights needed)."""
    shape = (layer.m, layer.k)
    if not layer.is_gemm:
        return PruneDecision(pattern.spec(), "dense", NOT_A_GEMM, shape, shape)
    if not layer.prunable:
        return PruneDecision(pattern.spec(), "dense", NO_WEIGHTS, shape, shape)
    return decide(pattern, shape, policy)


def prune_layer(
    layer: Layer,
    weight: np.ndarray | None,
    pattern: Pattern,
    sparsity: float,
    policy: PrunePolicy = DEFAULT_POLICY,
    gradients: np.ndarray | None = None,
    encode: bool = True,
) -> LayerPruning:
    """Prune ``layer``'s weight (PyTorch layout; None for layers without weights) group by group."""
    decision = layer_decision(layer, pattern, policy)
    if not layer.prunable:
        return LayerPruning(layer, decision)
    if weight is None:
        raise ValueError(f"{layer.name}: a {layer.kind.value} layer needs its weight to be pruned")
    operands = gemm_operand(layer, weight)
    grads = [None] * layer.groups if gradients is None else list(gemm_operand(layer, gradients))
    gemms = tuple(prune_gemm(operands[g], pattern, sparsity, policy, grads[g], encode)
                  for g in range(layer.groups))
    return LayerPruning(layer, decision, gemms)


def prune_network(
    net: Network,
    pattern: Pattern,
    sparsity: float,
    policy: PrunePolicy = DEFAULT_POLICY,
    weights: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
    encode: bool = True,
) -> Iterator[LayerPruning]:
    """One :class:`LayerPruning` per layer of ``net``, in order; ``weights`` default to seeded random ones."""
    source = make_weights(net, seed) if weights is None else weights
    for layer in net.layers:
        weight = source[layer.name] if layer.prunable else None
        yield prune_layer(layer, weight, pattern, sparsity, policy, encode=encode)

"""Shape deduplication: the distinct GEMMs a network runs and how often each runs (what gets simulated)."""

from __future__ import annotations

from dataclasses import dataclass

from stcsim.workloads.network import Network


@dataclass(frozen=True)
class GemmShape:
    """One distinct GEMM (M, N, K, prunable) and the number of times a forward pass runs it.

    ``prunable`` is part of the identity: a weight GEMM takes a sparse kernel, an activation x activation
    GEMM (attention) stays dense. ``layers`` names the contributing layers in order of first appearance.
    ``batch`` is the GEMMs of one launch (``Layer.launch_batch``: a batched attention layer's groups, else 1),
    also part of the identity; ``count`` is always GEMMs, ``launches`` the launches that run them.
    """

    m: int
    n: int
    k: int
    prunable: bool
    count: int
    layers: tuple[str, ...]
    batch: int = 1

    @property
    def launches(self) -> int:
        """Kernel launches of one forward pass: ``count / batch``."""
        return self.count // self.batch

    @property
    def macs(self) -> int:
        """Multiply-accumulates of all ``count`` runs."""
        return self.m * self.n * self.k * self.count


def unique_gemm_shapes(net: Network) -> tuple[GemmShape, ...]:
    """Distinct GEMM shapes of ``net`` in order of first appearance; depthwise layers (not GEMMs) are skipped.

    ``count`` sums ``groups x repeat`` over the contributing layers, so ``sum(s.macs)`` equals
    ``net.gemm_macs``.
    """
    counts: dict[tuple[int, int, int, bool, int], int] = {}
    names: dict[tuple[int, int, int, bool, int], list[str]] = {}
    for layer in net.layers:
        if not layer.is_gemm:
            continue
        key = (layer.m, layer.n, layer.k, layer.prunable, layer.launch_batch)
        counts[key] = counts.get(key, 0) + layer.gemm_count
        names.setdefault(key, []).append(layer.name)
    return tuple(GemmShape(*key[:4], count=counts[key], layers=tuple(names[key]), batch=key[4])
                 for key in counts)

"""Shape deduplication: the distinct GEMMs a network runs and how often each runs (what gets simulated)."""

from __future__ import annotations

from dataclasses import dataclass

from stcsim.workloads.network import Network


@dataclass(frozen=True)
class GemmShape:
    """One distinct GEMM (M, N, K, prunable) and the number of times a forward pass runs it.

    ``prunable`` is part of the identity: a weight GEMM takes a sparse kernel, an activation x activation
    GEMM (attention) stays dense. ``layers`` names the contributing layers in order of first appearance.
    """

    m: int
    n: int
    k: int
    prunable: bool
    count: int
    layers: tuple[str, ...]

    @property
    def macs(self) -> int:
        """Multiply-accumulates of all ``count`` runs."""
        return self.m * self.n * self.k * self.count


def unique_gemm_shapes(net: Network) -> tuple[GemmShape, ...]:
    """Distinct GEMM shapes of ``net`` in order of first appearance; depthwise layers (not GEMMs) are skipped.

    ``count`` sums ``groups x repeat`` over the contributing layers, so ``sum(s.macs)`` equals
    ``net.gemm_macs``.
    """
    counts: dict[tuple[int, int, int, bool], int] = {}
    names: dict[tuple[int, int, int, bool], list[str]] = {}
    for layer in net.layers:
        if not layer.is_gemm:
            continue
        key = (layer.m, layer.n, layer.k, layer.prunable)
        counts[key] = counts.get(key, 0) + layer.gemm_count
        names.setdefault(key, []).append(layer.name)
    return tuple(GemmShape(*key, count=counts[key], layers=tuple(names[key])) for key in counts)

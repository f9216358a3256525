"""Unstructured magnitude pruning (Deep Compression style) with CSR storage.

Orientation: element-wise, so none; the CSR rows are the output rows of ``W`` (``M x K``).
``prune`` uses one threshold per layer; ``prune_layers`` uses one threshold over a list of layers
(global magnitude pruning across a network).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from stcsim.sparsity.base import Pattern, check_mask, check_sparsity, check_weights, keep_count
from stcsim.sparsity.csr import CSRFormat
from stcsim.sparsity.select import magnitude, rank_magnitude, top_k_flat


@dataclass(frozen=True)
class Unstructured(Pattern):
    """Keep the largest-magnitude weights; any position may be kept."""

    name: ClassVar[str] = "unstructured"

    def prune(self, weights: np.ndarray, sparsity: float) -> np.ndarray:
        """Keep the ``round((1 - sparsity) * M * K)`` largest ``|w|`` of this layer."""
        w = check_weights(weights)
        return top_k_flat(rank_magnitude(w), keep_count(w.size, check_sparsity(sparsity)))

    def prune_layers(self, layers: Sequence[np.ndarray], sparsity: float) -> list[np.ndarray]:
        """Global pruning: one magnitude threshold over all ``layers`` together; one mask per layer."""
        if not layers:
            raise ValueError("prune_layers needs at least one weight matrix")
        mats = [check_weights(w) for w in layers]
        scores = np.concatenate([magnitude(w).ravel() for w in mats])
        keep = top_k_flat(scores, keep_count(scores.size, check_sparsity(sparsity)))
        bounds = np.cumsum([0] + [w.size for w in mats])
        return [keep[a:b].reshape(w.shape) for a, b, w in zip(bounds[:-1], bounds[1:], mats, strict=True)]

    def encode(self, weights: np.ndarray, mask: np.ndarray) -> CSRFormat:
        """CSR of the kept weights."""
        return CSRFormat.from_masked(*check_mask(weights, mask))


@dataclass(frozen=True)
class SparseRT(Unstructured):
    """Unstructured pruning for SparseRT's generated kernels (paper 003): the same masks and CSR as
    ``unstructured``, under its own name so ``--pattern sparsert`` runs the code generator and
    ``unstructured`` the CSR SpMM."""

    name: ClassVar[str] = "sparsert"

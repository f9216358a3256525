"""Sparsity patterns: pruning masks, storage formats with metadata, and a registry by name.

``registry.get("vw:L=16,K=4")`` returns a pattern; every pattern has ``prune(W, sparsity) -> mask``,
``encode(W, mask) -> format``, ``decode(format) -> W * mask`` and ``format.nbytes()``. ``W`` is ``M x K`` with
``K`` the reduction dimension (``D = W @ X``). See :mod:`stcsim.sparsity.base`. ``prune_gemm`` applies the
whole-network policy (pad or run dense a shape a pattern cannot take; docs/sparsity.md).
"""

from stcsim.sparsity.base import Pattern, SparseFormat
from stcsim.sparsity.policy import PruneDecision, PrunedGemm, PrunePolicy, decide, prune_gemm
from stcsim.sparsity.registry import get, names
from stcsim.sparsity.report import report_rows

__all__ = ["Pattern", "PruneDecision", "PrunePolicy", "PrunedGemm", "SparseFormat", "decide", "get", "names",
           "prune_gemm", "report_rows"]

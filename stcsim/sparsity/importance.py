"""Element importance scores for the patterns that rank groups of weights (tile-wise and its hybrids).

Two scores, chosen by a pattern's ``score`` option:

* ``l2`` (default): ``w ** 2``. A group's mean of it is its mean square, so ranking groups by it ranks
  them by L2 norm per element (the magnitude criterion, paper 002's "most intuitive approach [4]").
* ``taylor``: ``(g * w) ** 2`` with ``g`` the gradient of the loss with respect to ``w``: the first-order
  Taylor estimate of the error incurred by removing the weight (Molchanov et al., CVPR 2019, paper 002's
  ref. [31]: "we use ... the incurred error by removing a parameter as its importance score"). It needs
  the gradients, which only the caller (a training framework) can supply.

A group's score is the *mean* of its elements' scores over its real (unpadded) elements, so groups of
different sizes (the partial last tile of a tile-wise matrix) are ranked on equal terms.
"""

from __future__ import annotations

import numpy as np

SCORES = ("l2", "taylor")


def check_score(pattern: str, score: str) -> None:
    """Validate a ``score`` option value."""
    if score not in SCORES:
        raise ValueError(f"{pattern}: score must be one of {SCORES}, got {score!r}")


def element_importance(
    pattern: str, weights: np.ndarray, score: str, gradients: np.ndarray | None = None
) -> np.ndarray:
    """Per-element importance (float64, same shape as ``weights``) under ``score``.

    ``taylor`` needs ``gradients`` of the weights' shape; ``l2`` takes none (passing gradients with ``l2``
    is a ValueError, as it would silently be ignored).
    """
    w = np.asarray(weights, dtype=np.float64)
    if score == "l2":
        if gradients is not None:
            raise ValueError(f"{pattern}: gradients were given but score=l2 ignores them; use score=taylor")
        return w * w
    if gradients is None:
        raise ValueError(f"{pattern}: score=taylor needs the loss gradients of the weights (gradients=...)")
    g = np.asarray(gradients, dtype=np.float64)
    if g.shape != w.shape:
        raise ValueError(f"{pattern}: gradients shape {g.shape} differs from weights shape {w.shape}")
    taylor = g * w
    return taylor * taylor

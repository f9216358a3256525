"""Tests of the pattern registry and spec parsing."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sparsity import registry
from stcsim.sparsity.blockwise import BlockWise
from stcsim.sparsity.channel import Channel
from stcsim.sparsity.dense import Dense
from stcsim.sparsity.extensor import ExTensor
from stcsim.sparsity.extensor_latency import BlockSkip
from stcsim.sparsity.nm import NM
from stcsim.sparsity.shflbw import ShflBW
from stcsim.sparsity.tew import TileElementWise
from stcsim.sparsity.tilewise import TileWise
from stcsim.sparsity.tvw import TileVectorWise
from stcsim.sparsity.unstructured import SparseRT, Unstructured
from stcsim.sparsity.vectorwise import VectorWise

SPECS = {
    "dense": Dense(),
    "unstructured": Unstructured(),
    "vw:L=16,K=4": VectorWise(L=16, K=4),
    "shflbw:V=64": ShflBW(V=64),
    "tvw:G=64": TileVectorWise(G=64),
    "tw:G=64": TileWise(G=64),
    "tew:G=64,delta=0.015": TileElementWise(G=64, delta=0.015),
    "nm:N=2,M=4": NM(2, 4),
    "bw:B=16": BlockWise(16),
    "channel": Channel(),
    "extensor:maxL=64": ExTensor(maxL=64),
    "sparsert": SparseRT(),
}


@pytest.mark.parametrize("spec", list(SPECS))
def test_specs_parse_and_round_trip(spec: str) -> None:
    """Every documented spec parses to the expected instance, and its canonical spec parses back."""
    pattern = registry.get(spec)
    assert pattern == SPECS[spec]
    assert registry.get(pattern.spec()) == pattern


def test_typed_values() -> None:
    """Enums by value, floats, ``none`` for optional fields, spaces tolerated."""
    assert registry.get("extensor: reading=literal, planner=dp").reading is BlockSkip.LITERAL
    assert registry.get("vw:L=8,K=none,axis=col") == VectorWise(L=8, K=None, axis="col")
    assert registry.get("shflbw:V=32,beta_factor=1.5").beta_factor == 1.5
    assert registry.names() == list(SPECS) or set(registry.names()) == {s.split(":")[0] for s in SPECS}


def test_errors_list_what_is_allowed() -> None:
    """Unknown names and parameters, bad values and bad combinations raise ValueError with the options."""
    with pytest.raises(ValueError, match="allowed: dense, unstructured, vw, shflbw"):
        registry.get("vw16x4")
    with pytest.raises(ValueError, match=r"allowed parameters: L: int = 16, K: int \| None = None, axis"):
        registry.get("vw:Q=3")
    with pytest.raises(ValueError, match="allowed parameters: none"):
        registry.get("dense:x=1")
    with pytest.raises(ValueError, match="not a valid int"):
        registry.get("bw:B=big")
    with pytest.raises(ValueError, match=r"\{literal\|row_skip\|phase_skip\}"):
        registry.get("extensor:reading=maybe")
    with pytest.raises(ValueError, match=r"K must be in \[1, L=16\]"):
        registry.get("vw:L=16,K=17")


def test_block_wise_answers_to_the_names_users_type() -> None:
    """`block` and `blockwise` are aliases of `bw` (canonical spec `bw:...`); the error lists the aliases."""
    assert registry.get("blockwise:B=16") == registry.get("block:B=16") == BlockWise(B=16)
    assert registry.get("block").spec() == BlockWise().spec()
    with pytest.raises(ValueError, match="aliases: block = bw, blockwise = bw"):
        registry.get("blocks")


def test_every_registered_pattern_round_trips_on_an_odd_shape() -> None:
    """Shapes that are multiples of nothing: every default pattern decodes to W * mask."""
    w = np.random.default_rng(5).standard_normal((50, 77)).astype(np.float16)
    for spec in SPECS:
        pattern = registry.get(spec.replace("V=64", "V=16"))
        mask = pattern.prune(w, 0.75)
        assert np.array_equal(pattern.decode(pattern.encode(w, mask)), np.where(mask, w, np.float16(0)))

"""Planning a network run: shape groups, variants, decisions and fallbacks, the cache key."""

import dataclasses

import pytest

from stcsim.harness.jobs import DEPTHWISE, Variant, WeightSource, plan_network, shape_groups, smallest_groups
from stcsim.workloads import get_network, unique_gemm_shapes

MOBILENET = "mobilenet_v1:image_size=32"


def test_shape_groups_cover_every_layer_once_depthwise_included():
    net = get_network(MOBILENET)
    groups = shape_groups(net)
    assert sorted(n for g in groups for n in g.names) == sorted(layer.name for layer in net.layers)
    assert sum(g.repeat for g in groups if g.layer.is_gemm) == sum(s.count for s in unique_gemm_shapes(net))
    assert any(not g.layer.is_gemm for g in groups)
    assert [g.index for g in groups] == list(range(len(groups)))


def test_smallest_groups_are_the_cheapest_weight_gemms_in_network_order():
    groups = shape_groups(get_network(MOBILENET))
    chosen = smallest_groups(groups, 3)
    assert len(chosen) == 3 and all(g.layer.prunable for g in chosen)
    assert [g.index for g in chosen] == sorted(g.index for g in chosen)
    assert max(g.work for g in chosen) <= min(g.work for g in groups if g.layer.prunable and g not in chosen)


def test_variant_canonicalises_and_labels():
    v = Variant.make("vw:L=16,K=4", 0.75, "v100+stc")
    assert (v.pattern, v.label) == ("vw:L=16,K=4,axis=row", "vw:L=16,K=4,axis=row@0.75/v100+stc")
    assert Variant.make("dense", 0.9, "v100", "cuda-core").label == "dense/v100/cuda-core"
    assert Variant.make("blockwise:B=16", 0.5, "v100").pattern == "bw:B=16"
    with pytest.raises(ValueError, match="unknown sparsity pattern"):
        Variant.make("sparse", 0.5, "v100")
    with pytest.raises(ValueError, match=r"sparsity must be in \[0, 1\)"):
        Variant.make("unstructured", 1.5, "v100")
    with pytest.raises(ValueError, match="tensor-core"):
        Variant.make("dense", 0, "v100", "fast")


def test_a_sweep_point_carries_its_resolved_config_and_digest():
    """``make`` resolves the config once; the point's engines and its results' digest come from it, and a
    point built with a resolved config of its own (an override) runs on that one."""
    from stcsim.config import load_config
    from stcsim.harness.jobs import config_digest

    v = Variant.make("dense", 0.0, "v100")
    assert v.gpu is not None and v.resolved() is v.gpu
    assert v.config_hash() == config_digest("v100") == load_config("v100").digest()
    slow = load_config("v100", overrides={"dram.latency": 900})
    w = dataclasses.replace(v, gpu=slow)
    assert w == v and w.config_hash() == slow.digest() != v.config_hash()  # identity: spec and label
    bare = Variant("dense", 0.0, "v100")  # built without make: resolved on demand, the same digest
    assert bare.resolved().digest() == v.config_hash() == bare.config_hash()


def test_a_named_kernel_for_another_pattern_is_refused():
    v = Variant.make("unstructured", 0.9, "v100", "gemm_wmma_f16_f32_tile64x64x32_warp32x32")
    with pytest.raises(ValueError, match="implements the dense pattern, not unstructured"):
        plan_network(MOBILENET, [v], max_layers=1)


def test_depthwise_layers_are_listed_with_their_dense_fallback():
    jobs = plan_network(MOBILENET, [Variant.make("unstructured", 0.9, "v100")])
    depthwise = [j for j in jobs if not j.layer.is_gemm]
    assert depthwise and all(j.fallback.startswith(DEPTHWISE) and "dense fallback" in j.fallback
                             and j.choice.pattern == "dense" for j in depthwise)
    assert all(j.group_layers == len(jobs) for j in jobs)


def test_key_changes_with_what_determines_the_result_only():
    (job,) = plan_network(MOBILENET, [Variant.make("unstructured", 0.9, "v100")], max_layers=1)
    (same,) = plan_network(MOBILENET, [Variant.make("unstructured", 0.9, "v100")], max_layers=1)
    assert job.key() == same.key()
    changed = [
        dataclasses.replace(job, variant=Variant.make("unstructured", 0.8, "v100")),
        dataclasses.replace(job, weights=WeightSource(seed=7)),
        dataclasses.replace(job, versions={**job.versions, "config": "edited"}),
        dataclasses.replace(job, versions={**job.versions, "kernel_ptx": "recompiled"}),
        dataclasses.replace(job, versions={**job.versions, "engine": "rebuilt"}),
        dataclasses.replace(job, check=False),
    ]
    assert len({job.key(), *(c.key() for c in changed)}) == len(changed) + 1
    relabelled = dataclasses.replace(job, variant=dataclasses.replace(job.variant, label="other name"))
    assert relabelled.key() == job.key()

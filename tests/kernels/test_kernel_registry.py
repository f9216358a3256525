"""The registry: kernels by name and by the pattern they consume; typed errors list what exists."""

import pytest

from stcsim.kernels import (
    GEMM_KERNELS,
    KERNEL_SET,
    KERNELS,
    REGISTRY,
    KernelRegistry,
    NoKernelError,
    get_kernel,
    kernels_for,
)
from stcsim.kernels.descriptors.gemm_tiles import TILE_GEMM_KERNELS
from stcsim.kernels.descriptors.gemm_wgmma import WGMMA_BATCHED_KERNELS, WGMMA_KERNELS
from stcsim.kernels.descriptors.gemm_wmma_batched import WMMA_BATCHED_KERNELS
from stcsim.kernels.protocol import PROTOCOL_MEMBERS
from stcsim.sparsity import get


def test_the_kernel_set_is_registered_by_name():
    assert REGISTRY.names() == list(KERNELS) == [k.procedural_name for k in KERNEL_SET]
    assert len(REGISTRY) == len(KERNEL_SET) and all(get_kernel(k.procedural_name) is k for k in KERNEL_SET)


@pytest.mark.parametrize("spec", ["dense", get("dense")])
def test_dense_maps_to_every_dense_gemm(spec):
    dense = (*GEMM_KERNELS, *TILE_GEMM_KERNELS, *WMMA_BATCHED_KERNELS,
             *(k for k in WGMMA_KERNELS if not k.sparse), *WGMMA_BATCHED_KERNELS)
    assert kernels_for(spec) == dense
    assert REGISTRY.by_pattern()["dense"] == [k.procedural_name for k in dense]


@pytest.mark.parametrize("spec", ["vw:L=8,K=2", "bw:B=16", "nm:N=4,M=8"])
def test_a_pattern_without_kernels_is_a_typed_error_listing_what_exists(spec):
    with pytest.raises(NoKernelError) as info:
        kernels_for(spec)
    message = str(info.value)
    assert get(spec).spec() in message and "kernels exist for dense:" in message
    assert all(k.procedural_name in message for k in GEMM_KERNELS)
    assert isinstance(info.value, LookupError)


def test_an_unknown_pattern_spec_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown sparsity pattern 'swmma'.*allowed: dense"):
        kernels_for("swmma")


def test_the_registry_refuses_non_kernels_and_duplicate_names():
    with pytest.raises(TypeError, match="lacks " + ", ".join(PROTOCOL_MEMBERS)):
        KernelRegistry([object()])
    with pytest.raises(ValueError, match=f"two kernels are named {GEMM_KERNELS[0].procedural_name}"):
        KernelRegistry([*GEMM_KERNELS, GEMM_KERNELS[0]])


def test_unknown_kernel_name_lists_the_registered_ones():
    with pytest.raises(KeyError, match="registered: gemm_naive_f32_f32_tile16x16x1"):
        REGISTRY.get("spmm_magic")

"""Network registry: names, defaults, parameter checks and their error messages."""

import pytest

from stcsim.workloads import get_network, list_networks, network_spec

PAPER_NETWORKS = {"alexnet", "vgg16", "vgg19", "resnet18", "resnet50", "resnext50_32x4d", "mobilenet_v1",
                  "bert_base", "transformer_base", "nmt_wmt16", "gnmt", "nmt_iwslt", "luong_nmt",
                  "show_and_tell"}
LLMS = {"llama2_7b", "llama2_13b", "llama2_70b", "llama3_8b", "llama3_70b", "opt_6.7b"}


def test_all_paper_networks_are_listed() -> None:
    assert set(list_networks()) == PAPER_NETWORKS | LLMS


ALIASES = [("ResNeXt-50", "resnext50_32x4d"), ("Luong", "luong_nmt"), ("BERT", "bert_base"),
           ("Show-and-Tell", "show_and_tell"), ("resnet50", "resnet50")]


@pytest.mark.parametrize("alias,name", ALIASES)
def test_aliases_and_spelling(alias: str, name: str) -> None:
    assert get_network(alias).name == name


def test_unknown_network_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match="unknown network 'resnet51'.*resnet50.*show_and_tell"):
        get_network("resnet51")


@pytest.mark.parametrize("batch", [0, -1, 1.5, True, "2"])
def test_bad_batch(batch: object) -> None:
    with pytest.raises(ValueError, match="batch for resnet50 must be an integer >= 1"):
        get_network("resnet50", batch=batch)


@pytest.mark.parametrize("name,size,minimum", [("alexnet", 62, 63), ("vgg16", 31, 32), ("resnet18", 0, 1)])
def test_image_too_small_says_the_minimum(name: str, size: int, minimum: int) -> None:
    expected = f"image_size for {name} must be an integer >= {minimum}, got {size}"
    with pytest.raises(ValueError, match=expected):
        get_network(name, image_size=size)


@pytest.mark.parametrize("name", [n for n in sorted(PAPER_NETWORKS) if network_spec(n).takes_image])
def test_min_image_size_is_exact(name: str) -> None:
    spec = network_spec(name)
    assert spec.builder(batch=1, image_size=spec.min_image_size).image_size == spec.min_image_size
    if spec.min_image_size > 1:
        with pytest.raises(ValueError, match="smaller than the window"):
            spec.builder(batch=1, image_size=spec.min_image_size - 1)


def test_parameters_a_network_does_not_take() -> None:
    with pytest.raises(ValueError, match="bert_base takes no image_size .*it takes batch, seq_len"):
        get_network("bert_base", image_size=224)
    with pytest.raises(ValueError, match="resnet50 takes no seq_len"):
        get_network("resnet50", seq_len=10)
    with pytest.raises(ValueError, match="resnet50 takes no hidden"):
        get_network("resnet50", hidden=10)
    with pytest.raises(ValueError, match=r"seq_len for bert_base must be an integer in \[1, 512\], got 513"):
        get_network("bert_base", seq_len=513)
    with pytest.raises(ValueError, match="hidden for gnmt must be an integer >= 1"):
        get_network("gnmt", hidden=0)


def test_defaults() -> None:
    assert get_network("resnet50").image_size == 224
    assert (get_network("nmt_wmt16").seq_len, get_network("nmt_wmt16").hidden) == (50, 512)
    assert (get_network("gnmt").seq_len, get_network("gnmt").hidden) == (50, 1024)
    assert get_network("bert_base").seq_len == 128


@pytest.mark.parametrize("name", sorted(PAPER_NETWORKS))
def test_macs_are_linear_in_batch(name: str) -> None:
    one, three = get_network(name, batch=1), get_network(name, batch=3)
    assert three.macs == 3 * one.macs
    assert three.params == one.params

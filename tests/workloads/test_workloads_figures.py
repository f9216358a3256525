"""Parameter and MAC totals against the published figures (torchvision model zoo, the papers)."""

import pytest

from stcsim.workloads import get_network

# name: (published params, published MACs at 224x224, exact torchvision parameter count or None)
PUBLISHED = {
    "alexnet": (61.10e6, 0.71e9, 61_100_840),
    "vgg16": (138.36e6, 15.47e9, 138_357_544),
    "vgg19": (143.67e6, 19.63e9, 143_667_240),
    "resnet18": (11.69e6, 1.82e9, 11_689_512),
    "resnet50": (25.56e6, 4.09e9, 25_557_032),
    "resnext50_32x4d": (25.03e6, 4.23e9, 25_028_904),
    "mobilenet_v1": (4.23e6, 0.569e9, None),  # Howard et al. 2017: 4.2 M / 569 M Mult-Adds; Keras: 4,231,976
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_cnn_params_and_macs_match_published(name: str) -> None:
    params, macs, exact = PUBLISHED[name]
    net = get_network(name, batch=1, image_size=224)
    assert net.params == pytest.approx(params, rel=0.01)
    assert net.macs == pytest.approx(macs, rel=0.01)
    if exact is not None:
        assert net.params == exact


def test_mobilenet_counts_keras_trainable_params_and_depthwise_macs() -> None:
    net = get_network("mobilenet_v1")
    assert net.params == 4_231_976  # Keras MobileNet(alpha=1.0) trainable parameters (BN gamma/beta included)
    depthwise = net.macs - net.gemm_macs
    assert depthwise == sum(layer.macs for layer in net.layers if layer.kind.value == "depthwise") > 0
    assert net.gemm_macs < 0.99 * 0.569e9 < net.macs  # the published figure needs the depthwise MACs


def test_bert_base_encoder_and_total_params() -> None:
    net = get_network("bert_base", batch=1, seq_len=128)
    encoder = sum(layer.params for layer in net.layers if layer.name.startswith("encoder."))
    assert encoder == pytest.approx(85e6, rel=0.01)
    assert encoder == 12 * 7_087_872  # per layer: 4 x 768^2 + 2 x 768 x 3072 + biases + 2 LayerNorms
    assert net.params == pytest.approx(110e6, rel=0.01)  # with embeddings and pooler (HF: 109,482,240)
    assert net.params == 109_482_240


def test_macs_scale_with_image_area() -> None:
    small = get_network("vgg16", image_size=224)
    large = get_network("vgg16", image_size=448)
    conv = [(s.macs, b.macs) for s, b in zip(small.layers, large.layers, strict=True) if s.conv is not None]
    assert all(b == 4 * s for s, b in conv)
    assert small.params == large.params  # adaptive pooling keeps the classifier shape

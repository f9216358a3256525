"""AlexNet and VGG as in torchvision (layer names are torchvision's ``state_dict`` module names), and
AlexNet as in the TensorFlow model repository (TF-slim ``alexnet_v2``, paper 001's reference)."""

from __future__ import annotations

from stcsim.workloads.build import conv, linear, pool
from stcsim.workloads.layer import Layer
from stcsim.workloads.network import Network

_VGG_CONFIGS = {
    "vgg16": (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"),
    "vgg19": (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
              512, 512, 512, 512, "M"),
}


ALEXNET_VARIANTS = ("torchvision", "tf-slim")


def alexnet(batch: int, image_size: int, variant: str = "torchvision") -> Network:
    """torchvision AlexNet (the one-GPU variant of Krizhevsky's 'one weird trick': 64-192-384-256-256).

    The adaptive average pool makes the classifier input 256x6x6 for every image size. ``variant="tf-slim"``
    builds :func:`alexnet_v2` instead.
    """
    if variant == "tf-slim":
        return alexnet_v2(batch, image_size)
    hw = (image_size, image_size)
    layers: list[Layer] = []
    plan = ((0, 3, 64, 11, 4, 2, True), (3, 64, 192, 5, 1, 2, True), (6, 192, 384, 3, 1, 1, False),
            (8, 384, 256, 3, 1, 1, False), (10, 256, 256, 3, 1, 1, True))
    for index, cin, cout, kernel, stride, padding, pooled in plan:
        layer = conv(f"features.{index}", batch, cin, cout, hw, kernel, stride, padding, bias=True,
                     batch_norm=False)
        layers.append(layer)
        hw = pool(layer.conv.out_hw, 3, 2) if pooled else layer.conv.out_hw
    layers += [
        linear("classifier.1", 4096, 256 * 6 * 6, batch),
        linear("classifier.4", 4096, 4096, batch),
        linear("classifier.6", 1000, 4096, batch),
    ]
    return Network("alexnet", tuple(layers), batch, image_size=image_size)


def alexnet_v2(batch: int, image_size: int) -> Network:
    """TF-slim ``alexnet_v2`` (tensorflow/models ``research/slim/nets/alexnet.py``): 64-192-384-384-256.

    Convs with bias and no normalisation; conv1 11x11/4 VALID, the others SAME; 3x3/2 VALID max pools after
    conv1, conv2 and conv5; the classifier is convolutional: fc6 a 5x5 VALID conv (K = 256 x 5 x 5 = 6400),
    fc7 and fc8 1x1 convs. At 224 x 224 the feature map before fc6 is 5 x 5, so fc6-fc8 run once per image;
    a larger image runs them at every output position (the model's fully convolutional mode). Layer names
    are the slim scopes.
    """
    hw = (image_size, image_size)
    layers: list[Layer] = []
    plan = (("conv1", 3, 64, 11, 4, 0, True), ("conv2", 64, 192, 5, 1, 2, True),
            ("conv3", 192, 384, 3, 1, 1, False), ("conv4", 384, 384, 3, 1, 1, False),
            ("conv5", 384, 256, 3, 1, 1, True),
            ("fc6", 256, 4096, 5, 1, 0, False), ("fc7", 4096, 4096, 1, 1, 0, False),
            ("fc8", 4096, 1000, 1, 1, 0, False))
    for name, cin, cout, kernel, stride, padding, pooled in plan:
        layer = conv(name, batch, cin, cout, hw, kernel, stride, padding, bias=True, batch_norm=False)
        layers.append(layer)
        hw = pool(layer.conv.out_hw, 3, 2) if pooled else layer.conv.out_hw
    return Network("alexnet", tuple(layers), batch, image_size=image_size)


def _vgg(name: str, batch: int, image_size: int) -> Network:
    hw = (image_size, image_size)
    channels, index = 3, 0
    layers: list[Layer] = []
    for item in _VGG_CONFIGS[name]:
        if item == "M":
            hw = pool(hw, 2, 2)
            index += 1
            continue
        layer = conv(f"features.{index}", batch, channels, item, hw, 3, 1, 1, bias=True, batch_norm=False)
        layers.append(layer)
        channels, hw, index = item, layer.conv.out_hw, index + 2
    layers += [
        linear("classifier.0", 4096, 512 * 7 * 7, batch),
        linear("classifier.3", 4096, 4096, batch),
        linear("classifier.6", 1000, 4096, batch),
    ]
    return Network(name, tuple(layers), batch, image_size=image_size)


def vgg16(batch: int, image_size: int) -> Network:
    """torchvision VGG-16 (configuration D, no BatchNorm); adaptive pool to 7x7 before the classifier."""
    return _vgg("vgg16", batch, image_size)


def vgg19(batch: int, image_size: int) -> Network:
    """torchvision VGG-19 (configuration E, no BatchNorm); adaptive pool to 7x7 before the classifier."""
    return _vgg("vgg19", batch, image_size)

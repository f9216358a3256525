"""ResNet-18, ResNet-50 and ResNeXt-50 (32x4d) as in torchvision (ResNet v1.5: stride on the 3x3 conv).

Layer names are torchvision's ``state_dict`` module names (``layer2.0.conv2``, ``layer2.0.downsample.0``);
every conv is followed by BatchNorm, whose gamma and beta are counted as the conv's ``norm_params``.
"""

from __future__ import annotations

from stcsim.workloads.build import conv, linear, pool
from stcsim.workloads.layer import Layer
from stcsim.workloads.network import Network

_STAGE_PLANES = (64, 128, 256, 512)


def _basic_block(
    prefix: str, batch: int, cin: int, planes: int, hw: tuple[int, int], stride: int
) -> list[Layer]:
    first = conv(f"{prefix}.conv1", batch, cin, planes, hw, 3, stride, 1)
    layers = [first, conv(f"{prefix}.conv2", batch, planes, planes, first.conv.out_hw, 3, 1, 1)]
    if stride != 1 or cin != planes:
        layers.append(conv(f"{prefix}.downsample.0", batch, cin, planes, hw, 1, stride))
    return layers


def _bottleneck(
    prefix: str, batch: int, cin: int, planes: int, hw: tuple[int, int], stride: int, groups: int, width: int
) -> list[Layer]:
    out = planes * 4
    reduce = conv(f"{prefix}.conv1", batch, cin, width, hw, 1)
    spatial = conv(f"{prefix}.conv2", batch, width, width, hw, 3, stride, 1, groups=groups)
    layers = [reduce, spatial, conv(f"{prefix}.conv3", batch, width, out, spatial.conv.out_hw, 1)]
    if stride != 1 or cin != out:
        layers.append(conv(f"{prefix}.downsample.0", batch, cin, out, hw, 1, stride))
    return layers


def _resnet(
    name: str, batch: int, image_size: int, blocks: tuple[int, ...], bottleneck: bool, groups: int = 1,
    width_per_group: int = 64,
) -> Network:
    stem = conv("conv1", batch, 3, 64, (image_size, image_size), 7, 2, 3)
    layers: list[Layer] = [stem]
    hw = pool(stem.conv.out_hw, 3, 2, 1)
    channels = 64
    for stage, (planes, count) in enumerate(zip(_STAGE_PLANES, blocks, strict=True), start=1):
        for index in range(count):
            prefix, stride = f"layer{stage}.{index}", (2 if stage > 1 and index == 0 else 1)
            if bottleneck:
                width = planes * width_per_group // 64 * groups
                block = _bottleneck(prefix, batch, channels, planes, hw, stride, groups, width)
            else:
                block = _basic_block(prefix, batch, channels, planes, hw, stride)
            layers += block
            channels, hw = planes * 4 if bottleneck else planes, _block_out_hw(block)
    layers.append(linear("fc", 1000, channels, batch))
    return Network(name, tuple(layers), batch, image_size=image_size)


def _block_out_hw(block: list[Layer]) -> tuple[int, int]:
    """Spatial size after a block: that of its last main-path conv (the one before any downsample)."""
    main = [layer for layer in block if "downsample" not in layer.name]
    return main[-1].conv.out_hw


def resnet18(batch: int, image_size: int) -> Network:
    """torchvision ResNet-18: basic blocks [2, 2, 2, 2]."""
    return _resnet("resnet18", batch, image_size, (2, 2, 2, 2), bottleneck=False)


def resnet50(batch: int, image_size: int) -> Network:
    """torchvision ResNet-50 (v1.5): bottleneck blocks [3, 4, 6, 3]."""
    return _resnet("resnet50", batch, image_size, (3, 4, 6, 3), bottleneck=True)


def resnext50_32x4d(batch: int, image_size: int) -> Network:
    """torchvision ResNeXt-50 32x4d: bottlenecks [3, 4, 6, 3] whose 3x3 conv has 32 groups of 4 x 2^stage."""
    return _resnet("resnext50_32x4d", batch, image_size, (3, 4, 6, 3), bottleneck=True, groups=32,
                   width_per_group=4)

"""MobileNetV1 (Howard et al. 2017, width 1.0) with Keras' layer names (conv1, conv_dw_i, conv_pw_i).

Every conv is followed by BatchNorm (gamma and beta counted); the classifier is a 1024 -> 1000 fully
connected layer with bias after global average pooling, which is what the Keras 1x1 ``conv_preds`` computes.
"""

from __future__ import annotations

from stcsim.workloads.build import conv, depthwise, linear
from stcsim.workloads.layer import Layer
from stcsim.workloads.network import Network

# (output channels of the pointwise conv, stride of the depthwise conv) for blocks 1..13
_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
           (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


def mobilenet_v1(batch: int, image_size: int) -> Network:
    """MobileNetV1 1.0: a 3x3/2 conv then 13 depthwise-separable blocks, global pool, fc."""
    stem = conv("conv1", batch, 3, 32, (image_size, image_size), 3, 2, 1)
    layers: list[Layer] = [stem]
    channels, hw = 32, stem.conv.out_hw
    for index, (out, stride) in enumerate(_BLOCKS, start=1):
        dw = depthwise(f"conv_dw_{index}", batch, channels, hw, 3, stride, 1)
        pw = conv(f"conv_pw_{index}", batch, channels, out, dw.conv.out_hw, 1)
        layers += [dw, pw]
        channels, hw = out, pw.conv.out_hw
    layers.append(linear("fc", 1000, channels, batch))
    return Network("mobilenet_v1", tuple(layers), batch, image_size=image_size)

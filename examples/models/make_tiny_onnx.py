"""Write tiny_cnn_attn.onnx: the small ONNX model docs/workloads.md imports (``onnx:examples/models/...``).

A stem conv (3 -> 16, 3x3) with BatchNorm and ReLU, a residual basic block (two 3x3 convs), then the 8 x 8
feature map as 64 tokens of 16 features through one self-attention head (Q/K/V MatMuls with weights, the
score and context MatMuls of two activations, a Softmax) and a classifier (Gemm 16 -> 10). Input
``image`` (batch, 3, 16, 16) with a symbolic batch. Weights are seeded random values (the simulator draws its
own unless run with --weights). Needs the onnx package: ``pip install 'stcsim[onnx]'``; run from the
repository root with ``python examples/models/make_tiny_onnx.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).with_name("tiny_cnn_attn.onnx")


def build() -> onnx.ModelProto:
    """The model (opset 17)."""
    rng = np.random.default_rng(0)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def weight(name: str, *shape: int) -> str:
        inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name))
        return name

    def conv(name: str, x: str, cin: int, cout: int) -> str:
        out = f"{name}.out"
        nodes.append(helper.make_node("Conv", [x, weight(f"{name}.weight", cout, cin, 3, 3)], [out],
                                      name=name, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]))
        return out

    def bn_relu(name: str, x: str, channels: int, relu: bool = True) -> str:
        params = [weight(f"{name}.{p}", channels) for p in ("weight", "bias", "running_mean")]
        inits.append(numpy_helper.from_array(np.ones(channels, np.float32), f"{name}.running_var"))
        nodes.append(helper.make_node("BatchNormalization", [x, *params, f"{name}.running_var"],
                                      [f"{name}.out"], name=name))
        if not relu:
            return f"{name}.out"
        nodes.append(helper.make_node("Relu", [f"{name}.out"], [f"{name}.relu"], name=f"{name}.relu"))
        return f"{name}.relu"

    x = bn_relu("bn1", conv("conv1", "image", 3, 16), 16)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], name="maxpool", kernel_shape=[2, 2],
                                  strides=[2, 2]))
    y = bn_relu("layer1.0.bn1", conv("layer1.0.conv1", "pool", 16, 16), 16)
    y = bn_relu("layer1.0.bn2", conv("layer1.0.conv2", y, 16, 16), 16, relu=False)
    nodes.append(helper.make_node("Add", [y, "pool"], ["layer1.0.sum"], name="layer1.0.add"))
    nodes.append(helper.make_node("Relu", ["layer1.0.sum"], ["features"], name="layer1.0.relu"))
    # (batch, 16, 8, 8) -> tokens (batch, 64, 16)
    inits.append(numpy_helper.from_array(np.array([0, 16, 64], np.int64), "tokens_shape"))
    nodes.append(helper.make_node("Reshape", ["features", "tokens_shape"], ["flat"], name="to_tokens"))
    nodes.append(helper.make_node("Transpose", ["flat"], ["tokens"], name="tokens_t", perm=[0, 2, 1]))
    for proj in ("q", "k", "v"):
        nodes.append(helper.make_node("MatMul", ["tokens", weight(f"attn.{proj}_proj.weight", 16, 16)],
                                      [f"attn.{proj}"], name=f"attn.{proj}_proj"))
    nodes.append(helper.make_node("Transpose", ["attn.k"], ["attn.kt"], name="attn.k_t", perm=[0, 2, 1]))
    nodes.append(helper.make_node("MatMul", ["attn.q", "attn.kt"], ["attn.s"], name="attn.scores"))
    nodes.append(helper.make_node("Softmax", ["attn.s"], ["attn.p"], name="attn.softmax", axis=-1))
    nodes.append(helper.make_node("MatMul", ["attn.p", "attn.v"], ["attn.o"], name="attn.context"))
    nodes.append(helper.make_node("ReduceMean", ["attn.o"], ["pooled"], name="avgpool", axes=[1], keepdims=0))
    nodes.append(helper.make_node("Gemm", ["pooled", weight("fc.weight", 10, 16), weight("fc.bias", 10)],
                                  ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes, "tiny_cnn_attn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="stcsim examples/models/make_tiny_onnx.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    onnx.save(build(), OUT)
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")

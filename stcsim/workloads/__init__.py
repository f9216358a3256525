"""DNN workloads of the papers as GEMM layer tables, their unique GEMM shapes, and their weights.

Convention (every layer): ``groups`` GEMMs ``out (M x N) = A (M x K) @ B (K x N)`` run ``repeat`` times, with
M = output features, K = reduction (Cin/groups x kh x kw for a conv via im2col), N = batch x Hout x Wout or
batch x tokens. See docs/workloads.md. ``import_torch`` / ``import_onnx`` (specs ``onnx:FILE``,
``torch:MODULE:CALLABLE``) turn one's own model into such a table (PyTorch and onnx are optional extras).
"""

from stcsim.workloads.layer import ConvGeometry, Layer, LayerKind
from stcsim.workloads.loader import WeightFileError, load_weights, match_weights
from stcsim.workloads.lowering import gemm_operand, im2col
from stcsim.workloads.model_import import ModelImportError, import_network
from stcsim.workloads.network import Network
from stcsim.workloads.onnx_import import import_onnx
from stcsim.workloads.papers import PAPER_WORKLOADS, PaperWorkload, paper_workloads
from stcsim.workloads.pruning import LayerPruning, prune_network
from stcsim.workloads.registry import NetworkSpec, get_network, list_networks, network_spec, with_params
from stcsim.workloads.shapes import GemmShape, unique_gemm_shapes
from stcsim.workloads.torch_import import import_torch
from stcsim.workloads.weights import LazyWeights, make_weights

__all__ = [
    "ConvGeometry",
    "GemmShape",
    "Layer",
    "LayerKind",
    "LayerPruning",
    "LazyWeights",
    "ModelImportError",
    "Network",
    "NetworkSpec",
    "PAPER_WORKLOADS",
    "PaperWorkload",
    "WeightFileError",
    "gemm_operand",
    "get_network",
    "im2col",
    "import_network",
    "import_onnx",
    "import_torch",
    "list_networks",
    "load_weights",
    "make_weights",
    "match_weights",
    "network_spec",
    "paper_workloads",
    "prune_network",
    "unique_gemm_shapes",
    "with_params",
]

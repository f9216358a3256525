"""stcsim: sparse Tensor Core research toolkit (simulator engine, pruning library, kernels, harness)."""

__version__ = "0.1.0"

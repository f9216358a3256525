"""The CUTLASS-style kernel set: descriptors, registry and the run lifecycle."""

from stcsim.kernels.gemm import GemmKernel
from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.problem import GemmProblem, TileShape
from stcsim.kernels.registry import GEMM_KERNELS, KERNELS, get_kernel
from stcsim.kernels.run import DeviceEngine, run_gemm
from stcsim.kernels.verify import GemmCheck, random_operands, relative_error, verify_gemm

__all__ = [
    "GEMM_KERNELS",
    "KERNELS",
    "DeviceEngine",
    "GemmCheck",
    "GemmKernel",
    "GemmProblem",
    "OperandLayout",
    "TileShape",
    "get_kernel",
    "random_operands",
    "relative_error",
    "run_gemm",
    "verify_gemm",
]

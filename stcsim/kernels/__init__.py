"""The CUTLASS-style kernel set: the kernel protocol, descriptors, registry and the run lifecycle."""

from stcsim.kernels.descriptors.gemm import GemmKernel
from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.operands import OperandArray, Operands, poisoned
from stcsim.kernels.problem import GemmProblem, TileShape
from stcsim.kernels.protocol import CannotImplement, Kernel
from stcsim.kernels.registry import (
    GEMM_KERNELS,
    KERNEL_SET,
    KERNELS,
    REGISTRY,
    KernelRegistry,
    NoKernelError,
    get_kernel,
    kernels_for,
)
from stcsim.kernels.run import DeviceEngine, launch, run_gemm
from stcsim.kernels.verify import GemmCheck, random_operands, relative_error, verify_gemm

__all__ = [
    "GEMM_KERNELS",
    "KERNELS",
    "KERNEL_SET",
    "REGISTRY",
    "CannotImplement",
    "DeviceEngine",
    "GemmCheck",
    "GemmKernel",
    "GemmProblem",
    "Kernel",
    "KernelRegistry",
    "NoKernelError",
    "OperandArray",
    "OperandLayout",
    "Operands",
    "TileShape",
    "get_kernel",
    "kernels_for",
    "launch",
    "poisoned",
    "random_operands",
    "relative_error",
    "run_gemm",
    "verify_gemm",
]

"""The kernel set: every kernel descriptor, registered by procedural name and found by sparsity pattern.

``kernels_for("dense")`` lists the kernels that consume a pattern spec; a spec no kernel implements (e.g.
``"nm:N=4,M=8"`` today) is a NoKernelError that lists the patterns that have kernels. A new kernel is one
descriptor class (stcsim.kernels.protocol.Kernel) and one row of KERNEL_SET.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache

from stcsim.kernels.descriptors.extensor_spmm import EXTENSOR_KERNELS
from stcsim.kernels.descriptors.gemm import GemmKernel
from stcsim.kernels.descriptors.gemm_channel import ChannelGemmKernel
from stcsim.kernels.descriptors.gemm_mma_sp import MMA_SP_KERNELS
from stcsim.kernels.descriptors.gemm_tiles import TILE_GEMM_KERNELS
from stcsim.kernels.descriptors.gemm_tilewise import TEW_KERNELS, TILEWISE_KERNELS
from stcsim.kernels.descriptors.gemm_vectorwise_simt import VectorWiseSimtKernel
from stcsim.kernels.descriptors.gemm_wgmma import WGMMA_BATCHED_KERNELS, WGMMA_KERNELS
from stcsim.kernels.descriptors.gemm_wmma_batched import WMMA_BATCHED_KERNELS
from stcsim.kernels.descriptors.shmma import SHMMA_KERNELS
from stcsim.kernels.descriptors.shmma_tiles import SHMMA_TILE_KERNELS
from stcsim.kernels.descriptors.sparse_tiles import SIMT_SPARSE_TILE_KERNELS
from stcsim.kernels.descriptors.spmm_csr import CsrSpmmKernel
from stcsim.kernels.descriptors.spmm_csrmv import CSRMV_KERNELS
from stcsim.kernels.descriptors.spmm_shflbw import SHFLBW_KERNELS, SHFLBW_WMMA_KERNELS
from stcsim.kernels.descriptors.spmm_sparsert import SparseRtKernel
from stcsim.kernels.descriptors.spmm_tvw import TVW_KERNELS
from stcsim.kernels.layout import OperandLayout
from stcsim.kernels.problem import TileShape
from stcsim.kernels.protocol import Kernel, as_pattern, missing_members
from stcsim.kernels.ptx_info import opcodes
from stcsim.sparsity import get
from stcsim.sparsity.base import Pattern
from stcsim.sparsity.registry import pattern_class

_F32 = OperandLayout(a_dtype="float32", b_dtype="float32")
_F16 = OperandLayout(a_dtype="float16", b_dtype="float16")
_F16_ALIGN8 = OperandLayout(a_dtype="float16", b_dtype="float16", align_ab=8)

GEMM_KERNELS: tuple[GemmKernel, ...] = (
    GemmKernel(
        algorithm="naive",
        layout=_F32,
        block_tile=TileShape(16, 16, 1),
        threads=(16, 16, 1),
        ptx_file="gemm_naive.ptx",
        instruction="fma.rn.f32",
        summary="one thread per element of C, operands straight from global memory",
    ),
    GemmKernel(
        algorithm="simt",
        layout=_F32,
        block_tile=TileShape(64, 64, 8),
        threads=(256, 1, 1),
        ptx_file="gemm_simt.ptx",
        instruction="fma.rn.f32",
        warp_tile=(32, 16),
        thread_tile=(4, 4),
        summary="shared-memory tiles, 4x4 outer product per thread on CUDA cores",
    ),
    GemmKernel(
        algorithm="wmma_global",
        layout=_F16,
        block_tile=TileShape(32, 32, 16),
        threads=(128, 1, 1),
        ptx_file="gemm_wmma.ptx",
        instruction="wmma.mma.m16n16k16",
        warp_tile=(16, 16),
        summary="one warp per 16x16 tile of C, WMMA fragments loaded from global memory",
    ),
    GemmKernel(
        algorithm="wmma",
        layout=_F16,
        block_tile=TileShape(64, 64, 32),
        threads=(128, 1, 1),
        ptx_file="gemm_wmma.ptx",
        instruction="wmma.mma.m16n16k16",
        warp_tile=(32, 32),
        summary="A and B tiles staged in shared memory, 2x2 WMMA fragments per warp",
    ),
    GemmKernel(
        algorithm="mma",
        layout=_F16_ALIGN8,
        block_tile=TileShape(128, 128, 32),
        threads=(128, 1, 1),
        ptx_file="gemm_mma.ptx",
        instruction="mma.sync.m16n8k16",
        warp_tile=(64, 64),
        stages=3,
        dynamic_shared_bytes=3 * (128 * 32 + 32 * 128) * 2,
        summary="multistage cp.async pipeline, ldmatrix and mma.sync (CUTLASS sm80 style)",
    ),
    GemmKernel(
        algorithm="mma",
        layout=_F16_ALIGN8,
        block_tile=TileShape(64, 64, 32),
        threads=(128, 1, 1),
        ptx_file="gemm_mma.ptx",
        instruction="mma.sync.m16n8k16",
        warp_tile=(32, 32),
        stages=2,
        dynamic_shared_bytes=2 * (64 * 32 + 32 * 64) * 2,
        summary="double-buffered cp.async pipeline, ldmatrix and mma.sync",
    ),
)

_SIMT_F32 = GEMM_KERNELS[1]
"""The dense SIMT SGEMM: CUDA Core Dense of paper 001, whose tiles the sparse CUDA-core GEMMs reuse."""


class NoKernelError(LookupError):
    """No registered kernel consumes a sparsity pattern; the message lists the patterns that have kernels."""


class KernelRegistry:
    """Kernel descriptors by procedural name (unique), searchable by the sparsity pattern they consume."""

    def __init__(self, kernels: Iterable[Kernel]) -> None:
        self._kernels: dict[str, Kernel] = {}
        for kernel in kernels:
            missing = missing_members(kernel)
            if missing:
                raise TypeError(f"{kernel!r} is not a kernel descriptor: it lacks {', '.join(missing)}")
            if kernel.procedural_name in self._kernels:
                raise ValueError(f"two kernels are named {kernel.procedural_name}")
            self._kernels[kernel.procedural_name] = kernel

    def __iter__(self) -> Iterator[Kernel]:
        return iter(self._kernels.values())

    def __len__(self) -> int:
        return len(self._kernels)

    def names(self) -> list[str]:
        """Procedural names in registration order."""
        return list(self._kernels)

    def get(self, name: str) -> Kernel:
        """The kernel registered under this name; KeyError listing the registered names otherwise."""
        try:
            return self._kernels[name]
        except KeyError:
            raise KeyError(f"unknown kernel {name!r}; registered: {', '.join(self._kernels)}") from None

    def by_pattern(self) -> dict[str, list[str]]:
        """Kernel names grouped by the pattern family they consume, in registration order."""
        groups: dict[str, list[str]] = {}
        for kernel in self:
            groups.setdefault(kernel.pattern_name, []).append(kernel.procedural_name)
        return groups

    def for_pattern(self, pattern: Pattern | str) -> tuple[Kernel, ...]:
        """The kernels that consume `pattern` (an instance or a spec such as 'vw:L=16,K=4').

        ValueError for a spec stcsim.sparsity does not know; NoKernelError when no kernel consumes it.
        """
        pat = as_pattern(pattern)
        found = tuple(k for k in self if k.supports(pat)[0])
        if not found:
            have = "; ".join(f"{p}: {', '.join(names)}" for p, names in self.by_pattern().items())
            raise NoKernelError(
                f"no kernel implements the sparsity pattern {pat.spec()!r}; kernels exist for {have}"
            )
        return found


KERNEL_SET: tuple[Kernel, ...] = (
    *GEMM_KERNELS,
    *TILE_GEMM_KERNELS,  # the dense SIMT and WMMA GEMMs' other tiles and split-K (per-shape choice, issue 44)
    *WMMA_BATCHED_KERNELS,  # the WMMA GEMM's tiles strided-batched (grid z = batch): batched problems only
    *CSRMV_KERNELS,  # CUDA Core Generic as a library's column-major csrmm runs it (a bar names it)
    CsrSpmmKernel(),
    ChannelGemmKernel(dense=_SIMT_F32),
    VectorWiseSimtKernel(dense=_SIMT_F32, kv=2),
    VectorWiseSimtKernel(dense=_SIMT_F32, kv=4),
    VectorWiseSimtKernel(dense=_SIMT_F32, kv=8),
    *SHMMA_KERNELS,  # Tensor Core Vector-wise (paper 001): vw:L=16,K=2|4|8
    *SIMT_SPARSE_TILE_KERNELS,  # the CSR, channel and vector-wise SIMT kernels' tiles and split-K (per shape)
    *SHMMA_TILE_KERNELS,  # the SHMMA GEMM's tiles and split-K (per shape)
    *EXTENSOR_KERNELS,  # wmma.smma.L chunk SpMM (paper 004), one row per scheme: extensor
    *MMA_SP_KERNELS,  # 2:4 mma.sp.sync m16n8k32 GEMM (the hardware's sparse Tensor Core): nm:N=2,M=4
    *TVW_KERNELS,  # tile-vector-wise (paper 002) on the 2:4 GEMM: tvw:G=64, tvw:G=128
    *SHFLBW_WMMA_KERNELS,  # the same on WMMA m16n16k16 (sm_70+: V100, T4; ranked below the mma.sync one)
    *SHFLBW_KERNELS,  # gathered-B mma.sync SpMM (paper 000): shflbw:V=32|64
    *TILEWISE_KERNELS,  # CTO-fused mma.sync GEMM (paper 002): tw:G=32k|64k
    *TEW_KERNELS,  # the same plus the element-wise remainder on CUDA cores: tew:G=32k|64k
    SparseRtKernel(),  # PTX generated per weight matrix (paper 003): sparsert
    *WGMMA_KERNELS,  # Hopper TMA + wgmma GEMMs (sm_90 configs only), dense and 2:4: dense, nm:N=2,M=4
    *WGMMA_BATCHED_KERNELS,  # the dense one strided-batched (grid z = batch): batched problems only
)
"""Every kernel of the set: the dense GEMMs and their per-shape tiles, then the sparse kernels."""

REGISTRY = KernelRegistry(KERNEL_SET)

KERNELS: dict[str, Kernel] = {k.procedural_name: k for k in REGISTRY}


def get_kernel(name: str) -> Kernel:
    """The kernel registered under this procedural name; KeyError listing the allowed names otherwise."""
    return REGISTRY.get(name)


def kernels_for(pattern: Pattern | str) -> tuple[Kernel, ...]:
    """The registered kernels that consume `pattern`; NoKernelError listing what exists when none does."""
    return REGISTRY.for_pattern(pattern)


RESEARCH_OPCODE_TOKEN = "smma"
"""The opcode token of the research instructions the simulator adds (SHMMA of engine/ext/stc, wmma.smma.L of
engine/ext/extensor): no real GPU has them."""


@cache
def runs_on_silicon(kernel: Kernel) -> bool:
    """Whether a real GPU runs the kernel: its PTX issues no research instruction (RESEARCH_OPCODE_TOKEN)."""
    return not any(RESEARCH_OPCODE_TOKEN in op.split(".") for op in opcodes(kernel.ptx_path.read_text()))


def silicon_kernels(registry: KernelRegistry = REGISTRY) -> tuple[Kernel, ...]:
    """The registered kernels a real GPU runs (`runs_on_silicon`), in registration order."""
    return tuple(k for k in registry if runs_on_silicon(k))


EXAMPLE_SPECS = ("tvw:G=128", "shflbw:V=64", "vw:L=16,K=2", "vw:L=16,K=4", "vw:L=16,K=8")
"""Patterns tried after a family's default instance, for kernels bound to other parameters."""


def kernel_pattern(kernel: Kernel) -> Pattern | None:
    """The pattern a kernel runs with in the table: its family's default instance or the first of
    EXAMPLE_SPECS it supports; None when neither (the kernel is then reported as skipped)."""
    try:
        candidates = [pattern_class(kernel.pattern_name)()]
    except (TypeError, ValueError):
        candidates = []
    for spec in EXAMPLE_SPECS:
        try:
            candidates.append(get(spec))
        except ValueError:
            continue
    return next((p for p in candidates if kernel.supports(p)[0]), None)

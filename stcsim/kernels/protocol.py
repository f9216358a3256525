"""The kernel protocol: what a kernel descriptor provides so that one generic run drives every kernel.

Modelled on CUTLASS's device-level operators (``GemmSparse``: ``can_implement``, ``initialize``, ``run``
with ``ref_A``..``ref_E``): a descriptor says which sparsity pattern it consumes and which problems it runs,
prepares its operands from dense weights (prune and encode through the pattern, then lay out values,
metadata and dense tensors as named host arrays), gives the launch geometry and the argument list from the
device pointers, turns the copied-back outputs into the result, and computes the float64 reference through
the pattern's own decode. See docs/kernels.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from stcsim.kernels.operands import Operands
from stcsim.kernels.problem import GemmProblem
from stcsim.sparsity import Pattern, get

Dim3 = tuple[int, int, int]


class CannotImplement(ValueError):
    """A kernel was asked to run a problem or a sparsity pattern it does not implement (says why)."""


class Kernel(Protocol):
    """A kernel descriptor (see the module docstring); `GemmKernel` is the dense one."""

    @property
    def procedural_name(self) -> str:
        """Registry name: algorithm, data types and tiles, e.g. gemm_wmma_f16_f32_tile64x64x32_warp32x32."""
        ...

    @property
    def entry(self) -> str:
        """The `.entry` to launch in the PTX."""
        ...

    @property
    def ptx_path(self) -> Path:
        """The PTX file that holds the entry."""
        ...

    @property
    def pattern_name(self) -> str:
        """The sparsity pattern family the kernel consumes (a stcsim.sparsity registry name, e.g. 'dense')."""
        ...

    @property
    def tolerance(self) -> float:
        """Largest accepted max|D - ref| / max|ref|."""
        ...

    def supports(self, pattern: Pattern) -> tuple[bool, str]:
        """Whether the kernel consumes this pattern instance (family and parameters), and why not."""
        ...

    def can_implement(self, problem: GemmProblem, pattern: Pattern) -> tuple[bool, str]:
        """Whether the kernel runs `problem` with weights in `pattern` correctly, and why not."""
        ...

    def prepare(
        self, weights: np.ndarray, activations: np.ndarray, pattern: Pattern, sparsity: float = 0.0
    ) -> Operands:
        """Operands of D = W @ X: prune W (m x k) to `sparsity` and encode it through `pattern`, lay out X
        (k x n), and add the output; CannotImplement when can_implement refuses."""
        ...

    def launch_geometry(self, problem: GemmProblem) -> tuple[Dim3, Dim3, int]:
        """(grid, block, dynamic shared bytes)."""
        ...

    def args(self, operands: Operands, pointers: Mapping[str, int]) -> list[int | float]:
        """Kernel arguments in `.param` order, given the device address of every operand by name."""
        ...

    def unpack(self, operands: Operands, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The m x n result from the output arrays read back from the device."""
        ...

    def reference(self, operands: Operands) -> np.ndarray:
        """float64 D = decode(W) @ X from the operands as the kernel sees them (the pattern's own decode)."""
        ...


@runtime_checkable
class GeneratedKernel(Kernel, Protocol):
    """A kernel whose PTX is generated per weight matrix (SparseRT): `ptx_path` holds a specimen of the
    generated code (what the kernel choice reads and the job cache digests), `generated_ptx` the module a
    launch of these operands loads."""

    def generated_ptx(self, operands: Operands) -> Path:
        """The PTX file generated (or found in the cache) for the weights and shape of `operands`."""
        ...

    def generation_stats(self, operands: Operands) -> dict[str, float | int | str]:
        """How the module of `operands` was made: generation seconds, cache hit, PTX lines, weight mode."""
        ...


@runtime_checkable
class ReusesWeights(Kernel, Protocol):
    """A kernel that can pair operands it prepared with other activations without preparing the weights
    again (pruning, encoding and laying out a large layer's weights costs seconds; its activations little):
    what the sampled check of a large layer uses for its columns."""

    def with_activations(self, operands: Operands, activations: np.ndarray) -> Operands:
        """The operands `prepare(weights, activations, ...)` gives for the weights of `operands` and these
        activations (K x N' for any N'): the weights' arrays shared, the activations' and outputs' new."""
        ...


def ptx_for(kernel: Kernel, operands: Operands) -> Path:
    """The PTX file a launch of `operands` loads: the generated module of a GeneratedKernel, else the
    kernel's own file."""
    return kernel.generated_ptx(operands) if isinstance(kernel, GeneratedKernel) else kernel.ptx_path


PROTOCOL_MEMBERS: tuple[str, ...] = tuple(name for name in vars(Kernel) if not name.startswith("_"))
"""Every attribute and method a kernel descriptor must have."""


def missing_members(obj: object) -> list[str]:
    """The protocol members `obj` lacks (empty for a kernel descriptor)."""
    return [name for name in PROTOCOL_MEMBERS if not hasattr(obj, name)]


def as_pattern(pattern: Pattern | str) -> Pattern:
    """A pattern from an instance or a registry spec such as 'vw:L=16,K=4' (ValueError if unknown)."""
    return get(pattern) if isinstance(pattern, str) else pattern


def supports_family(kernel: Kernel, pattern: Pattern) -> tuple[bool, str]:
    """`supports` for a kernel that takes every parameter setting of its pattern family."""
    if pattern.name == kernel.pattern_name:
        return True, ""
    name = kernel.procedural_name
    return False, f"{name} implements the {kernel.pattern_name} pattern, not {pattern.spec()}"


def require(kernel: Kernel, problem: GemmProblem, pattern: Pattern) -> None:
    """Raise CannotImplement (with the kernel's reason) unless the kernel can run problem with pattern."""
    ok, reason = kernel.can_implement(problem, pattern)
    if not ok:
        raise CannotImplement(f"{kernel.procedural_name} cannot run {problem} ({pattern.spec()}): {reason}")

"""Which kernel runs a layer: found through the kernel registry, never by name in the harness.

For a layer (a GEMM problem), a sparsity pattern and a GPU config, the candidates are the registry's kernels
for the pattern (``kernels_for``), narrowed to

1. the selector: the math units ``tensor-core`` or ``cuda-core`` (read from the PTX of the kernel's entry:
   an entry with ``wmma``/``mma``/``wgmma`` instructions uses Tensor Cores), ``auto`` (Tensor Cores when a
   Tensor-Core kernel is left, else CUDA cores), a procedural name, or a glob of names
   (``spmm_extensor_l32_*``: a kernel family whose tiles may change);
2. the problem: ``can_implement(problem, pattern)``;
3. the GPU: a 64 x 64 x 64 probe launch on the config (a config without timing for one of the kernel's
   instructions, e.g. ``mma.sync`` on the V100, refuses the launch before it starts).

Of what is left, the kernel family (procedural name up to ``_tile``) registered last wins (a pattern's kernels
are registered from the simplest to the most tuned), then its tile: the largest block tile whose grid still
covers every SM, else the one with the most thread blocks. When nothing is left, the layer runs on the dense
kernel chosen by the same rules for the same math units (``units_of``): a *fallback*, with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from math import prod

import numpy as np

from stcsim.config import load_config
from stcsim.kernels import GemmProblem, Kernel, NoKernelError, get_kernel, kernels_for, registry
from stcsim.kernels.ptx_info import opcodes
from stcsim.kernels.run import launch
from stcsim.sim import Engine, LaunchError
from stcsim.sparsity import Pattern, get

TENSOR_CORE = "tensor-core"
CUDA_CORE = "cuda-core"
AUTO = "auto"
UNITS = (TENSOR_CORE, CUDA_CORE)
SELECTORS = (AUTO, *UNITS)
DENSE = "dense"
PROBE_PROBLEM = GemmProblem(64, 64, 64)
_TENSOR_OPCODES = ("wmma", "mma", "wgmma")


@dataclass(frozen=True)
class KernelChoice:
    """The kernel a layer runs, the pattern spec it runs with, and why it is a dense fallback ('' if not)."""

    kernel: str
    pattern: str
    fallback: str = ""


def _entry_body(ptx: str, entry: str) -> str:
    """The text of `.entry entry` from its parameter list to its closing brace."""
    match = re.search(rf"\.entry\s+{re.escape(entry)}\s*\(", ptx)
    if match is None:
        raise ValueError(f"the PTX has no .entry {entry}")
    depth, start = 0, ptx.index("{", match.end())
    for i in range(start, len(ptx)):
        depth += {"{": 1, "}": -1}.get(ptx[i], 0)
        if depth == 0:
            return ptx[start : i + 1]
    raise ValueError(f".entry {entry} has no closing brace")


@cache
def math_units(name: str) -> str:
    """``tensor-core`` when the kernel's entry issues Tensor Core instructions, else ``cuda-core``."""
    kernel = get_kernel(name)
    body = _entry_body(kernel.ptx_path.read_text(), kernel.entry)
    uses_tensor = any(op.split(".")[0] in _TENSOR_OPCODES for op in opcodes(body))
    return TENSOR_CORE if uses_tensor else CUDA_CORE


@cache
def num_sms(config: str) -> int:
    """SMs of a GPU config (``gpu.num_sms``)."""
    return int(load_config(config).flat()["gpu.num_sms"])


@cache
def _probe_engine(config: str) -> Engine:
    """One engine per config for every probe launch of this process."""
    return Engine(config)


@cache
def probe(name: str, pattern_spec: str, sparsity: float, config: str) -> str:
    """Why kernel `name` cannot run on `config` ('' when a 64^3 launch with the pattern is accepted).

    Only a refused launch (LaunchError: no timing for an instruction, too many resources for an SM) counts;
    a probe problem the kernel itself refuses says nothing about the GPU, so it passes.
    """
    kernel, pattern = get_kernel(name), get(pattern_spec)
    if not kernel.can_implement(PROBE_PROBLEM, pattern)[0]:
        return ""
    rng = np.random.default_rng(0)
    p = PROBE_PROBLEM
    weights = rng.uniform(-1.0, 1.0, (p.m, p.k)).astype(np.float32)
    activations = rng.uniform(-1.0, 1.0, (p.k, p.n)).astype(np.float32)
    try:
        launch(kernel, _probe_engine(config), kernel.prepare(weights, activations, pattern, sparsity))
    except LaunchError as err:
        return str(err)
    return ""


def family(name: str) -> str:
    """The kernel family: the procedural name up to its tile (``gemm_mma_f16_f32`` of ``..._tile128x...``)."""
    return name.split("_tile")[0]


def is_glob(selector: str) -> bool:
    """Whether a kernel selector is a shell-style pattern of procedural names (``spmm_extensor_l32_*``)."""
    return any(c in selector for c in "*?[")


def selected(selector: str) -> list[str]:
    """The registered kernels a name or glob selector picks (empty for auto / tensor-core / cuda-core)."""
    if selector in SELECTORS:
        return []
    return [name for name in registry.REGISTRY.names() if fnmatchcase(name, selector)]


def check_selector(selector: str) -> None:
    """ValueError unless `selector` is auto, tensor-core, cuda-core, a registered kernel name or a glob of
    names (a glob that matches nothing today is allowed: its layers run the dense fallback and say so)."""
    if selector not in SELECTORS and not is_glob(selector):
        try:
            get_kernel(selector)
        except KeyError as err:
            raise ValueError(f"--kernel must be one of {', '.join(SELECTORS)}, a kernel name or a glob of "
                             f"names; {err.args[0]}") from None


def _takes(kernel: Kernel, pattern: Pattern) -> str:
    """What `kernel` takes instead of `pattern`: its own `supports` reason without its name, the verb and the
    refused spec ('vw:L=16,K=4,axis=row', 'G a multiple of 32')."""
    reason = kernel.supports(pattern)[1].removeprefix(f"{kernel.procedural_name} ")
    return re.sub(r"^(implements|takes) |,? (not|got) \S+$", "", reason)


def require_kernels(pattern: Pattern) -> None:
    """NoKernelError (one line) when no registered kernel consumes `pattern`, naming what the kernels of its
    family take (or, for a family without kernels, the patterns that have some)."""
    try:
        kernels_for(pattern)
    except NoKernelError:
        pass
    else:
        return
    family = [k for k in registry.REGISTRY if k.pattern_name == pattern.name]
    if family:
        takes = dict.fromkeys(_takes(k, pattern) for k in family)
        have = f"the {pattern.name} kernels take {' | '.join(takes)}"
    else:
        patterns = [name for name in registry.REGISTRY.by_pattern() if name != DENSE]
        have = f"kernels exist for {', '.join(patterns)}"
    raise NoKernelError(f"no kernel implements the sparsity pattern {pattern.spec()!r}: {have}")


def units_of(selector: str) -> str:
    """The math units a selector stands for when its layers run dense: the keyword, or the units of the
    kernels it names when they agree (else auto)."""
    if selector in SELECTORS:
        return selector
    units = {math_units(name) for name in selected(selector)}
    return units.pop() if len(units) == 1 else AUTO


def _pick(candidates: list[Kernel], problem: GemmProblem, config: str) -> Kernel:
    """The last registered family, then its tile by the SM-coverage rule (module docstring)."""
    last = family(candidates[-1].procedural_name)
    tiles = [k for k in candidates if family(k.procedural_name) == last]
    ctas = {k.procedural_name: prod(k.launch_geometry(problem)[0]) for k in tiles}
    covering = [k for k in tiles if ctas[k.procedural_name] >= num_sms(config)]
    if covering:
        return min(covering, key=lambda k: ctas[k.procedural_name])
    return max(tiles, key=lambda k: ctas[k.procedural_name])


def _narrow(
    kernels: tuple[Kernel, ...], selector: str, problem: GemmProblem, pattern: Pattern, sparsity: float,
    config: str,
) -> tuple[list[Kernel], list[str]]:
    """The kernels that pass the three filters, and one reason per kernel that did not."""
    left, reasons = [], []
    for kernel in kernels:
        name = kernel.procedural_name
        if selector in SELECTORS:
            units = math_units(name)
            if selector != AUTO and units != selector:
                reasons.append(f"{name} runs on {units}")
                continue
        elif not fnmatchcase(name, selector):
            continue
        ok, why = kernel.can_implement(problem, pattern)
        if not ok:
            reasons.append(why)
            continue
        refused = probe(name, pattern.spec(), sparsity, config)
        if refused:
            reasons.append(f"{name} cannot run on {config}: {refused}")
            continue
        left.append(kernel)
    if selector == AUTO and any(math_units(k.procedural_name) == TENSOR_CORE for k in left):
        left = [k for k in left if math_units(k.procedural_name) == TENSOR_CORE]
    return left, reasons


def choose_kernel(
    problem: GemmProblem, pattern: Pattern, sparsity: float, config: str, selector: str = AUTO
) -> KernelChoice:
    """The kernel for `problem` with weights in `pattern` on `config` (module docstring), or the dense
    fallback with the reason. ValueError when not even a dense kernel of the selected units runs."""
    spec = pattern.spec()
    try:
        kernels = kernels_for(pattern)
    except NoKernelError as err:
        kernels, reasons = (), [str(err).split(";")[0]]
    else:
        left, reasons = _narrow(kernels, selector, problem, pattern, sparsity, config)
        if left:
            return KernelChoice(_pick(left, problem, config).procedural_name, spec)
    if spec == DENSE:
        raise ValueError(f"no dense kernel ({selector}) runs {problem} on {config}: {'; '.join(reasons)}")
    dense_selector = units_of(selector)
    dense = get(DENSE)
    left, dense_reasons = _narrow(kernels_for(dense), dense_selector, problem, dense, 0.0, config)
    if not left:
        raise ValueError(f"no dense {dense_selector} kernel runs {problem} on {config}: "
                         f"{'; '.join(dense_reasons)}")
    named = selector if selector in SELECTORS else f"{selector!r}"
    why = "; ".join(reasons) if reasons else f"no kernel {named} implements the sparsity pattern {spec!r}"
    return KernelChoice(_pick(left, problem, config).procedural_name, DENSE, why)

"""Which kernel runs a layer: found through the kernel registry, never by name in the harness.

For a layer (a GEMM problem), a sparsity pattern and a GPU config, the candidates are the registry's kernels
for the pattern (``kernels_for``), narrowed to

1. the selector: the math units ``tensor-core`` or ``cuda-core`` (read from the PTX of the kernel's entry:
   an entry with ``wmma``/``mma``/``wgmma`` instructions uses Tensor Cores), ``auto`` (Tensor Cores when a
   Tensor-Core kernel is left, else CUDA cores), a procedural name, or a glob of names
   (``spmm_extensor_l32_*``: a kernel family whose tiles may change);
2. the problem: ``can_implement(problem, pattern)``; a batched problem (``GemmProblem.batch`` > 1: one
   strided-batched launch) only the kernels with a batch dimension (``batched``), a single GEMM only the
   others;
3. the GPU: a 64 x 64 x 64 probe launch on the config (a config without timing for one of the kernel's
   instructions, e.g. ``mma.sync`` on the V100, refuses the launch before it starts).

Of what is left, the kernel family (procedural name up to ``_tile``) registered last wins (a pattern's kernels
are registered from the simplest to the most tuned; a family ranks where its first kernel is registered).
Then, as cuBLAS's heuristics and CUTLASS's profiler do, the family's configuration for this shape (the
default, *per-shape choice*): its block tiles and split-K variants are narrowed by a shape rule
(``shortlist``: tiles whose padding wastes no more than the best tile's plus a quarter; from the largest tile
down to the first whose grid fills every SM; per tile the smallest K split that fills the SMs; and always the
kernel the fixed rule below runs, so the choice is never worse than it), and each one left is simulated on the
config (``estimate_cycles``: the layer itself, or for a large layer two short-K
launches of the same grid extrapolated linearly to K; cycles only, ``Engine.launch(..., values=False)``: the
Tensor Core arithmetic is skipped where its results cannot reach the timing, the same cycles; cached in memory
and on disk by shape, pattern, config, kernel PTX and engine). The fastest wins; the choice records how it
was made and every candidate's cycles. A selector ``fixed:SEL`` keeps the *fixed rule* instead: of the
kernels registered before the per-shape tiles (``per_shape``), the largest block tile whose grid still covers
every SM, else the one with the most thread blocks (``fixed:NAME`` is that one kernel everywhere).

When nothing is left, the layer runs on the dense kernel chosen by the same rules for the same math units
(``units_of``): a *fallback*, with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from functools import cache
from math import prod
from pathlib import Path

import numpy as np

from stcsim.config import GpuConfig, load_config
from stcsim.kernels import GemmProblem, Kernel, NoKernelError, get_kernel, kernels_for, registry
from stcsim.kernels.operands import uniform_float32
from stcsim.kernels.problem import TileShape, ceil_div
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
FIXED = "fixed:"
"""Prefix of a selector that keeps the fixed rule (module docstring): ``fixed:auto``, ``fixed:NAME``."""
PADDING_SLACK = 0.75
"""A tile stays on the shortlist when its useful fraction of the padded M x N is at least this share of the
best tile's (N = 49 on a 128-wide tile uses 38 %, on a 64-wide one 77 %: the 128-wide tile is dropped)."""
NARROW_TILE_FACTOR = 4
"""A kernel without a block tile whose estimate tile is narrower than the family's widest / this is a
candidate up to N = this x its width (the Hopper GEMMs' 8-wide tile: N <= 32)."""
FULL_SIMULATION_MACS = 1 << 28
"""A candidate whose padded M x N x K is at most this is simulated whole; a larger one by two short-K
launches extrapolated to K (``estimate_cycles``)."""
PROBE_STEPS = (8, 16)
"""Block k steps per K slice of the two short-K launches of a large layer's estimate."""
BATCH_PROBE_WAVES = 2
"""Waves of thread blocks (one per SM) the smaller of the two batches of a large batched problem's estimate
fills; the larger is twice that batch."""
CACHE_ENV = "STCSIM_CACHE"
"""Directory of stcsim's disk caches (default ~/.cache/stcsim); candidate cycles go to ``kernel_choice/``."""
TUNED = "per-shape"
"""``KernelChoice.how`` of a per-shape choice among several simulated candidates."""


@dataclass(frozen=True)
class KernelChoice:
    """The kernel a layer runs, the pattern spec it runs with, why it is a dense fallback ('' if not), how it
    was chosen (``fixed`` rule, ``only`` configuration left, ``per-shape`` fastest of the simulated
    candidates) and the candidates simulated with their (estimated) cycles."""

    kernel: str
    pattern: str
    fallback: str = ""
    how: str = "fixed"
    candidates: tuple[tuple[str, float], ...] = ()

    def columns(self) -> dict[str, object]:
        """The choice as result-file columns: ``kernel_choice`` (how), ``kernel_candidates`` (``name=cycles``
        joined by ``;``, fastest first) and ``kernel_estimate`` (the chosen kernel's estimated cycles, NaN
        when nothing was simulated)."""
        ranked = sorted(self.candidates, key=lambda c: c[1])
        estimate = dict(self.candidates).get(self.kernel, float("nan"))
        return {"kernel_choice": self.how,
                "kernel_candidates": ";".join(f"{name}={cycles:.0f}" for name, cycles in ranked),
                "kernel_estimate": estimate}


_BRACE = re.compile(r"[{}]")


def _entry_body(ptx: str, entry: str) -> str:
    """The text of `.entry entry` from its parameter list to its closing brace."""
    match = re.search(rf"\.entry\s+{re.escape(entry)}\s*\(", ptx)
    if match is None:
        raise ValueError(f"the PTX has no .entry {entry}")
    depth, start = 0, ptx.index("{", match.end())
    for brace in _BRACE.finditer(ptx, start):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return ptx[start : brace.end()]
    raise ValueError(f".entry {entry} has no closing brace")


@cache
def math_units(name: str) -> str:
    """``tensor-core`` when the kernel's entry issues Tensor Core instructions, else ``cuda-core``."""
    kernel = get_kernel(name)
    body = _entry_body(kernel.ptx_path.read_text(), kernel.entry)
    uses_tensor = any(op.split(".")[0] in _TENSOR_OPCODES for op in opcodes(body))
    return TENSOR_CORE if uses_tensor else CUDA_CORE


ConfigRef = str | GpuConfig
"""A GPU config as the choice takes it: a spec (``"v100+stc"``, resolved here) or a resolved config (a sweep
point's, overrides included). Candidates are simulated on, and cached by, the resolved config."""


@cache
def _load(spec: str) -> GpuConfig:
    return load_config(spec)


def resolve(config: ConfigRef) -> GpuConfig:
    """The resolved config of a spec (once per process) or the resolved config itself."""
    return config if isinstance(config, GpuConfig) else _load(config)


def config_name(config: ConfigRef) -> str:
    """The config as messages name it: its spec."""
    return resolve(config).spec


def num_sms(config: ConfigRef) -> int:
    """SMs of a GPU config (``gpu.num_sms``)."""
    return int(resolve(config).get("gpu.num_sms"))


@cache
def _probe_engine(config: GpuConfig) -> Engine:
    """One engine per resolved config for every probe launch of this process."""
    return Engine(config)


def probe(name: str, pattern_spec: str, sparsity: float, config: ConfigRef) -> str:
    """Why kernel `name` cannot run on `config` ('' when a 64^3 launch with the pattern is accepted).

    Only a refused launch (LaunchError: no timing for an instruction, too many resources for an SM) counts;
    a probe problem the kernel itself refuses says nothing about the GPU, so it passes.
    """
    return _probe(name, pattern_spec, sparsity, resolve(config))


@cache
def _probe(name: str, pattern_spec: str, sparsity: float, config: GpuConfig) -> str:
    kernel, pattern = get_kernel(name), get(pattern_spec)
    if not kernel.can_implement(PROBE_PROBLEM, pattern)[0]:
        return ""
    rng = np.random.default_rng(0)
    p = PROBE_PROBLEM
    weights = uniform_float32(rng, (p.m, p.k))
    activations = uniform_float32(rng, (p.k, p.n))
    try:
        launch(kernel, _probe_engine(config), kernel.prepare(weights, activations, pattern, sparsity))
    except LaunchError as err:
        return str(err)
    return ""


def family(name: str) -> str:
    """The kernel family: the procedural name up to its tile (``gemm_mma_f16_f32`` of ``..._tile128x...``)."""
    return name.split("_tile")[0]


def family_rank(name: str) -> int:
    """Where the kernel's family is registered: the registry position of its first kernel."""
    names = registry.REGISTRY.names()
    return next(i for i, other in enumerate(names) if family(other) == family(name))


def parse_selector(selector: str) -> tuple[bool, str]:
    """(fixed, the selector without ``fixed:``): whether the fixed rule is asked for, and what it selects."""
    if selector.startswith(FIXED):
        return True, selector.removeprefix(FIXED)
    return False, selector


def is_glob(selector: str) -> bool:
    """Whether a kernel selector is a shell-style pattern of procedural names (``spmm_extensor_l32_*``)."""
    return any(c in parse_selector(selector)[1] for c in "*?[")


def selected(selector: str) -> list[str]:
    """The registered kernels a name or glob selector picks (empty for auto / tensor-core / cuda-core)."""
    base = parse_selector(selector)[1]
    if base in SELECTORS:
        return []
    return [name for name in registry.REGISTRY.names() if fnmatchcase(name, base)]


def named_kernel(selector: str) -> str:
    """The kernel name a selector names (``fixed:NAME`` or ``NAME``), '' for a keyword or a glob."""
    base = parse_selector(selector)[1]
    return "" if base in SELECTORS or is_glob(base) else base


def dense_selector(selector: str) -> str:
    """The selector for a layer that runs dense: itself if it names only dense kernels, else its units (with
    ``fixed:`` kept)."""
    fixed, base = parse_selector(selector)
    names = selected(base)
    if base in SELECTORS or (names and all(get_kernel(n).pattern_name == DENSE for n in names)):
        return selector
    return (FIXED if fixed else "") + units_of(base)


def check_selector(selector: str) -> None:
    """ValueError unless `selector` is auto, tensor-core, cuda-core, a registered kernel name or a glob of
    names, each optionally behind ``fixed:`` (a glob that matches nothing today is allowed: its layers run the
    dense fallback and say so)."""
    selector = parse_selector(selector)[1]
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
    selector = parse_selector(selector)[1]
    if selector in SELECTORS:
        return selector
    units = {math_units(name) for name in selected(selector)}
    return units.pop() if len(units) == 1 else AUTO


def _last_family(candidates: list[Kernel]) -> list[Kernel]:
    """The candidates of the family registered last (``family_rank``)."""
    last = max(family_rank(k.procedural_name) for k in candidates)
    return [k for k in candidates if family_rank(k.procedural_name) == last]


def _pick(candidates: list[Kernel], problem: GemmProblem, config: ConfigRef) -> Kernel:
    """The fixed rule: the last registered family, then, of its kernels registered for it (not
    ``per_shape``), the largest block tile whose grid covers every SM, else the one with most blocks."""
    members = _last_family(candidates)
    tiles = [k for k in members if not getattr(k, "per_shape", False)] or members
    ctas = {k.procedural_name: prod(k.launch_geometry(problem)[0]) for k in tiles}
    covering = [k for k in tiles if ctas[k.procedural_name] >= num_sms(config)]
    if covering:
        return min(covering, key=lambda k: ctas[k.procedural_name])
    return max(tiles, key=lambda k: ctas[k.procedural_name])


def shape_tile(kernel: Kernel) -> TileShape | None:
    """The C tile the estimate pads a problem to: the kernel's ``block_tile``, else its ``estimate_tile``
    (the Hopper GEMMs), else None."""
    return getattr(kernel, "block_tile", None) or getattr(kernel, "estimate_tile", None)


def _padding_use(kernel: Kernel, problem: GemmProblem) -> float:
    """The useful fraction of the M x N the kernel's block tiles cover (1.0 without a block tile)."""
    tile = getattr(kernel, "block_tile", None)
    if tile is None:
        return 1.0
    return (problem.m / (ceil_div(problem.m, tile.m) * tile.m)) * (problem.n / (ceil_div(problem.n, tile.n)
                                                                                 * tile.n))


def _tile_ctas(kernel: Kernel, problem: GemmProblem) -> int:
    """Thread blocks of one K slice: the grid's x * y, times the batch of a batched problem."""
    grid = kernel.launch_geometry(problem)[0]
    return grid[0] * grid[1] * problem.batch


def shortlist(members: list[Kernel], problem: GemmProblem, config: ConfigRef) -> list[Kernel]:
    """The configurations of one family worth simulating for `problem` (module docstring), in registry
    order. Tiles: those whose padding use is at least PADDING_SLACK of the best, from the largest block tile
    down to the first whose grid fills every SM. Of a tile whose grid does not fill the SMs: its smallest
    split that fills them (else its largest), and its unsplit kernel only when the grid fills half the SMs
    or the tile has no split that runs the problem. Kernels without a block tile stay, but for a narrow one
    (``estimate_tile`` narrower than the family's widest / NARROW_TILE_FACTOR) on a problem wider than
    NARROW_TILE_FACTOR times it (A read once per 8 columns of a wide N)."""
    sms = num_sms(config)
    use = {k.procedural_name: _padding_use(k, problem) for k in members}
    best = max(use.values())
    tiled: dict[tuple[int, int], list[Kernel]] = {}
    for k in members:
        tile = getattr(k, "block_tile", None)
        if tile is not None and use[k.procedural_name] >= PADDING_SLACK * best:
            tiled.setdefault((tile.m, tile.n), []).append(k)
    untiled = [k for k in members if getattr(k, "block_tile", None) is None]
    widest = max((t.n for k in untiled if (t := shape_tile(k)) is not None), default=0)

    def narrow_on_wide_n(tile: TileShape | None) -> bool:
        return (tile is not None and tile.n * NARROW_TILE_FACTOR <= widest
                and tile.n * NARROW_TILE_FACTOR < problem.n)

    keep = [k for k in untiled if not narrow_on_wide_n(shape_tile(k))]
    for _, kernels in sorted(tiled.items(), key=lambda item: -item[0][0] * item[0][1]):
        ctas = _tile_ctas(kernels[0], problem)
        by_split = {getattr(k, "splits", 1): k for k in kernels}
        splits = sorted(s for s in by_split if s > 1)
        if ctas >= sms or not splits:
            keep += [by_split[1]] if 1 in by_split else kernels
        else:
            keep.append(by_split[next((s for s in splits if ctas * s >= sms), splits[-1])])
            if ctas * 2 >= sms and 1 in by_split:
                keep.append(by_split[1])
        if ctas >= sms:
            break
    order = {k.procedural_name: i for i, k in enumerate(members)}
    return sorted(keep, key=lambda k: order[k.procedural_name])


def cache_dir() -> Path:
    """Where candidate cycles are kept on disk ($STCSIM_CACHE/kernel_choice, default
    ~/.cache/stcsim/kernel_choice)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "stcsim") / "kernel_choice"


def _cache_key(kernel: Kernel, problem: GemmProblem, pattern: Pattern, sparsity: float,
               config: ConfigRef) -> str:
    """Everything a candidate's simulated cycles depend on, hashed: kernel, its PTX, shape, pattern,
    sparsity, resolved config, engine build."""
    from stcsim.harness.jobs import engine_version, file_digest  # jobs imports this module

    shape = [problem.m, problem.n, problem.k] + ([problem.batch] if problem.batch > 1 else [])
    facts = {"kernel": kernel.procedural_name, "ptx": file_digest(kernel.ptx_path)[:16],
             "shape": shape, "pattern": pattern.spec(), "sparsity": sparsity,
             "config": resolve(config).digest(), "engine": engine_version()}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:32]


_simulated: dict[str, float] = {}
_wanted: list[Simulation] | None = None
"""While ``collecting``: the candidate launches a choice asked for that no cache holds yet."""


def launch_cost(kernel: str, problem: GemmProblem) -> int:
    """What simulating one launch of `kernel` on `problem` costs, roughly: threads launched times the K each
    thread block reduces (padded tiles included: a 32000 x 1 x 4096 layer runs 250 whole 128-row tiles).
    Only an order: the costliest launches go to the workers first."""
    grid, block, _ = get_kernel(kernel).launch_geometry(problem)
    return prod(grid) * prod(block) * ceil_div(problem.k, getattr(get_kernel(kernel), "splits", 1))


@dataclass(frozen=True)
class Simulation:
    """One candidate launch of ``simulate_cycles``, by name (picklable: it runs in a worker process)."""

    kernel: str
    problem: GemmProblem
    pattern: str
    sparsity: float
    config: ConfigRef

    def cost(self) -> int:
        """What simulating it costs, roughly (``launch_cost``)."""
        return launch_cost(self.kernel, self.problem)

    def cycles(self) -> float:
        """``simulate_cycles`` of this launch (from the caches when they hold it)."""
        return simulate_cycles(get_kernel(self.kernel), self.problem, get(self.pattern), self.sparsity,
                               self.config)


@contextmanager
def collecting() -> Iterator[list[Simulation]]:
    """Within the block, ``simulate_cycles`` simulates nothing: each launch that no cache holds is added to
    the yielded list (once) and stands as NaN cycles, so a choice made in the block lists the launches it
    needs without running them (``simulate_all`` runs them on several workers; the choice made again after
    that finds every one cached). Choices made in the block are placeholders: discard them."""
    global _wanted
    _wanted, outer = [], _wanted
    try:
        yield _wanted
    finally:
        _wanted = outer


def remember(simulation: Simulation, cycles: float) -> None:
    """Keep the cycles a worker simulated (it wrote them to the disk cache too) in this process's cache."""
    s = simulation
    _simulated[_cache_key(get_kernel(s.kernel), s.problem, get(s.pattern), s.sparsity, s.config)] = cycles


def simulate_item(item: tuple[int, Simulation]) -> tuple[int, float | None]:
    """An executor's function (picklable): the cycles of one listed launch, None when it raised (the choice
    then simulates it again in its own process and raises there, as without ``presimulate``)."""
    index, simulation = item
    try:
        return index, simulation.cycles()
    except Exception:  # noqa: BLE001 - reported where the choice runs it again
        return index, None


def simulate_all(wanted: list[Simulation], runner: object) -> None:
    """Simulate the listed launches on an executor's workers (``map_unordered``), the costliest first, and
    keep their cycles here: the launches of a whole plan's kernel choices at once, in parallel."""
    order = sorted(range(len(wanted)), key=lambda i: -wanted[i].cost())
    for index, cycles in runner.map_unordered(simulate_item, ((i, wanted[i]) for i in order)):  # type: ignore[attr-defined]
        if cycles is not None:
            remember(wanted[index], cycles)


def simulate_cycles(kernel: Kernel, problem: GemmProblem, pattern: Pattern, sparsity: float,
                    config: ConfigRef) -> float:
    """Simulated cycles (``gpu_sim_cycle``) of one launch of `kernel` on `problem` with seeded random
    operands (weights pruned to `sparsity` in `pattern` by the kernel), cached in memory and on disk
    (``collecting``: NaN for a launch neither cache holds, which is listed instead of simulated)."""
    key = _cache_key(kernel, problem, pattern, sparsity, config)
    if key in _simulated:
        return _simulated[key]
    path = cache_dir() / f"{key}.json"
    try:
        cycles = float(json.loads(path.read_text())["cycles"])
    except (OSError, ValueError, KeyError):
        if _wanted is not None:
            wanted = Simulation(kernel.procedural_name, problem, pattern.spec(), sparsity, config)
            if wanted not in _wanted:
                _wanted.append(wanted)
            return float("nan")
        lead = (problem.batch,) if problem.batch > 1 else ()
        rng = np.random.default_rng([problem.m, problem.n, problem.k, *lead])
        weights = uniform_float32(rng, (*lead, problem.m, problem.k))
        activations = uniform_float32(rng, (*lead, problem.k, problem.n))
        operands = kernel.prepare(weights, activations, pattern, sparsity)
        # cycles only: the Tensor Core arithmetic is skipped where its results cannot reach the timing (the
        # same cycles, engine/func/value_flow.h); the outputs are not read
        cycles = float(launch(kernel, Engine(resolve(config)), operands, values=False)[1]["gpu_sim_cycle"])
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"kernel": kernel.procedural_name, "shape": str(problem),
                                       "config": config_name(config), "cycles": cycles}))
            tmp.replace(path)
        except OSError:
            pass  # a read-only cache only costs the simulation again
    _simulated[key] = cycles
    return cycles


def estimate_cycles(kernel: Kernel, problem: GemmProblem, pattern: Pattern, sparsity: float,
                    config: ConfigRef) -> float:
    """Simulated cycles of `kernel` on `problem`: the launch itself when its padded M x N x K is at most
    FULL_SIMULATION_MACS, else two launches of the same grid with PROBE_STEPS block k steps per K slice,
    extrapolated linearly to the problem's steps per slice (the grid, its waves, the prologue and the
    epilogue, split-K's atomic adds included, are simulated; only the main loop's length is scaled). A step
    is ``estimate_depth`` columns of K where the kernel says (a sparse kernel whose k step covers more or
    other columns than its tile's k: vector-wise BK / K vectors of 16, the CSR SpMM's non-zeros), else its
    block tile's k. The padding is that of the kernel's ``block_tile``, or of its ``estimate_tile`` where it
    has no block tile (the wgmma GEMMs: a 32000 x 1 x 4096 layer runs 128 x 128 tiles, 16.8 G MACs). A
    batched problem whose batch elements fill more than 2 x BATCH_PROBE_WAVES waves of the
    SMs is estimated from two batches (the fewest that fill BATCH_PROBE_WAVES waves, and twice as many)
    extrapolated linearly in waves (thread blocks / SMs, rounded up) to its batch."""
    if problem.batch > 1:
        per_gemm = _tile_ctas(kernel, replace(problem, batch=1)) * getattr(kernel, "splits", 1)
        few = ceil_div(BATCH_PROBE_WAVES * num_sms(config), per_gemm)
        if problem.batch > 2 * few:  # many waves of batch elements: two batches extrapolated to the batch

            def waves(batch: int) -> int:
                return ceil_div(batch * per_gemm, num_sms(config))

            at = [estimate_cycles(kernel, replace(problem, batch=b), pattern, sparsity, config)
                  for b in (few, 2 * few)]
            steps = (waves(problem.batch) - waves(few)) / (waves(2 * few) - waves(few))
            return at[0] + (at[1] - at[0]) * steps
    tile = shape_tile(kernel)
    depth = getattr(kernel, "estimate_depth", None) or (tile.k if tile is not None else 64)
    splits = getattr(kernel, "splits", 1)
    rows = ceil_div(problem.m, tile.m) * tile.m if tile is not None else problem.m
    cols = ceil_div(problem.n, tile.n) * tile.n if tile is not None else problem.n
    steps = ceil_div(ceil_div(problem.k, splits), depth)
    short, long = PROBE_STEPS
    if rows * cols * problem.k * problem.batch <= FULL_SIMULATION_MACS or steps <= long:
        return simulate_cycles(kernel, problem, pattern, sparsity, config)
    at = [simulate_cycles(kernel, GemmProblem(problem.m, problem.n, s * depth * splits, problem.batch),
                          pattern, sparsity, config) for s in (short, long)]
    return at[0] + (at[1] - at[0]) * (steps - short) / (long - short)


def _tune(candidates: list[Kernel], problem: GemmProblem, pattern: Pattern, sparsity: float,
          config: ConfigRef) -> tuple[Kernel, str, tuple[tuple[str, float], ...]]:
    """The per-shape choice (module docstring): (kernel, how, simulated candidates with their cycles)."""
    members = _last_family(candidates)
    if len(members) == 1:
        return members[0], "only", ()
    listed = shortlist(members, problem, config)
    fixed = _pick(members, problem, config)
    if fixed not in listed:  # the fixed rule's kernel is always a candidate: per shape is never worse
        order = {k.procedural_name: i for i, k in enumerate(members)}
        listed = sorted([*listed, fixed], key=lambda k: order[k.procedural_name])
    if len(listed) == 1:
        return listed[0], "only", ()
    cycles = tuple((k.procedural_name, estimate_cycles(k, problem, pattern, sparsity, config))
                   for k in listed)
    best = min(range(len(listed)), key=lambda i: cycles[i][1])
    return listed[best], TUNED, cycles


def _choose(left: list[Kernel], problem: GemmProblem, pattern: Pattern, sparsity: float, config: ConfigRef,
            fixed: bool, spec: str, fallback: str = "") -> KernelChoice:
    """The choice among the kernels left: the fixed rule, or the per-shape one."""
    if fixed:
        return KernelChoice(_pick(left, problem, config).procedural_name, spec, fallback)
    kernel, how, cycles = _tune(left, problem, pattern, sparsity, config)
    return KernelChoice(kernel.procedural_name, spec, fallback, how, cycles)


def _narrow(
    kernels: tuple[Kernel, ...], selector: str, problem: GemmProblem, pattern: Pattern, sparsity: float,
    config: ConfigRef,
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
        if getattr(kernel, "batched", False) != (problem.batch > 1):  # batched problems take batched kernels
            if problem.batch > 1:
                reasons.append(f"{name} has no batch dimension")
            continue
        ok, why = kernel.can_implement(problem, pattern)
        if not ok:
            reasons.append(why)
            continue
        refused = probe(name, pattern.spec(), sparsity, config)
        if refused:
            reasons.append(f"{name} cannot run on {config_name(config)}: {refused}")
            continue
        left.append(kernel)
    if selector == AUTO and any(math_units(k.procedural_name) == TENSOR_CORE for k in left):
        left = [k for k in left if math_units(k.procedural_name) == TENSOR_CORE]
    return left, reasons


def choose_kernel(
    problem: GemmProblem, pattern: Pattern, sparsity: float, config: ConfigRef, selector: str = AUTO
) -> KernelChoice:
    """The kernel for `problem` with weights in `pattern` on `config` (module docstring), or the dense
    fallback with the reason. ValueError when not even a dense kernel of the selected units runs."""
    config = resolve(config)
    spec = pattern.spec()
    fixed, base = parse_selector(selector)
    try:
        kernels = kernels_for(pattern)
    except NoKernelError as err:
        kernels, reasons = (), [str(err).split(";")[0]]
    else:
        left, reasons = _narrow(kernels, base, problem, pattern, sparsity, config)
        if left:
            return _choose(left, problem, pattern, sparsity, config, fixed, spec)
    if spec == DENSE:
        raise ValueError(f"no dense kernel ({selector}) runs {problem} on {config_name(config)}: "
                         f"{'; '.join(reasons)}")
    dense_units = units_of(base)
    dense = get(DENSE)
    left, dense_reasons = _narrow(kernels_for(dense), dense_units, problem, dense, 0.0, config)
    if not left:
        raise ValueError(f"no dense {dense_units} kernel runs {problem} on {config_name(config)}: "
                         f"{'; '.join(dense_reasons)}")
    named = base if base in SELECTORS else f"{base!r}"
    why = "; ".join(reasons) if reasons else f"no kernel {named} implements the sparsity pattern {spec!r}"
    return _choose(left, problem, dense, 0.0, config, fixed, DENSE, why)

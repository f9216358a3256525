"""The plan of a network run: one job per (network, unique layer shape, variant), each with its cache key.

A *variant* is what a sweep varies: sparsity pattern and target sparsity, GPU config and kernel selector.
A network's layers are deduplicated by GEMM shape (``unique_gemm_shapes``; depthwise convs, which are not
GEMMs, by their per-channel shape): each job simulates one launch of the first layer of its shape (its own
weights, pruned) and counts ``repeat`` times (the launches of that shape in one forward pass) in the network
total. A batched layer (``Layer.batched``: attention's score and context GEMMs of one layer) runs as one
strided-batched launch of its ``launch_batch`` GEMMs where a kernel with a batch dimension runs on the config
(``launch`` = ``batched``, ``repeat`` = its launches); else, and with the network's ``launch=serial``,
one GEMM per launch (``serial``, ``repeat`` = its GEMMs; ``launch_note`` says why when the batched form was
asked for). ``launch_batch`` x ``repeat`` is always the shape's GEMMs. Planning decides, before anything
is simulated, what every job runs: the pruning decision (``stcsim.workloads.pruning``), the kernel
(``kernel_choice``), or the dense fallback and why. The key hashes everything that determines a job's
result, so a re-run simulates only the jobs whose key is not in the results file yet (docs/harness.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from stcsim.config import load_config
from stcsim.config.loader import GpuConfig
from stcsim.harness.kernel_choice import (
    AUTO,
    DENSE,
    KernelChoice,
    check_selector,
    choose_kernel,
    dense_selector,
    launch_cost,
    named_kernel,
    units_of,
)
from stcsim.kernels import GemmProblem, get_kernel
from stcsim.kernels.problem import round_up
from stcsim.sparsity import Pattern, get
from stcsim.sparsity.nm import NM
from stcsim.sparsity.policy import DEFAULT_POLICY
from stcsim.sparsity.vectorwise import VectorWise
from stcsim.workloads import Layer, Network, get_network, load_weights, unique_gemm_shapes
from stcsim.workloads.pruning import layer_decision

DEFAULT_CHECK_LIMIT = 2**28
"""Layers with more multiply-accumulates than this are checked on a sample of output columns."""
CHECK_SAMPLE_COLUMNS = 128
DEPTHWISE = "depthwise conv is not a GEMM (M = 1 per channel)"
TILE = 64
"""Block tile M and N of the common kernels: what a layer's M and N are rounded up to in its cost proxy."""
TILE_OVERHEAD_K = 64
"""Per-tile work outside the main loop (setup, epilogue), as reduction steps, in the cost proxy."""
BATCHED, SERIAL, SINGLE = "batched", "serial", "single"
"""How a job's GEMMs launch (the ``launch`` column): one strided-batched launch of ``launch_batch`` GEMMs, one
launch per GEMM of a layer of several activation x activation GEMMs (per head), or a layer of one GEMM per
execution."""


@dataclass(frozen=True)
class Variant:
    """One point of a sweep: pattern spec (canonical), target sparsity, GPU config, kernel selector, label."""

    pattern: str
    sparsity: float
    config: str
    kernel: str = AUTO
    label: str = ""
    # The resolved config the point runs on (``make`` resolves it once; not part of the point's identity,
    # which its spec and digest already are): its engines and its results' config digest come from it.
    gpu: GpuConfig | None = field(default=None, compare=False, repr=False)

    def resolved(self) -> GpuConfig:
        """The point's resolved config (resolving `config` where the point was built without ``make``)."""
        return self.gpu if self.gpu is not None else load_config(self.config)

    def config_hash(self) -> str:
        """The resolved config's digest (``GpuConfig.digest``: every key, overlays applied)."""
        return self.gpu.digest() if self.gpu is not None else config_digest(self.config)

    @classmethod
    def make(cls, pattern: str, sparsity: float, config: str, kernel: str = AUTO, label: str = "") -> Variant:
        """A variant from user input: the pattern spec canonicalised (ValueError if unknown), sparsity 0 for
        dense, the kernel selector checked; the label defaults to ``pattern[@sparsity]/config[/kernel]``."""
        spec = get(pattern).spec()
        check_selector(kernel)
        value = 0.0 if spec == DENSE else float(sparsity)
        if not 0.0 <= value < 1.0:
            raise ValueError(f"sparsity must be in [0, 1), got {sparsity!r}")
        gpu = load_config(config)
        default = f"{spec}@{value:g}/{config}" if spec != DENSE else f"{spec}/{config}"
        default += "" if kernel == AUTO else f"/{kernel}"
        return cls(spec, value, config, kernel, label or default, gpu)


def fixed_sparsity(pattern: Pattern) -> float | None:
    """The sparsity a pattern's own ratio sets: ``1 - N/M`` for N:M (2:4: 0.5), ``1 - K/L`` for vector-wise
    with ``K`` set (``vw:L=16,K=4``: 0.75); None for patterns that take any target."""
    if isinstance(pattern, NM):
        return 1.0 - pattern.N / pattern.M
    if isinstance(pattern, VectorWise) and pattern.K is not None:
        return 1.0 - pattern.K / pattern.L
    return None


def extra_zeros(variant: Variant) -> str:
    """Why the variant's sparsity is above its pattern's own ('' when it is not): the weights pruned beyond
    the pattern's ratio stay in the format as kept zeros, so the kernel does the work of the pattern's own
    sparsity (docs/sparsity.md)."""
    own = fixed_sparsity(get(variant.pattern))
    if own is None or variant.sparsity <= own + 1e-9:
        return ""
    return (f"{variant.pattern} at sparsity {variant.sparsity:g}: the pattern's own sparsity is {own:g}; "
            f"the other {variant.sparsity - own:g} of the weights are pruned as extra zeros, stored and "
            f"multiplied as kept values (the work of {own:g}); without --sparsity it runs at {own:g}")


@dataclass(frozen=True)
class WeightSource:
    """Where a layer's weights come from: seeded Kaiming-normal (``seed``), or a file (``path``, digest)."""

    seed: int = 0
    path: str = ""
    digest: str = ""
    prefix: str = ""

    @classmethod
    def from_file(cls, path: str, prefix: str = "") -> WeightSource:
        """A weights file (.npz or a PyTorch state_dict), identified by its SHA-256."""
        return cls(path=str(Path(path).resolve()), digest=file_digest(path), prefix=prefix)

    def describe(self) -> str:
        """``seed=N`` or ``<file name> sha256:<first 12 hex digits>``."""
        return f"{Path(self.path).name} sha256:{self.digest[:12]}" if self.path else f"seed={self.seed}"

    def check(self, net: Network) -> None:
        """Read the file once and match it to ``net`` (WeightFileError naming missing/mis-shaped tensors)."""
        if self.path:
            load_weights(net, self.path, self.prefix)


@dataclass(frozen=True)
class LayerJob:
    """Everything one row of the results needs: what to simulate and how (module docstring)."""

    network: str
    batch: int
    index: int
    layer: Layer
    layer_names: tuple[str, ...]
    repeat: int
    group_layers: int
    variant: Variant
    weights: WeightSource
    prune_action: str
    prune_reason: str
    run_shape: tuple[int, int]
    choice: KernelChoice
    fallback: str
    check: bool = True
    check_limit: int = DEFAULT_CHECK_LIMIT
    versions: dict[str, str] = field(default_factory=dict)
    sample: float = 0.0  # > 0: sampled simulation with this wave tolerance (0: full detail)
    launch_batch: int = 1  # GEMMs of one simulated launch (> 1: strided-batched; repeat counts launches)
    launch_note: str = ""  # why a batched layer runs one GEMM per launch ('' otherwise)

    @property
    def launch_form(self) -> str:
        """``batched``, ``serial`` or ``single`` (BATCHED)."""
        if self.launch_batch > 1:
            return BATCHED
        return SERIAL if self.layer.groups > 1 and not self.layer.has_weights else SINGLE

    @property
    def identity(self) -> tuple[str, int, str, str]:
        """(network, batch, layer, variant label): the row a job writes; a re-run replaces it."""
        return (self.network, self.batch, self.layer.name, self.variant.label)

    def cost(self) -> int:
        """What simulating the job costs, roughly (``kernel_choice.launch_cost`` of its launch): the executor
        starts the costliest jobs first, so that a short one, not a long one, ends the run."""
        problem = GemmProblem(self.layer.m, self.layer.n, self.layer.k, self.launch_batch)
        return launch_cost(self.choice.kernel, problem)

    def key(self) -> str:
        """SHA-256 (hex, 16 digits) of everything that determines the result (module docstring)."""
        facts = {
            "network": self.network, "batch": self.batch, "layer": self.layer.name,
            "shape": [self.layer.m, self.layer.n, self.layer.k], "weights": self.weights.describe(),
            "pattern": self.variant.pattern, "sparsity": self.variant.sparsity, "prune": self.prune_action,
            "run_pattern": self.choice.pattern, "kernel": self.choice.kernel,
            "check": [self.check, self.check_limit], **self.versions,
            **({"sample": self.sample} if self.sample else {}),
            **({"launch_batch": self.launch_batch} if self.launch_batch > 1 else {}),
        }
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@cache
def engine_version() -> str:
    """stcsim's version plus the digest of the compiled engine: a rebuilt engine invalidates cached rows."""
    import stcsim
    from stcsim import _engine

    return f"{stcsim.__version__}+{file_digest(_engine.__file__)[:12]}"


@cache
def config_digest(config: str) -> str:
    """Digest of the resolved config (every key, overlays applied; GpuConfig.digest): an edited YAML changes
    it."""
    return load_config(config).digest()


@cache
def kernel_digest(name: str) -> str:
    """Digest of the PTX file that holds the kernel: recompiled PTX invalidates that kernel's rows."""
    return file_digest(get_kernel(name).ptx_path)[:16]


@dataclass(frozen=True)
class ShapeGroup:
    """The layers of a network that share one GEMM shape: the first of them, all names, GEMMs per pass."""

    index: int
    layer: Layer
    names: tuple[str, ...]
    repeat: int

    @property
    def work(self) -> int:
        """``simulation_work`` of the layer."""
        return simulation_work(self.layer)


def simulation_work(layer: Layer) -> int:
    """A proxy of what simulating one GEMM of the layer costs: M and N rounded up to whole 64 x 64 tiles (a
    batch-1 fully connected layer costs as much as 64 columns) times K plus a per-tile overhead of 64 steps
    (a K = 27 layer is not 10x cheaper than a K = 270 one)."""
    return round_up(layer.m, TILE) * round_up(layer.n, TILE) * (layer.k + TILE_OVERHEAD_K)


def shape_groups(net: Network) -> list[ShapeGroup]:
    """Unique GEMM shapes (``unique_gemm_shapes``) and depthwise layers grouped by shape, in network order."""
    position = {layer.name: i for i, layer in enumerate(net.layers)}
    found = [(net.layer(s.layers[0]), s.layers, s.count) for s in unique_gemm_shapes(net)]
    depthwise: dict[tuple[int, int, int], list[Layer]] = {}
    for layer in net.layers:
        if not layer.is_gemm:
            depthwise.setdefault((layer.m, layer.n, layer.k), []).append(layer)
    found += [(ls[0], tuple(x.name for x in ls), sum(x.gemm_count for x in ls)) for ls in depthwise.values()]
    found.sort(key=lambda item: position[item[0].name])
    return [ShapeGroup(i, layer, names, count) for i, (layer, names, count) in enumerate(found)]


def smallest_groups(groups: Sequence[ShapeGroup], count: int) -> list[ShapeGroup]:
    """The ``count`` weight GEMM shapes cheapest to simulate (``work``; others after them), in network
    order."""
    ranked = sorted(groups, key=lambda g: (not g.layer.prunable, g.work, g.index))[:count]
    return sorted(ranked, key=lambda g: g.index)


def decide_launch(layer: Layer, variant: Variant) -> tuple[int, str, tuple]:
    """(GEMMs per launch, why a batched layer runs one GEMM per launch, ``_decide``'s tuple): a batched
    activation x activation layer takes a kernel with a batch dimension for its ``launch_batch`` GEMMs where
    one runs on the config, else (and every other layer) one GEMM per launch."""
    batch = layer.launch_batch
    if batch == 1:
        return 1, "", _decide(layer, variant)
    if layer.has_weights:
        return 1, "a weight per batch element: the weight GEMMs' kernels have no batch dimension", _decide(
            layer, variant)
    try:
        return batch, "", _decide(layer, variant, batch)
    except ValueError:
        units = units_of(dense_selector(variant.kernel))
        note = (f"no {units} kernel with a batch dimension runs on {variant.config}: one launch per GEMM "
                "(serial)")
        return 1, note, _decide(layer, variant)


def _decide(layer: Layer, variant: Variant, batch: int = 1) -> tuple:
    """(prune action, prune reason, run shape, kernel choice, fallback reason) of one layer and variant,
    under the default pruning policy (docs/sparsity.md); the GEMM is per channel for a depthwise conv;
    `batch` > 1: a strided-batched launch of that many GEMMs (an activation x activation layer)."""
    pattern = get(variant.pattern)
    problem = GemmProblem(layer.m, layer.n, layer.k, batch)
    decision = layer_decision(layer, pattern, DEFAULT_POLICY)
    base = (decision.action, decision.reason, decision.run_shape)
    if not layer.is_gemm:
        choice = choose_kernel(problem, get(DENSE), 0.0, variant.resolved(), _dense_selector(variant.kernel))
        why = (f"{DEPTHWISE}; no kernel of the set runs it as a stencil: dense fallback, {layer.groups} "
               "GEMMs of M = 1 (one per channel)")
        return (*base, choice, why)
    if decision.action == DENSE:
        choice = choose_kernel(problem, get(DENSE), 0.0, variant.resolved(), _dense_selector(variant.kernel))
        return (*base, choice, "" if variant.pattern == DENSE else decision.reason)
    choice = choose_kernel(problem, pattern, variant.sparsity, variant.resolved(), variant.kernel)
    return (*base, choice, choice.fallback)


def _dense_selector(selector: str) -> str:
    """The selector for a layer that runs dense (``kernel_choice.dense_selector``)."""
    return dense_selector(selector)


def check_variant(variant: Variant) -> None:
    """ValueError when a named kernel does not consume the variant's pattern (user error, not a fallback)."""
    name = named_kernel(variant.kernel)
    if not name:
        return
    ok, why = get_kernel(name).supports(get(variant.pattern))
    if not ok:
        raise ValueError(f"--kernel {variant.kernel}: {why}")


def plan_network(
    network: str,
    variants: Iterable[Variant],
    batch: int = 1,
    weights: WeightSource | None = None,
    max_layers: int | None = None,
    check: bool = True,
    check_limit: int = DEFAULT_CHECK_LIMIT,
    sample: float = 0.0,
) -> list[LayerJob]:
    """Every job of one network: its shape groups (or the ``max_layers`` cheapest) times the variants
    (`sample` > 0: each simulated with sampling at that tolerance)."""
    net = get_network(network, batch=batch)
    source = weights or WeightSource()
    source.check(net)
    groups = shape_groups(net)
    if max_layers is not None:
        groups = smallest_groups(groups, max_layers)
    jobs = []
    for variant in variants:
        check_variant(variant)
        versions = {"engine": engine_version(), "config": variant.config_hash()}
        for g in groups:
            per_launch, note, decided = decide_launch(g.layer, variant)
            action, reason, run_shape, choice, fallback = decided
            jobs.append(LayerJob(
                network, batch, g.index, g.layer, g.names, g.repeat // per_launch, len(groups), variant,
                source, action, reason, run_shape, choice, fallback, check, check_limit,
                {**versions, "kernel_ptx": kernel_digest(choice.kernel)}, sample, per_launch, note,
            ))
    return jobs


def describe(job: LayerJob) -> dict[str, object]:
    """The job's plan as flat CSV columns (everything but the launch's results)."""
    v = job.variant
    return {
        "row_type": "layer", "network": job.network, "batch": job.batch, "layer_index": job.index,
        "layer": job.layer.name, "layers": " ".join(job.layer_names), "kind": job.layer.kind.value,
        "variant": v.label, "pattern": v.pattern, "sparsity": v.sparsity, "config": v.config,
        "kernel_selector": v.kernel, "m": job.layer.m, "n": job.layer.n, "k": job.layer.k,
        "repeat": job.repeat, "macs": job.layer.m * job.layer.n * job.layer.k * job.launch_batch * job.repeat,
        "launch": job.launch_form, "launch_batch": job.launch_batch, "launch_note": job.launch_note,
        "group_layers": job.group_layers, "prune_action": job.prune_action, "prune_reason": job.prune_reason,
        "run_m": job.run_shape[0], "run_k": job.run_shape[1], "run_pattern": job.choice.pattern,
        "kernel": job.choice.kernel, **job.choice.columns(), "fallback": bool(job.fallback),
        "fallback_reason": job.fallback,
        "weights": job.weights.describe(), "engine_version": job.versions["engine"],
        "config_hash": job.versions["config"], "kernel_hash": job.versions["kernel_ptx"], "key": job.key(),
    }

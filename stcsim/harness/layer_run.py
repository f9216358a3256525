"""Run one job of a network run: prune the layer's weights, prepare the kernel's operands, simulate, check.

The weights are the layer's own (seeded Kaiming-normal, or from the weights file; group 0 of a grouped
conv), the activations uniform in [-1, 1) seeded by the layer name. A sparse kernel gets the dense weights
and prunes and encodes them itself (``Kernel.prepare``); a dense fallback gets the pruned weights (``W *
mask``), so it computes the pruned layer. The output is checked against the kernel's float64 reference
(through the pattern's decode): whole for layers up to ``check_limit`` MACs, else on a seeded sample of
output columns (the ``check`` column says which). A layer checked on a sample of columns (or not checked) is
timed by a cycles-only launch (``Engine.launch(..., values=False)``: the Tensor Core arithmetic skipped where
it cannot reach the timing, the same stats); where that skipped the arithmetic (``mma_values_skipped``), the
sampled columns are run apart, functionally, on the kernel's operands for those columns and checked (``check``
ends in "run apart"). Returns the row: the plan's columns, the check, host seconds, every stat of the launch
(and, for a generated kernel, how its PTX was generated: codegen_*) and the launch in physical units
(``stcsim.harness.units``): ``time_us`` at the config's clock, ``tflops`` (2 x M x N x K over that time),
``peak_tflops`` of the kernel's ``math_units`` on the config and ``pct_peak``.
"""

from __future__ import annotations

import time
import zlib

import numpy as np

from stcsim.harness import units
from stcsim.harness.jobs import CHECK_SAMPLE_COLUMNS, LayerJob, describe
from stcsim.harness.kernel_choice import math_units
from stcsim.kernels import GemmProblem, Kernel, Operands, get_kernel, relative_error
from stcsim.kernels.operands import uniform_float32
from stcsim.kernels.protocol import GeneratedKernel, ReusesWeights
from stcsim.kernels.run import launch
from stcsim.sim import Engine
from stcsim.sparsity import get, prune_gemm
from stcsim.sparsity.policy import DEFAULT_POLICY
from stcsim.workloads import gemm_operand, get_network, load_weights
from stcsim.workloads.weights import kaiming_normal

CONFIG_STAT = "config"


def layer_rng(job: LayerJob, stream: str) -> np.random.Generator:
    """A generator seeded by the weight seed, the layer name and a stream name (reproducible per layer)."""
    streams = [job.weights.seed, zlib.crc32(job.layer.name.encode()), zlib.crc32(stream.encode())]
    return np.random.default_rng(streams)


def _lead(job: LayerJob) -> tuple[int, ...]:
    """The leading batch dimension of a strided-batched job's operands (none for one GEMM per launch)."""
    return (job.launch_batch,) if job.launch_batch > 1 else ()


def layer_weights(job: LayerJob) -> np.ndarray:
    """The M x K A operand of the job's GEMM: group 0 of the layer's weights, or an activation for layers
    without weights (attention score/context; batch x M x K for a strided-batched launch)."""
    layer = job.layer
    if not layer.has_weights:
        shape = (*_lead(job), layer.m, layer.k)
        return uniform_float32(layer_rng(job, "a-operand"), shape)
    if job.weights.path:
        net = get_network(job.network, batch=job.batch)
        weight = load_weights(net, job.weights.path, job.weights.prefix)[layer.name]
    else:
        weight = kaiming_normal(layer, job.weights.seed)
    return np.ascontiguousarray(gemm_operand(layer, weight)[0])


def activations(job: LayerJob) -> np.ndarray:
    """The K x N B operand (batch x K x N for a strided-batched launch): uniform in [-1, 1), float32."""
    shape = (*_lead(job), job.layer.k, job.layer.n)
    return uniform_float32(layer_rng(job, "activations"), shape)


def prepared(job: LayerJob, kernel: Kernel, weights: np.ndarray, x: np.ndarray,
             density: bool = True) -> tuple[Operands, float]:
    """The kernel's operands and the kept fraction of the weights (1.0 for a layer that is not pruned; NaN
    without `density` where only the kernel's own pruning is needed: the check's sample of columns)."""
    pattern = get(job.variant.pattern)
    if job.prune_action == "dense":
        return kernel.prepare(weights, x, get("dense"), 0.0), 1.0
    if job.choice.pattern != "dense" and not density:
        return kernel.prepare(weights, x, pattern, job.variant.sparsity), float("nan")
    pruned = prune_gemm(weights, pattern, job.variant.sparsity, DEFAULT_POLICY, encode=False)
    if job.choice.pattern == "dense":
        masked = np.where(pruned.mask, weights, np.float32(0))
        return kernel.prepare(masked, x, get("dense"), 0.0), pruned.density
    return kernel.prepare(weights, x, pattern, job.variant.sparsity), pruned.density


def checks_all_columns(job: LayerJob, p: GemmProblem) -> bool:
    """Whether the check compares the whole output (else a sample of columns, or nothing)."""
    return job.check and (p.m * p.n * p.k * p.batch <= job.check_limit or p.n <= CHECK_SAMPLE_COLUMNS)


def check_output(job: LayerJob, kernel: Kernel, operands: Operands, weights: np.ndarray, x: np.ndarray,
                 result: np.ndarray | None) -> dict[str, object]:
    """Compare with the kernel's reference: whole, or on a sample of columns for large layers (`result`
    None: the timed launch computed cycles only, so the sampled columns run apart, functionally)."""
    if not job.check:
        return {"check": "off", "rel_error": np.nan, "tolerance": kernel.tolerance, "check_ok": True}
    p = operands.problem
    if checks_all_columns(job, p):
        assert result is not None, "a whole-output check needs the timed launch's values"
        err = relative_error(result, kernel.reference(operands))
        how = "full"
    else:  # the same columns of every batch element
        cols = np.sort(layer_rng(job, "check").choice(p.n, CHECK_SAMPLE_COLUMNS, replace=False))
        x_cols = np.ascontiguousarray(x[..., cols])
        if isinstance(kernel, ReusesWeights):  # the weights as the timed launch had them, not prepared again
            sample = kernel.with_activations(operands, x_cols)
        else:
            sample = prepared(job, kernel, weights, x_cols, density=False)[0]
        how = f"sampled: {CHECK_SAMPLE_COLUMNS} of {p.n} columns"
        if result is None:
            result_cols = launch(kernel, Engine(job.variant.resolved()), sample, timing=False)[0]
            how += ", run apart"
        else:
            result_cols = result[..., cols]
        err = relative_error(result_cols, kernel.reference(sample))
    ok = bool(err < kernel.tolerance)
    return {"check": how, "rel_error": err, "tolerance": kernel.tolerance, "check_ok": ok}


def run_job(job: LayerJob) -> dict[str, object]:
    """Simulate one job on a fresh engine and return its row (module docstring)."""
    start = time.perf_counter()
    kernel = get_kernel(job.choice.kernel)
    weights, x = layer_weights(job), activations(job)
    operands, density = prepared(job, kernel, weights, x)
    launched = time.perf_counter()
    values = checks_all_columns(job, operands.problem)  # else cycles only: the check needs no values of it
    result, stats = launch(kernel, Engine(job.variant.resolved()), operands, job.sample, values=values)
    launch_seconds = time.perf_counter() - launched
    computed = values or stats.get("mma_values_skipped") == 0.0
    row = {**describe(job), "density": density,
           **check_output(job, kernel, operands, weights, x, result if computed else None)}
    row["host_seconds"] = time.perf_counter() - start
    row["launch_seconds"] = launch_seconds
    row.update({name: value for name, value in stats.items() if name != CONFIG_STAT})
    if isinstance(kernel, GeneratedKernel):
        row.update(kernel.generation_stats(operands))
    row.update(unit_columns(job, stats.get("gpu_sim_cycle", float("nan"))))
    return row


def unit_columns(job: LayerJob, cycles: float) -> dict[str, object]:
    """One launch of the job's GEMM (its ``launch_batch`` GEMMs) in physical units on its config (module
    docstring)."""
    layer, which = job.layer, math_units(job.choice.kernel)
    macs = layer.m * layer.n * layer.k * job.launch_batch
    return {"math_units": which, **units.columns(macs, cycles, job.variant.config, which)}

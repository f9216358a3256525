"""Runs the PTX microbenchmarks of this directory and compares them with what the config predicts.

Every microbenchmark is a `Bench`: a template (``<name>.ptx`` here), what it pins, the config keys involved,
the expected value computed from the config by the timing-model contract, and a runner that measures it on
one config. `measure(bench_id, config)` returns a `Result` (cached per process): the primary value with
its expectation and tolerance (0 = exact), plus secondary `Check`s (statistics such as wavefronts or
hits, the gpu_sim_cycle form of a %clock64 measurement, ...).

Latencies and issue intervals are measured by differences: a kernel with 2k steps minus the same kernel
with k steps, divided by k, so that the fixed cost of launch, set-up and the final clock read cancels.
Nothing here hard-codes a model number except the paper's 40-cycle V100 wmma (PAPER_WMMA_V100).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from stcsim.config import load_config
from stcsim.sim import Engine

CONFIGS: tuple[str, ...] = ("v100", "titanv", "a100", "h100")
HERE = Path(__file__).resolve().parent
PAPER_WMMA_V100 = 40  # cycles: paper 001 (Zhu et al., MICRO'19) Fig. 13(a), wmma m16n16k16 on a V100
# Also run the microbenchmarks that take seconds per config (the copy over 4 x L2 on the 40-50 MB L2s).
_SLOW = os.environ.get("STCSIM_MICRO_SLOW", "") not in ("", "0")

Flat = dict[str, Any]

# ----------------------------------------------------------------------------------------------------------
# Rendering and running kernels
# ----------------------------------------------------------------------------------------------------------

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(HERE)),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,
)
_ENV.filters["fmt"] = lambda text, **kw: str(text).format(**kw)
_ENV.filters["oneline"] = lambda text: " ".join(str(text).split())


def render(template: str, **params: Any) -> str:
    """Renders ``benchmarks/micro/<template>.ptx`` with `params`; the kernel is named after the template.

    `params` may set ``kernel`` to override the entry name.
    """
    params.setdefault("kernel", template)
    return _ENV.get_template(f"{template}.ptx").render(**params)


@functools.cache
def flat(config: str) -> Flat:
    """The resolved, flattened config (derived keys included)."""
    return dict(load_config(config).flat())


@dataclass
class Run:
    """One launch: the %clock64 delta the kernel stored in out[0], out[1], the launch statistics, and the
    engine and kernel arguments (to read other results back)."""

    clock: int
    out1: int
    stats: dict[str, Any]
    engine: Engine = field(repr=False)
    args: list[int] = field(default_factory=list)

    @property
    def cycles(self) -> float:
        """kernel_cycles of the launch (gpu_sim_cycle without the config's fixed launch overhead)."""
        return float(self.stats["kernel_cycles"])

    def stat(self, name: str) -> float:
        """One statistic as a float."""
        return float(self.stats[name])


def warm_icache(config: str) -> str:
    """`config` with the warm-icache overlay: a microbenchmark pins its unit or memory level apart from
    instruction fetch, as silicon measures it over repeated launches (tests/timing/test_micro_icache.py pins
    fetch)."""
    return f"{config}+warm-icache"


def run(
    config: str,
    template: str,
    *,
    grid: int = 1,
    block: int = 32,
    shared_bytes: int = 0,
    regs_per_thread: int = 0,
    args: Callable[[Engine, int], list[int]] | None = None,
    **params: Any,
) -> Run:
    """Renders `template` with `params`, launches it once on a fresh engine and returns the `Run`.

    `args(engine, out)` returns the kernel arguments (default ``[out]``, a 64-byte zeroed buffer).
    """
    ptx = render(template, **params)
    eng = Engine(warm_icache(config))
    (name,) = eng.load_ptx(ptx)
    out = eng.malloc(64)
    argv = args(eng, out) if args else [out]
    stats = eng.launch(name, grid, block, argv, shared_bytes=shared_bytes, regs_per_thread=regs_per_thread)
    words = eng.copy_from(out, 2, np.uint64)
    return Run(int(words[0]), int(words[1]), dict(stats), eng, list(argv))


def per_step(config: str, template: str, k: int, **kw: Any) -> tuple[float, float, Run, Run]:
    """Runs `template` with n = k and n = 2k; returns the per-step cost from the %clock64 deltas and from
    gpu_sim_cycle, and the two runs."""
    r1 = run(config, template, n=k, **kw)
    r2 = run(config, template, n=2 * k, **kw)
    return (r2.clock - r1.clock) / k, (r2.cycles - r1.cycles) / k, r1, r2


def stat_per_step(r1: Run, r2: Run, name: str, k: int) -> float:
    """The per-step increase of statistic `name` between the k-step run `r1` and the 2k-step run `r2`."""
    return (r2.stat(name) - r1.stat(name)) / k


# ----------------------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """A secondary comparison inside a result (exact unless `rel_tol` > 0)."""

    measured: float
    expected: float
    rel_tol: float = 0.0
    at_least: bool = False
    at_most: bool = False

    @property
    def ok(self) -> bool:
        """Whether `measured` matches `expected` (exactly, within `rel_tol` of it, >= it if `at_least`, <= it
        if `at_most`)."""
        if self.at_least:
            return self.measured >= self.expected
        if self.at_most:
            return self.measured <= self.expected
        if self.rel_tol == 0:
            return self.measured == self.expected
        return abs(self.measured - self.expected) <= self.rel_tol * abs(self.expected)


@dataclass
class Result:
    """What one microbenchmark measured on one config, against what the config predicts.

    `value` is None when the benchmark does not apply to the config (e.g. mma.sync timing on a config
    without those keys). `rel_tol` 0 means the contract is exact.
    """

    bench: str
    config: str
    value: float | None
    expected: float | None
    unit: str
    rel_tol: float = 0.0
    checks: dict[str, Check] = field(default_factory=dict)
    note: str = ""
    at_least: bool = False

    @property
    def applies(self) -> bool:
        """Whether the benchmark ran on this config."""
        return self.value is not None

    @property
    def primary(self) -> Check:
        """The primary comparison as a `Check`."""
        assert self.value is not None and self.expected is not None
        return Check(self.value, self.expected, self.rel_tol, self.at_least)

    @property
    def failures(self) -> list[str]:
        """Human-readable mismatches (empty when the result matches the contract)."""
        if not self.applies:
            return []
        out = []
        if not self.primary.ok:
            out.append(_mismatch(self.bench, self.primary, self.unit))
        for name, c in self.checks.items():
            if not c.ok:
                out.append(_mismatch(f"{self.bench} [{name}]", c, ""))
        return out

    @property
    def ok(self) -> bool:
        """Whether the primary value and every check match."""
        return not self.failures

    @property
    def fraction(self) -> float | None:
        """measured / expected (for bandwidths)."""
        if self.value is None or not self.expected:
            return None
        return self.value / self.expected


def _mismatch(what: str, c: Check, unit: str) -> str:
    tol = f" (tolerance {c.rel_tol:.0%})" if c.rel_tol else ""
    rel = "at least " if c.at_least else ""
    return f"{what}: measured {c.measured:g} {unit}, expected {rel}{c.expected:g} {unit}{tol}".replace(
        "  ", " "
    )


@dataclass(frozen=True)
class Bench:
    """One microbenchmark: a row of docs/microbenchmarks.md and a parametrised test per config."""

    id: str
    group: str
    pins: str
    keys: tuple[str, ...]
    template: str
    runner: Callable[[str], Result]
    xfail: Callable[[str], str | None] = field(default=lambda config: None)
    configs: tuple[str, ...] = CONFIGS  # the configs it runs on (the sparse extensions: their overlays)


BENCHES: list[Bench] = []


def by_id(bench_id: str) -> Bench:
    """The registered `Bench` with this id."""
    for b in BENCHES:
        if b.id == bench_id:
            return b
    raise KeyError(bench_id)


@functools.cache
def measure(bench_id: str, config: str) -> Result:
    """Runs microbenchmark `bench_id` on `config` (cached per process)."""
    return by_id(bench_id).runner(config)


def _add(
    bench_id: str,
    group: str,
    pins: str,
    keys: tuple[str, ...],
    template: str,
    runner: Callable[[str], Result],
    xfail: Callable[[str], str | None] | None = None,
    configs: tuple[str, ...] = CONFIGS,
) -> None:
    if any(b.id == bench_id for b in BENCHES):
        raise ValueError(f"duplicate microbenchmark id {bench_id}")
    no_xfail: Callable[[str], str | None] = lambda config: None  # noqa: E731
    BENCHES.append(Bench(bench_id, group, pins, keys, template, runner, xfail or no_xfail, configs))


def _na(bench_id: str, config: str, unit: str, note: str) -> Result:
    return Result(bench_id, config, None, None, unit, note=note)


# ----------------------------------------------------------------------------------------------------------
# 1-2. Execution units: dependent chains (latency) and independent streams (issue interval)
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AluOp:
    """A PTX instruction on one unit class: `chain` reads and writes register 0 of its class (`count`
    dependent instructions per step); `stream` writes register {i} (i >= 4) from the initialised registers
    1..3."""

    name: str
    unit: str
    chain: str
    stream: str
    count: int = 1


ALU_OPS: tuple[AluOp, ...] = (
    AluOp("add.s32", "int", "add.s32 %r0, %r0, %r1;", "add.s32 %r{i}, %r1, %r2;"),
    AluOp("mad.lo.s32", "int", "mad.lo.s32 %r0, %r0, %r1, %r2;", "mad.lo.s32 %r{i}, %r1, %r2, %r3;"),
    AluOp("xor.b32", "int", "xor.b32 %r0, %r0, %r1;", "xor.b32 %r{i}, %r1, %r2;"),
    AluOp("mov.b32", "int", "mov.b32 %r0, %r0;", "mov.b32 %r{i}, %r1;"),
    AluOp("setp+selp", "int", "setp.ne.s32 %p0, %r0, 0;\n  selp.b32 %r0, 1, 2, %p0;", "", 2),
    AluOp("cvt.u16.u32+cvt.u32.u16", "int", "cvt.u16.u32 %h0, %r0;\n  cvt.u32.u16 %r0, %h0;", "", 2),
    AluOp("fma.rn.f32", "fp32", "fma.rn.f32 %f0, %f0, %f1, %f2;", "fma.rn.f32 %f{i}, %f1, %f2, %f3;"),
    AluOp("add.f32", "fp32", "add.f32 %f0, %f0, %f1;", "add.f32 %f{i}, %f1, %f2;"),
    AluOp("fma.rn.f16", "fp16", "fma.rn.f16 %h0, %h0, %h1, %h2;", "fma.rn.f16 %h{i}, %h1, %h2, %h3;"),
    AluOp("fma.rn.f16x2", "fp16", "fma.rn.f16x2 %r0, %r0, %r1, %r2;", "fma.rn.f16x2 %r{i}, %r1, %r2, %r3;"),
    AluOp("fma.rn.bf16", "fp16", "fma.rn.bf16 %h0, %h0, %h1, %h2;", "fma.rn.bf16 %h{i}, %h1, %h2, %h3;"),
    AluOp(
        "fma.rn.bf16x2", "fp16", "fma.rn.bf16x2 %r0, %r0, %r1, %r2;", "fma.rn.bf16x2 %r{i}, %r1, %r2, %r3;"
    ),
    AluOp("fma.rn.f64", "fp64", "fma.rn.f64 %d0, %d0, %d1, %d2;", "fma.rn.f64 %d{i}, %d1, %d2, %d3;"),
    AluOp("sqrt.approx.f32", "sfu", "sqrt.approx.f32 %f0, %f0;", "sqrt.approx.f32 %f{i}, %f1;"),
    AluOp("ex2.approx.f32", "sfu", "ex2.approx.f32 %f0, %f0;", "ex2.approx.f32 %f{i}, %f1;"),
    AluOp("rcp.approx.f32", "sfu", "rcp.approx.f32 %f0, %f0;", "rcp.approx.f32 %f{i}, %f1;"),
    AluOp("div.s32", "sfu", "div.s32 %r0, %r0, %r1;", "div.s32 %r{i}, %r2, %r1;"),
    AluOp("rem.u32", "sfu", "rem.u32 %r0, %r0, %r1;", "rem.u32 %r{i}, %r2, %r1;"),
    AluOp("lg2.approx.f32", "sfu", "lg2.approx.f32 %f0, %f0;", "lg2.approx.f32 %f{i}, %f1;"),
    AluOp("sin.approx.f32", "sfu", "sin.approx.f32 %f0, %f0;", "sin.approx.f32 %f{i}, %f1;"),
)
_OPS = {op.name: op for op in ALU_OPS}
STREAM_OPS = ("add.s32", "fma.rn.f32", "fma.rn.f16x2", "fma.rn.f64", "sqrt.approx.f32")
K_ALU = 16


def _ii(cfg: Flat, unit: str) -> int:
    return int(cfg[f"units.{unit}.issue_interval"])


def _lat(cfg: Flat, unit: str) -> int:
    return int(cfg[f"units.{unit}.latency"])


def _issue_per_warp(cfg: Flat) -> float:
    """Cycles between two instructions of one warp: one per cycle at most (and one per scheduler slot)."""
    return max(1.0, 1.0 / int(cfg["sched.issue_width"]))


def _alu_result(
    bench_id: str, config: str, step: tuple[float, float, Run, Run], expected: float, insts: int = 1
) -> Result:
    clock, cycles, r1, r2 = step
    return Result(
        bench_id,
        config,
        clock,
        expected,
        "cycles",
        checks={
            "gpu_sim_cycle": Check(cycles, expected),
            "warp_insts per step": Check(stat_per_step(r1, r2, "warp_insts", K_ALU), float(insts)),
        },
    )


def _chain_runner(op: AluOp) -> Callable[[str], Result]:
    def runner(config: str) -> Result:
        cfg = flat(config)
        step = per_step(config, "alu_chain", K_ALU, op=op.chain, nregs=8)
        return _alu_result(f"lat.{op.name}", config, step, op.count * _lat(cfg, op.unit), op.count)

    return runner


def _stream_runner(op: AluOp) -> Callable[[str], Result]:
    def runner(config: str) -> Result:
        cfg = flat(config)
        step = per_step(config, "alu_stream", K_ALU, op=op.stream, nregs=2 * K_ALU + 8)
        return _alu_result(f"ii.{op.name}", config, step, max(_ii(cfg, op.unit), _issue_per_warp(cfg)))

    return runner


for _op in ALU_OPS:
    _u = _op.unit.upper()
    _add(
        f"lat.{_op.name}",
        "latency",
        f"{_u} latency: dependent `{_op.name}` chain"
        + (f" ({_op.count} x latency per step)" if _op.count > 1 else ""),
        (f"units.{_op.unit}.latency",),
        "alu_chain",
        _chain_runner(_op),
    )
for _name in STREAM_OPS:
    _op = _OPS[_name]
    _add(
        f"ii.{_op.name}",
        "throughput",
        f"{_op.unit.upper()} issue interval: independent `{_op.name}` stream, one warp",
        (f"units.{_op.unit}.issue_interval",),
        "alu_stream",
        _stream_runner(_op),
    )


def _waw(config: str) -> Result:
    cfg = flat(config)
    step = per_step(config, "alu_stream", K_ALU, op="add.s32 %r4, %r1, %r2;", nregs=8)
    return _alu_result("waw.add.s32", config, step, max(_lat(cfg, "int"), _ii(cfg, "int")))


_add(
    "waw.add.s32",
    "throughput",
    "WAW: independent `add.s32` into one register wait for the destination (latency, not interval)",
    ("units.int.latency",),
    "alu_stream",
    _waw,
)


def _param(same_dest: bool) -> Callable[[str], Result]:
    def runner(config: str) -> Result:
        cfg = flat(config)
        step = per_step(config, "param_chain", K_ALU, same_dest=same_dest)
        ii = _ii(cfg, "ldst")
        expected = max(_lat(cfg, "int"), ii) if same_dest else max(ii, _issue_per_warp(cfg))
        return _alu_result("param.waw" if same_dest else "param.ii", config, step, expected)

    return runner


_add(
    "param.waw",
    "throughput",
    "ld.param latency (= INT latency), WAW chain into one register: max(int latency, LDST interval)",
    ("units.int.latency", "units.ldst.issue_interval"),
    "param_chain",
    _param(True),
)
_add(
    "param.ii",
    "throughput",
    "LD/ST issue interval: independent `ld.param` stream",
    ("units.ldst.issue_interval",),
    "param_chain",
    _param(False),
)


def _pair(config: str) -> Result:
    cfg = flat(config)
    step = per_step(
        config,
        "alu_pair",
        K_ALU,
        op_a=_OPS["fma.rn.f32"].stream,
        op_b=_OPS["fma.rn.f16x2"].stream,
        nregs=K_ALU * 2 + 8,
    )
    expected = max(_ii(cfg, "fp32"), _ii(cfg, "fp16"), 2 * _issue_per_warp(cfg))
    return _alu_result("pair.fp32+fp16", config, step, expected, 2)


_add(
    "pair.fp32+fp16",
    "throughput",
    "one warp, alternating independent FP32 / FP16 instructions: at most one per warp per cycle",
    ("units.fp32.issue_interval", "units.fp16.issue_interval"),
    "alu_pair",
    _pair,
)


K_WARPS = 32  # long enough that the two warps' streams overlap completely in both runs (k and 2k)
K_HIDE = 64  # 4 interleaved chains need a few dozen steps to settle into their steady rotation


def _warps(kind: str) -> Callable[[str], Result]:
    """Warps with K-long independent streams each.

    same_subcore: FP32 in warps 0 and 4 (one sub-core); two_subcores: FP32 in warps 0 and 1; issue: warps 0
    and 4 (one sub-core) each issue INT, FP32, FP16 triples. One such warp alone can issue every cycle, so
    the pair is bound by the scheduler's issue width whatever its policy (no warp starves the scheduler).
    """

    def runner(config: str) -> Result:
        cfg = flat(config)
        subs = int(cfg["sm.sub_cores"])
        if subs != 4:  # the template picks the op by warp index 0-3 / 4-7 / 8+
            return _na(f"warps.{kind}", config, "cycles", "template assumes 4 sub-cores")
        a = b = c = _OPS["fma.rn.f32"].stream
        if kind == "two_subcores":
            block, mask = 64, 0b11
        elif kind == "same_subcore":
            block, mask = 160, 1 | 1 << 4
        elif kind == "hiding":
            a = b = c = _OPS["fma.rn.f32"].chain
            block, mask = 416, 1 | 1 << 4 | 1 << 8 | 1 << 12
        else:
            a = b = "\n  ".join(_OPS[o].stream for o in ("add.s32", "fma.rn.f32", "fma.rn.f16"))
            block, mask = 160, 1 | 1 << 4
        k = K_HIDE if kind == "hiding" else K_WARPS

        def launch(n: int) -> Run:
            return run(
                config,
                "alu_warps",
                n=n,
                op_a=a,
                op_b=b,
                op_c=c,
                nregs=n + 8,
                block=block,
                args=lambda e, out: [out, mask],
            )

        step = (launch(2 * k).cycles - launch(k).cycles) / k
        iw = int(cfg["sched.issue_width"])
        fp32 = _ii(cfg, "fp32")
        if kind == "same_subcore":
            expected = max(2 * fp32, 2 / iw)
        elif kind == "two_subcores":
            expected = max(fp32, _issue_per_warp(cfg))
        elif kind == "hiding":
            expected = max(_lat(cfg, "fp32"), 4 * fp32, 4 / iw)
        else:  # 6 instructions per step on one scheduler; each unit gets 2 of them
            expected = max(6 / iw, *(2 * _ii(cfg, u) for u in ("int", "fp32", "fp16")))
        return Result(f"warps.{kind}", config, step, expected, "cycles")

    return runner


_add(
    "warps.same_subcore",
    "throughput",
    "2 warps on one sub-core (warps 0 and 4), FP32 streams: they share one FP32 unit (2 x interval per step)",
    ("units.fp32.issue_interval", "sm.sub_cores"),
    "alu_warps",
    _warps("same_subcore"),
)
_add(
    "warps.two_subcores",
    "throughput",
    "2 warps on two sub-cores (warps 0 and 1), FP32 streams: run in parallel (1 x interval per step)",
    ("units.fp32.issue_interval", "sm.sub_cores"),
    "alu_warps",
    _warps("two_subcores"),
)
_add(
    "warps.hiding",
    "throughput",
    "4 warps on one sub-core, dependent FP32 chains: they hide each other's latency up to the unit's "
    "throughput, max(latency, 4 x interval) per step",
    ("units.fp32.latency", "units.fp32.issue_interval"),
    "alu_warps",
    _warps("hiding"),
)
_add(
    "warps.issue",
    "throughput",
    "2 warps on one sub-core, each issuing INT / FP32 / FP16 triples: issue_width per scheduler per cycle",
    (
        "sched.issue_width",
        "units.int.issue_interval",
        "units.fp32.issue_interval",
        "units.fp16.issue_interval",
    ),
    "alu_warps",
    _warps("issue"),
)


def _cta_slots(config: str) -> Result:
    """1-warp CTAs with FP32 streams: with sub_cores x num_sms CTAs every warp has its own sub-core; one more
    CTA lands on SM 0 with warp slot sub_cores, i.e. on sub-core 0 beside CTA 0's warp."""
    cfg = flat(config)
    subs, nsm = int(cfg["sm.sub_cores"]), int(cfg["gpu.num_sms"])
    a = _OPS["fma.rn.f32"].stream
    k = K_WARPS

    def launch(n: int) -> Run:
        return run(
            config,
            "alu_warps",
            n=n,
            op_a=a,
            op_b=a,
            op_c=a,
            nregs=n + 8,
            grid=subs * nsm + 1,
            block=32,
            args=lambda e, out: [out, 1],
        )

    step = (launch(2 * k).cycles - launch(k).cycles) / k
    fp32 = _ii(cfg, "fp32")
    return Result("warps.cta_slots", config, step, max(2 * fp32, 2 / int(cfg["sched.issue_width"])), "cycles")


_add(
    "warps.cta_slots",
    "throughput",
    "warp slots continue across CTAs: the (sub_cores + 1)-th 1-warp CTA on an SM shares sub-core 0",
    ("sm.sub_cores", "units.fp32.issue_interval"),
    "alu_warps",
    _cta_slots,
)


def _branch(config: str) -> Result:
    cfg = flat(config)
    step = per_step(config, "branch_chain", K_ALU)
    return _alu_result("branch", config, step, max(_lat(cfg, "branch"), _ii(cfg, "branch")))


_add(
    "branch",
    "latency",
    "after a `bra` the warp's next instruction waits units.branch.latency",
    ("units.branch.latency",),
    "branch_chain",
    _branch,
)


def _completion(body: str) -> Callable[[str], Result]:
    def runner(config: str) -> Result:
        cfg = flat(config)
        r = run(config, "completion", body=body)
        br = _lat(cfg, "branch")
        expected = max(_lat(cfg, "sfu"), 1 + br) if body else br
        return Result("end.sqrt+ret" if body else "end.ret", config, r.cycles, expected, "cycles")

    return runner


_add(
    "end.ret",
    "latency",
    "kernel_cycles of a kernel that is only `ret` = branch latency (the last completion)",
    ("units.branch.latency",),
    "completion",
    _completion(""),
)
_add(
    "end.sqrt+ret",
    "latency",
    "kernel_cycles of `sqrt; ret` = max(SFU latency, 1 + branch latency): the last completion, not issue",
    ("units.sfu.latency", "units.branch.latency"),
    "completion",
    _completion("sqrt.approx.f32 %f1, %f2;"),
)

# ----------------------------------------------------------------------------------------------------------
# 3. Tensor Cores
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorOp:
    """A warp-level MMA: its PTX opcode, fragment sizes (in registers) and config group."""

    name: str
    instr: str
    key: str
    na: int
    nb: int
    nacc: int
    acc_type: str


TENSOR_OPS: tuple[TensorOp, ...] = (
    TensorOp(
        "wmma.f32",
        "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32",
        "tensor.wmma_m16n16k16_f32",
        8,
        8,
        8,
        ".f32",
    ),
    TensorOp(
        "wmma.f16",
        "wmma.mma.sync.aligned.row.col.m16n16k16.f16.f16",
        "tensor.wmma_m16n16k16_f16",
        8,
        8,
        4,
        ".b32",
    ),
    TensorOp(
        "mma.m16n8k16",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "tensor.mma_m16n8k16_f32",
        4,
        2,
        4,
        ".f32",
    ),
    TensorOp(
        "mma.m16n8k8",
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
        "tensor.mma_m16n8k8_f32",
        2,
        1,
        4,
        ".f32",
    ),
)
K_TENSOR = 8


def _tensor_runner(op: TensorOp, stream: bool) -> Callable[[str], Result]:
    bench_id = f"{'ii' if stream else 'lat'}.{op.name}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        if f"{op.key}.issue_interval" not in cfg:
            return _na(bench_id, config, "cycles", f"{op.key} not in the config")
        template = "tensor_stream" if stream else "tensor_chain"
        clock, cycles, r1, r2 = per_step(
            config, template, K_TENSOR, instr=op.instr, na=op.na, nb=op.nb, nacc=op.nacc, acc_type=op.acc_type
        )
        if stream:
            expected = max(float(cfg[f"{op.key}.issue_interval"]), _issue_per_warp(cfg))
        else:
            expected = float(cfg[f"{op.key}.latency"])
        return Result(
            bench_id,
            config,
            clock,
            expected,
            "cycles",
            checks={
                "gpu_sim_cycle": Check(cycles, expected),
                "tensor_insts per step": Check(stat_per_step(r1, r2, "tensor_insts", K_TENSOR), 1.0),
            },
        )

    return runner


for _t in TENSOR_OPS:
    _keys = (
        (f"{_t.key}.sets", f"{_t.key}.fetch_cycles", f"{_t.key}.compute_cycles")
        if _t.name.startswith("wmma")
        else (f"{_t.key}.latency",)
    )
    _add(
        f"lat.{_t.name}",
        "tensor",
        f"`{_t.instr.split('.sync')[0]}` {_t.name.split('.', 1)[1]} latency: dependent chain (D = A B + D)"
        + (" = sets x (fetch + compute)" if _t.name.startswith("wmma") else ""),
        _keys,
        "tensor_chain",
        _tensor_runner(_t, False),
    )
    _add(
        f"ii.{_t.name}",
        "tensor",
        f"`{_t.instr.split('.sync')[0]}` {_t.name.split('.', 1)[1]} issue interval: independent stream",
        (f"{_t.key}.issue_interval",),
        "tensor_stream",
        _tensor_runner(_t, True),
    )

# ----------------------------------------------------------------------------------------------------------
# 4. Memory latency: pointer chasing
# ----------------------------------------------------------------------------------------------------------

K_MEM = 16


def ring(n_nodes: int, stride: int) -> Callable[[Engine, int], list[int]]:
    """Kernel-argument builder: a ring of `n_nodes` 8-byte pointers `stride` bytes apart.

    The kernel gets (start, out)."""

    def build(eng: Engine, out: int) -> list[int]:
        base = eng.malloc(n_nodes * stride)
        words = np.zeros(n_nodes * stride // 8, dtype=np.uint64)
        idx = np.arange(n_nodes)
        words[idx * (stride // 8)] = base + ((idx + 1) % n_nodes) * stride
        eng.copy_to(base, words)
        return [base, out]

    return build


def cold(nbytes: int) -> Callable[[Engine, int], list[int]]:
    """Kernel-argument builder: `nbytes` of zeroed (cold) memory; args (start, out)."""

    def build(eng: Engine, out: int) -> list[int]:
        return [eng.malloc(nbytes), out]

    return build


def _chase_result(
    bench_id: str, config: str, r1: Run, r2: Run, k: int, expected: float, stats: dict[str, float]
) -> Result:
    checks = {f"{name} per load": Check(stat_per_step(r1, r2, name, k), want) for name, want in stats.items()}
    return Result(bench_id, config, (r2.clock - r1.clock) / k, expected, "cycles", checks=checks)


def _chase(level: str, cop: str = "") -> Callable[[str], Result]:
    bench_id = f"chase.{level}{cop}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        line = int(cfg["l1d.line_bytes"])
        k = K_MEM
        if level == "l1":  # a ring that fits in L1, loaded once, then chased again
            nodes, stride, warm = 2 * k, line, 2 * k
            expected, stats = cfg["l1d.hit_latency"], {"l1d_hits": 1.0, "l2_hits": 0.0}
        elif level == "l2":  # 4x the L1 capacity: cyclic LRU misses L1 on every load; fits easily in L2
            nodes, stride = 4 * int(cfg["l1d.size_bytes"]) // line, line
            warm = nodes
            expected, stats = cfg["l2.hit_latency"], {"l1d_hits": 0.0, "l2_hits": 1.0}
        else:  # dram: cold caches at launch, every node on its own line (and DRAM page)
            nodes, stride, warm = 2 * k, 4096 + line, 0
            expected = cfg["dram.latency"]
            stats = {"l1d_hits": 0.0, "l2_misses": 1.0, "dram_read_bytes": float(cfg["l2.dram_fetch_bytes"])}
        if cop:  # PTX: .cg caches at L2 only, so the second pass should hit L2
            expected, stats = cfg["l2.hit_latency"], {"l1d_hits": 0.0, "l2_hits": 1.0}
        kw = dict(warm=warm, cop=cop, args=ring(nodes, stride))
        r1 = run(config, "chase", n=k, **kw)
        r2 = run(config, "chase", n=2 * k, **kw)
        return _chase_result(bench_id, config, r1, r2, k, float(expected), stats)

    return runner


_add(
    "chase.l1",
    "memory",
    "L1 hit latency: pointer chase over a ring that fits in L1, second pass",
    ("l1d.hit_latency",),
    "chase",
    _chase("l1"),
)
_add(
    "chase.l2",
    "memory",
    "L2 hit latency: pointer chase over a ring of 4 x L1 size (LRU misses L1), second pass",
    ("l2.hit_latency", "l1d.size_bytes"),
    "chase",
    _chase("l2"),
)
_add(
    "chase.dram",
    "memory",
    "DRAM latency: pointer chase over cold lines (caches are cold at launch)",
    ("dram.latency", "l2.dram_fetch_bytes"),
    "chase",
    _chase("dram"),
)
_add(
    "chase.l1.cg",
    "memory",
    "`ld.global.cg` on an L1-resident ring (PTX: cache at L2, not L1; outside the written contract)",
    ("l2.hit_latency", "l1d.hit_latency"),
    "chase",
    _chase("l1", ".cg"),
)


def _chase_store(mode: str) -> Callable[[str], Result]:
    bench_id = f"store.{mode}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        line = int(cfg["l1d.line_bytes"])
        k = K_MEM
        if mode == "evict":
            kw = dict(nodes=2 * k, stride=line, args=ring(2 * k, line))
            stats = {"l1d_hits": 0.0, "l2_hits": 1.0}
        else:
            kw = dict(nodes=2 * k + 1, stride=line, args=cold((2 * k + 2) * line))
            stats = {"l1d_hits": 0.0, "l2_hits": 1.0, "dram_read_bytes": 0.0}
        r1 = run(config, "chase_store", n=k, mode=mode, **kw)
        r2 = run(config, "chase_store", n=2 * k, mode=mode, **kw)
        res = _chase_result(bench_id, config, r1, r2, k, float(cfg["l2.hit_latency"]), stats)
        if mode == "allocate":
            res.checks["dram_read_bytes (whole kernel)"] = Check(r2.stat("dram_read_bytes"), 0.0)
        return res

    return runner


_add(
    "store.evict",
    "memory",
    "stores write through and evict from L1: chase after storing every node hits L2",
    ("l2.hit_latency",),
    "chase_store",
    _chase_store("evict"),
)
_add(
    "store.allocate",
    "memory",
    "L2 is write-back write-allocate: chase over lines the kernel stored hits L2, no DRAM read",
    ("l2.hit_latency",),
    "chase_store",
    _chase_store("allocate"),
)


def _local(width: int) -> Callable[[str], Result]:
    bench_id = f"chase.local.u{width}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        k = K_MEM
        r1, r2 = (
            run(config, "chase_local", n=k, width=width),
            run(config, "chase_local", n=2 * k, width=width),
        )
        sectors = 32 * width // 8 / int(cfg["l1d.sector_bytes"])
        return _chase_result(
            bench_id,
            config,
            r1,
            r2,
            k,
            float(cfg["l1d.hit_latency"]),
            {"l1d_hits": sectors, "global_load_sectors": sectors},
        )

    return runner


def _const(config: str) -> Result:
    cfg = flat(config)
    k = K_MEM
    r1, r2 = run(config, "chase_const", n=k), run(config, "chase_const", n=2 * k)
    res = _chase_result("chase.const", config, r1, r2, k, float(cfg["const_cache.hit_latency"]), {})
    res.checks["pointer (self-loop at 0)"] = Check(float(r2.out1), 0.0)
    return res


_add(
    "chase.local.u32",
    "memory",
    "local loads: dependent warp-wide `ld.local.u32` chain hits L1 (4 sectors)",
    ("l1d.hit_latency", "l1d.sector_bytes"),
    "chase_local",
    _local(32),
)
_add(
    "chase.local.u64",
    "memory",
    "local loads: dependent warp-wide `ld.local.u64` chain hits L1; 32 lanes x 8 B interleaved = 8 sectors",
    ("l1d.hit_latency", "l1d.sector_bytes"),
    "chase_local",
    _local(64),
)
_add(
    "chase.const",
    "memory",
    "constant cache: dependent `ld.const` chain",
    ("const_cache.hit_latency",),
    "chase_const",
    _const,
)


def _l1_merge(config: str) -> Result:
    cfg = flat(config)
    r = run(config, "l1_merge", args=ring(1, int(cfg["l1d.line_bytes"])))
    return Result(
        "l1.merge",
        config,
        float(r.clock),
        float(cfg["dram.latency"]),
        "cycles",
        at_least=True,
        checks={"l1d_hits (2nd load)": Check(r.stat("l1d_hits"), 0.0)},
        note="clock from before the 1st load to the use of the 2nd",
    )


_add(
    "l1.merge",
    "memory",
    "a load of a sector whose L1 miss is still in flight waits for the fill (hit under miss)",
    ("dram.latency", "l1d.hit_latency"),
    "l1_merge",
    _l1_merge,
)


def _l2_merge(config: str) -> Result:
    """CTA 0 (SM 0) misses on a line; CTA 1 (SM 1) asks for the same line a few cycles later. Its data
    cannot reach SM 1 before the DRAM fill reaches L2."""
    r = run(config, "l2_merge", adds=4, grid=2, args=lambda e, out: [e.malloc(4096), out])
    t = r.engine.copy_from(r.args[1], 4, np.uint64).astype(np.int64)  # CTA 0 / CTA 1: before load, after use
    lat0, lat1 = float(t[1] - t[0]), float(t[3] - t[2])
    # The fill reaches L2 at t0 + dram.latency - icnt.latency and SM 1 one icnt.latency later.
    earliest = float(t[0] - t[2]) + lat0
    return Result(
        "l2.merge",
        config,
        lat1,
        earliest,
        "cycles",
        at_least=True,
        note=f"first load {lat0:g} cycles; second SM asks {int(t[2] - t[0])} cycles later",
    )


_add(
    "l2.merge",
    "memory",
    "a second SM's load of a line whose DRAM fill is in flight waits for the fill (L2 MSHR merge; outside "
    "the written contract)",
    ("dram.latency", "l2.hit_latency"),
    "l2_merge",
    _l2_merge,
)

# ----------------------------------------------------------------------------------------------------------
# 5. Bandwidth
# ----------------------------------------------------------------------------------------------------------

BW_TOL = 0.10
# Every SM streaming its own L2-resident region: the hashed slice interleave (l2.slice_interleave_bytes)
# leaves some slices idle in any window, as silicon's does: the stream gets 83-87% of slices x bandwidth.
HASHED_BW_TOL = 0.20
_BLOCK = 256


def dram_bytes_per_cycle(cfg: Flat) -> float:
    """Whole-GPU sustained DRAM bytes per core cycle: dram.sustained_bandwidth_gbps / clock in GHz."""
    return float(cfg["dram.sustained_bandwidth_gbps"]) * 1000.0 / float(cfg["gpu.core_clock_mhz"])


def l2_copy_bytes_per_cycle(cfg: Flat) -> float:
    """Whole-GPU bytes per cycle a copy of data in DRAM reads when each read sector, each written one and
    each byte DRAM fills into L2 pass an L2 slice port (at l2.slice_bytes_per_cycle,
    l2.slice_write_bytes_per_cycle and l2.slice_fill_bytes_per_cycle; a fill rate of 0 takes no port time)."""
    read, write = float(cfg["l2.slice_bytes_per_cycle"]), float(cfg["l2.slice_write_bytes_per_cycle"])
    fill = float(cfg["l2.slice_fill_bytes_per_cycle"])
    return int(cfg["l2.slices"]) / (1 / read + 1 / write + (1 / fill if fill else 0.0))


def dram_peak_bytes_per_cycle(cfg: Flat) -> float:
    """Whole-GPU peak DRAM bytes per core cycle: dram.bandwidth_gbps / clock in GHz."""
    return float(cfg["dram.bandwidth_gbps"]) * 1000.0 / float(cfg["gpu.core_clock_mhz"])


def l2_bytes_per_cycle(cfg: Flat) -> float:
    """Whole-GPU L2 read bytes per cycle: the least of the slices, the SM ports and the L1 data ports."""
    nsm = int(cfg["gpu.num_sms"])
    return min(
        int(cfg["l2.slices"]) * float(cfg["l2.slice_bytes_per_cycle"]),
        nsm * float(cfg["icnt.bytes_per_cycle_per_sm"]),
        nsm * float(int(cfg["smem.banks"]) * int(cfg["smem.bank_width_bytes"])),
    )


def _stream_launch(config: str, template: str, iters: int, copy: bool, unroll: int) -> Run:
    """Launches a grid-stride stream of `iters` float4s per thread over 2 CTAs of 256 threads per SM."""
    cfg = flat(config)
    grid = 2 * int(cfg["gpu.num_sms"])
    threads = grid * _BLOCK
    total = iters * 16 * threads

    def args(eng: Engine, out: int) -> list[int]:
        src = eng.malloc(total)
        dst = eng.malloc(total if copy else threads * 4)
        return [src, dst, iters]

    return run(config, template, grid=grid, block=_BLOCK, unroll=unroll, args=args)


def _stream_iters(config: str, nbytes: int, unroll: int) -> int:
    """Float4s per thread (a multiple of `unroll`) so that one stream moves about `nbytes`."""
    threads = 2 * int(flat(config)["gpu.num_sms"]) * _BLOCK
    return unroll * max(1, round(nbytes / (16 * threads * unroll)))


def _dram_read(config: str) -> Result:
    cfg = flat(config)
    # S is large enough that the 2S - S difference is many DRAM latencies long
    iters = _stream_iters(
        config, max(4 << 20, int(8 * float(cfg["dram.latency"]) * dram_bytes_per_cycle(cfg))), 4
    )
    r1 = _stream_launch(config, "stream_read", iters, False, 4)
    r2 = _stream_launch(config, "stream_read", 2 * iters, False, 4)
    bw = (r2.stat("dram_read_bytes") - r1.stat("dram_read_bytes")) / (r2.cycles - r1.cycles)
    mb = r1.stat("dram_read_bytes") / 2**20
    return Result(
        "bw.dram.read",
        config,
        bw,
        dram_bytes_per_cycle(cfg),
        "B/cycle",
        rel_tol=BW_TOL,
        note=f"{mb:.1f} vs {2 * mb:.1f} MB",
    )


def _copy(over_l2: bool) -> Callable[[str], Result]:
    bench_id = "bw.copy.over_l2" if over_l2 else "bw.copy.in_l2"

    def runner(config: str) -> Result:
        cfg = flat(config)
        l2 = int(cfg["l2.size_bytes"])
        if over_l2:
            if l2 > (8 << 20) and not _SLOW:
                return _na(
                    bench_id, config, "B/cycle", "L2 too large for the quick suite (STCSIM_MICRO_SLOW=1)"
                )
            iters = _stream_iters(config, 2 * l2, 2)  # per array; src + dst = 4 x L2 (8 x L2 for 2S)
            stats: tuple[str, ...] = ("dram_read_bytes", "dram_write_bytes")
        else:
            iters = _stream_iters(config, min(l2 // 6, 8 << 20), 2)  # 2S: src + dst = 2/3 of L2
            stats = ("dram_read_bytes",)
        r1 = _stream_launch(config, "stream_copy", iters, True, 2)
        r2 = _stream_launch(config, "stream_copy", 2 * iters, True, 2)
        moved = sum(r2.stat(s) - r1.stat(s) for s in stats)
        bw = moved / (r2.cycles - r1.cycles)
        mb = r1.stat("dram_read_bytes") / 2**20
        return Result(
            bench_id,
            config,
            bw,
            min(dram_bytes_per_cycle(cfg), len(stats) * l2_copy_bytes_per_cycle(cfg)),
            "B/cycle",
            rel_tol=BW_TOL,
            checks={"at most the DRAM peak": Check(bw, dram_peak_bytes_per_cycle(cfg), at_most=True)},
            note=f"{mb:.1f} vs {2 * mb:.1f} MB per array; counts {' + '.join(stats)}",
        )

    return runner


def _l2_read(config: str) -> Result:
    cfg = flat(config)
    nsm = int(cfg["gpu.num_sms"])
    block = 1024
    per_pass = 2 if nsm * block * 16 * 2 <= int(cfg["l2.size_bytes"]) // 2 else 1
    footprint = nsm * block * 16 * per_pass

    def launch(passes: int) -> Run:
        def args(eng: Engine, out: int) -> list[int]:
            return [eng.malloc(footprint), eng.malloc(nsm * block * 4)]

        return run(
            config, "l2_read", grid=nsm, block=block, passes=passes, per_pass=per_pass, sync=False, args=args
        )

    r1, r2 = launch(8), launch(16)
    hits = r2.stat("l2_hits") - r1.stat("l2_hits")
    bw = hits * int(cfg["l2.sector_bytes"]) / (r2.cycles - r1.cycles)
    peak = l2_bytes_per_cycle(cfg)
    return Result(
        "bw.l2.read",
        config,
        bw,
        peak,
        "B/cycle",
        rel_tol=HASHED_BW_TOL,
        checks={
            "L2 hit sectors per extra pass": Check(hits / 8, footprint / int(cfg["l2.sector_bytes"])),
            "l1d_hits": Check(r2.stat("l1d_hits"), 0.0),
            "never above the slices' peak": Check(bw, peak, at_most=True),
        },
        note=f"{footprint >> 10} KB per pass, 8 vs 16 passes (the first pass reads DRAM)",
    )


def port_bytes_per_cycle(cfg: Flat) -> float:
    """One SM's L1/shared data port: a wavefront of banks x bank width per cycles_per_wavefront."""
    return int(cfg["smem.banks"]) * int(cfg["smem.bank_width_bytes"]) / int(cfg["smem.cycles_per_wavefront"])


def _port(space: str) -> Callable[[str], Result]:
    bench_id = f"bw.{'smem' if space == 'shared' else 'l1'}.sm"

    def runner(config: str) -> Result:
        cfg = flat(config)
        threads, k = 1024, 32

        def launch(n: int) -> Run:
            return run(
                config,
                "port_bw",
                n=n,
                space=space,
                threads=threads,
                block=threads,
                args=lambda e, out: [e.malloc(threads * 16)],
            )

        r1, r2 = launch(k), launch(2 * k)
        bw = k * threads * 16 / (r2.cycles - r1.cycles)
        checks = {}
        if space == "global":
            checks["l1d_hits per extra load"] = Check(
                (r2.stat("l1d_hits") - r1.stat("l1d_hits"))
                / (k * threads * 16 / int(cfg["l1d.sector_bytes"])),
                1.0,
            )
        return Result(
            bench_id,
            config,
            bw,
            port_bytes_per_cycle(cfg),
            "B/cycle",
            rel_tol=BW_TOL,
            checks=checks,
            note=f"{threads} threads, {k} vs {2 * k} float4 loads each",
        )

    return runner


def _icnt(config: str) -> Result:
    """One CTA (one SM) re-reads a footprint of 4 x L1: LRU misses L1 on every line, L2 hits."""
    cfg = flat(config)
    block = 1024
    per_pass = 4 * int(cfg["l1d.size_bytes"]) // (block * 16)

    def launch(passes: int) -> Run:
        return run(
            config,
            "l2_read",
            grid=1,
            block=block,
            passes=passes,
            per_pass=per_pass,
            sync=True,
            args=lambda e, out: [e.malloc(per_pass * block * 16), e.malloc(block * 4)],
        )

    r1, r2 = launch(2), launch(4)
    hits = r2.stat("l2_hits") - r1.stat("l2_hits")
    bw = hits * int(cfg["l2.sector_bytes"]) / (r2.cycles - r1.cycles)
    # Little's law: one SM keeps at most l1d.mshr_entries sector misses in flight for l2.hit_latency each.
    mshr_bound = int(cfg["l1d.mshr_entries"]) * int(cfg["l2.sector_bytes"]) / float(cfg["l2.hit_latency"])
    expected = min(
        float(cfg["icnt.bytes_per_cycle_per_sm"]),
        port_bytes_per_cycle(cfg),
        l2_bytes_per_cycle(cfg),
        mshr_bound,
    )
    return Result(
        "bw.icnt.sm",
        config,
        bw,
        expected,
        "B/cycle",
        rel_tol=BW_TOL,
        # LRU over 4 x L1 misses every line, but for the few a warp running a pass ahead re-reads while the
        # slowest warp still holds them
        checks={"l1d hit fraction": Check(r2.stat("l1d_hits") / (r2.stat("l1d_hits") + r2.stat("l1d_misses")),
                                          0.01, at_most=True)},
        note=f"{per_pass * block * 16 >> 10} KB footprint, 2 vs 4 passes",
    )


_add(
    "bw.smem.sm",
    "bandwidth",
    "one SM's shared-memory bandwidth: 32 warps of conflict-free ld.shared.v4",
    ("smem.banks", "smem.bank_width_bytes", "smem.cycles_per_wavefront"),
    "port_bw",
    _port("shared"),
)
_add(
    "bw.l1.sm",
    "bandwidth",
    "one SM's L1 hit bandwidth: 32 warps of ld.global.v4 on a 16 KB L1-resident block",
    ("smem.banks", "smem.bank_width_bytes", "smem.cycles_per_wavefront"),
    "port_bw",
    _port("global"),
)
_add(
    "bw.icnt.sm",
    "bandwidth",
    "one SM's L2 read bandwidth (interconnect port, or MSHRs x sector / L2 latency): one CTA, 4 x L1",
    ("icnt.bytes_per_cycle_per_sm", "l1d.mshr_entries", "l2.hit_latency"),
    "l2_read",
    _icnt,
)
_add(
    "bw.dram.read",
    "bandwidth",
    "DRAM bandwidth: streaming float4 reads (cold), bytes/cycle from the 2S - S difference",
    ("dram.sustained_bandwidth_gbps", "gpu.core_clock_mhz", "dram.channels"),
    "stream_read",
    _dram_read,
)
_add(
    "bw.copy.in_l2",
    "bandwidth",
    "streaming copy, footprint < L2: DRAM read bytes/cycle (writes stay in the write-back L2; the least of "
    "the sustained DRAM bandwidth and the L2 slices' read + fill + write time), at most the peak",
    ("dram.sustained_bandwidth_gbps", "dram.bandwidth_gbps", "l2.slice_write_bytes_per_cycle",
     "l2.slice_fill_bytes_per_cycle"),
    "stream_copy",
    _copy(False),
)
_add(
    "bw.copy.over_l2",
    "bandwidth",
    "streaming copy, 4 x L2: DRAM read + write bytes/cycle (dirty evictions share the DRAM bandwidth; or the "
    "L2 slices' read + write time), at most the peak",
    ("dram.sustained_bandwidth_gbps", "dram.bandwidth_gbps", "l2.size_bytes"),
    "stream_copy",
    _copy(True),
)
_add(
    "bw.l2.read",
    "bandwidth",
    "L2 bandwidth: every SM re-reads another SM's share of an L2-resident footprint",
    ("l2.slices", "l2.slice_bytes_per_cycle", "icnt.bytes_per_cycle_per_sm"),
    "l2_read",
    _l2_read,
)

# ----------------------------------------------------------------------------------------------------------
# 6. Shared memory: wavefronts and bank conflicts
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SmemPattern:
    """Lane l accesses `vec` 32-bit words at byte offset l x `stride`."""

    name: str
    stride: int
    vec: int
    what: str


SMEM_PATTERNS: tuple[SmemPattern, ...] = (
    SmemPattern("stride1", 4, 1, "32-bit, stride 1 word: conflict-free"),
    SmemPattern("stride2", 8, 1, "32-bit, stride 2 words: 2-way conflict"),
    SmemPattern("stride32", 128, 1, "32-bit, stride 32 words: 32-way conflict (all lanes in bank 0)"),
    SmemPattern("broadcast", 0, 1, "32-bit, every lane the same word: broadcast"),
    SmemPattern("v2", 8, 2, "64-bit (v2.u32), consecutive: 2 wavefronts, no conflict"),
    SmemPattern("v4", 16, 4, "128-bit (v4.u32), consecutive: 4 wavefronts, no conflict"),
)


def smem_wavefronts(cfg: Flat, stride: int, vec: int) -> tuple[int, int]:
    """(wavefronts, conflict-free minimum) of a warp access by the contract's rule."""
    banks, width = int(cfg["smem.banks"]), int(cfg["smem.bank_width_bytes"])
    words = {(lane * stride) // width + j * 4 // width for lane in range(32) for j in range(vec)}
    per_bank: dict[int, int] = {}
    for w in words:
        per_bank[w % banks] = per_bank.get(w % banks, 0) + 1
    ideal = max(1, math.ceil(len(words) * width / (banks * width)))
    return max(per_bank.values()), ideal


def _smem(p: SmemPattern) -> Callable[[str], Result]:
    def runner(config: str) -> Result:
        cfg = flat(config)
        waves, ideal = smem_wavefronts(cfg, p.stride, p.vec)
        k = K_MEM
        clock, _, r1, r2 = per_step(config, "smem", k, stride=p.stride, vec=p.vec)
        expected = int(cfg["smem.latency"]) + (waves - 1) * int(cfg["smem.wavefront_latency"])
        return Result(
            f"smem.{p.name}",
            config,
            clock,
            float(expected),
            "cycles",
            checks={
                "shared_wavefronts per load": Check(
                    stat_per_step(r1, r2, "shared_wavefronts", k), float(waves)
                ),
                "shared_bank_conflicts per load": Check(
                    stat_per_step(r1, r2, "shared_bank_conflicts", k), float(waves - ideal)
                ),
                "shared_wavefronts (k loads + the store)": Check(
                    r1.stat("shared_wavefronts"), float((k + 1) * waves)
                ),
            },
            note=f"{waves} wavefronts, {waves - ideal} conflicts",
        )

    return runner


for _p in SMEM_PATTERNS:
    _add(
        f"smem.{_p.name}",
        "shared",
        f"ld.shared {_p.what}: latency, shared_wavefronts, shared_bank_conflicts",
        ("smem.latency", "smem.wavefront_latency", "smem.banks"),
        "smem",
        _smem(_p),
    )


def _ldmatrix(x: int) -> Callable[[str], Result]:
    bench_id = f"ldmatrix.x{x}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        key = f"smem.ldmatrix_x{x}.latency"
        if key not in cfg:
            return _na(bench_id, config, "cycles", f"{key} not in the config (sm_75+)")
        k = K_MEM
        clock, _, r1, r2 = per_step(config, "ldmatrix", k, x=x)
        expected = float(cfg[key]) + _lat(cfg, "int")
        return Result(
            bench_id,
            config,
            clock,
            expected,
            "cycles",
            checks={
                "shared_wavefronts per ldmatrix": Check(stat_per_step(r1, r2, "shared_wavefronts", k), x)
            },
            note="per step: ldmatrix + dependent add.s32",
        )

    return runner


for _x in (1, 2, 4):
    _add(
        f"ldmatrix.x{_x}",
        "shared",
        f"`ldmatrix .x{_x}` + dependent add: ldmatrix latency + INT latency, {_x} wavefront(s)",
        (f"smem.ldmatrix_x{_x}.latency", "units.int.latency"),
        "ldmatrix",
        _ldmatrix(_x),
    )

# ----------------------------------------------------------------------------------------------------------
# 7. Occupancy
# ----------------------------------------------------------------------------------------------------------

K_OCC = 32
WAVE_TOL = 0.05


def _round_up(v: int, a: int) -> int:
    return (v + a - 1) // a * a if a else v


def ctas_per_sm(cfg: Flat, threads: int, regs_per_thread: int, shared_bytes: int) -> int:
    """CTAs per SM by the contract: the least of the CTA, thread, register and shared-memory limits."""
    warps = _round_up(threads, 32) // 32
    n = int(cfg["sm.max_ctas"])
    n = min(n, int(cfg["sm.max_threads"]) // (warps * 32))
    regs_per_warp = _round_up(regs_per_thread * 32, int(cfg["sm.register_alloc_unit"]))
    if regs_per_warp:
        n = min(n, int(cfg["sm.registers"]) // (regs_per_warp * warps))
    if shared_bytes:
        per_cta = _round_up(
            shared_bytes + int(cfg["sm.shared_reserved_per_cta_bytes"]),
            int(cfg["sm.shared_alloc_unit_bytes"]),
        )
        n = min(n, int(cfg["sm.shared_mem_bytes"]) // per_cta)
    return n


def shared_case(cfg: Flat) -> int:
    """Dynamic shared bytes per 1-warp CTA for which shared memory limits occupancy to 3..8 CTAs and the
    allocation unit's rounding (and the per-CTA reservation, where the config has one) changes the answer."""
    total, unit = int(cfg["sm.shared_mem_bytes"]), int(cfg["sm.shared_alloc_unit_bytes"])
    reserved = int(cfg["sm.shared_reserved_per_cta_bytes"])
    for k in range(total // unit, 0, -1):
        s = k * unit + 1 - reserved
        if s <= 0 or s > int(cfg["sm.max_shared_per_cta_bytes"]):
            continue
        c = total // _round_up(s + reserved, unit)
        if not 3 <= c <= 8 or c == total // (s + reserved):
            continue
        if reserved and c == total // _round_up(s, unit):
            continue
        return s
    raise ValueError("no shared-memory size fits the occupancy case")


@dataclass(frozen=True)
class OccCase:
    """One occupancy limit: block size, registers per thread and dynamic shared bytes (from the config)."""

    name: str
    what: str
    keys: tuple[str, ...]
    threads: int
    regs: int
    shared: Callable[[Flat], int]


OCC_CASES: tuple[OccCase, ...] = (
    OccCase(
        "threads",
        "threads: 673-thread CTAs (22 warps after rounding)",
        ("sm.max_threads",),
        673,
        32,
        lambda cfg: 0,
    ),
    OccCase(
        "registers",
        "registers: 96-thread CTAs at 170 registers/thread (5440 -> 5632 per warp)",
        ("sm.registers", "sm.register_alloc_unit"),
        96,
        170,
        lambda cfg: 0,
    ),
    OccCase(
        "shared",
        "shared memory: 1-warp CTAs with dynamic shared memory just over an allocation unit",
        ("sm.shared_mem_bytes", "sm.shared_alloc_unit_bytes", "sm.shared_reserved_per_cta_bytes"),
        32,
        32,
        shared_case,
    ),
    OccCase(
        "max_ctas", "CTA slots: 1-warp CTAs, nothing else limiting", ("sm.max_ctas",), 32, 32, lambda cfg: 0
    ),
)


def working_warps_per_subcore(cfg: Flat, threads: int, ctas: int) -> int:
    """The most working warps (warp 0 of each resident CTA) one sub-core holds: warps take sub-cores
    round-robin by warp slot, CTA j's warp 0 has slot j x warps per CTA."""
    warps, subs = _round_up(threads, 32) // 32, int(cfg["sm.sub_cores"])
    counts = [0] * subs
    for j in range(ctas):
        counts[(j * warps) % subs] += 1
    return max(counts)


def _occupancy(case: OccCase) -> Callable[[str], Result]:
    bench_id = f"occ.{case.name}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        nsm = int(cfg["gpu.num_sms"])
        shared = case.shared(cfg)
        c = ctas_per_sm(cfg, case.threads, case.regs, shared)

        def launch(grid: int) -> tuple[Run, np.ndarray]:
            r = run(
                config,
                "occupancy",
                n=K_OCC,
                grid=grid,
                block=case.threads,
                shared_bytes=shared,
                regs_per_thread=case.regs,
                args=lambda e, out: [e.malloc(256 * grid)],
            )
            return r, r.engine.copy_from(r.args[0], (grid, 32), np.uint64)[:, :2].astype(np.int64)

        one, one_clk = launch(nsm)
        full, full_clk = launch(nsm * c)
        extra, clk = launch(nsm * (c + 1))
        first_end = int(clk[:, 1].min())
        early = int((clk[:, 0] < first_end).sum())
        max_warps = int(cfg["sm.max_threads"]) // 32
        warps = _round_up(case.threads, 32) // 32
        checks = {
            "theoretical_occupancy": Check(full.stat("theoretical_occupancy"), c * warps / max_warps),
            "CTAs started before any CTA ended": Check(float(early), float(nsm * c)),
        }
        # Cycle scaling, where the working warps do not compete for the SFU (latency-bound, so a full
        # wave takes as long as one CTA): c CTAs per SM cost T(1) (the longest CTA, from its own clock: the
        # launch also drains every CTA's final store through the L2 slices), the (c+1)-th a second wave.
        busy = working_warps_per_subcore(cfg, case.threads, c) * _ii(cfg, "sfu")
        note = f"shared {shared} B; " if shared else ""
        note += f"T(1) {one.cycles:g}, T(c/SM) {full.cycles:g}, T(c+1/SM) {extra.cycles:g}"
        if busy <= _lat(cfg, "sfu"):
            longest = [float((clk[:, 1] - clk[:, 0]).max()) for clk in (one_clk, full_clk)]
            checks["T(c per SM) = T(1)"] = Check(longest[1], longest[0], WAVE_TOL)
            checks["T(c+1 per SM) = 2 T(1)"] = Check(extra.cycles, 2 * one.cycles, WAVE_TOL)
        else:
            note += " (SFU-bound: no cycle-scaling check)"
        return Result(
            bench_id, config, full.stat("max_ctas_per_sm"), float(c), "CTAs/SM", checks=checks, note=note
        )

    return runner


for _c in OCC_CASES:
    _add(
        f"occ.{_c.name}",
        "occupancy",
        f"max_ctas_per_sm limited by {_c.what}; the (c+1)-th CTA waits for a slot",
        _c.keys,
        "occupancy",
        _occupancy(_c),
    )

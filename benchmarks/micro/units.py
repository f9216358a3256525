"""Execution units: dependent chains (latency) and independent streams (issue interval) of every unit
class, warps sharing or splitting sub-cores and schedulers, branches, and the last completion of a kernel
(the report's groups `latency` and `throughput`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from benchmarks.micro.contract import Bench, Check, Result, case, not_applicable
from benchmarks.micro.launch import (
    Run,
    flat,
    issue_per_warp,
    per_step,
    run,
    stat_per_step,
    unit_interval,
    unit_latency,
)


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
    latency_key: str = ""  # a latency of its own (> 0) that times it instead of its unit's (units.int_div)


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
    AluOp("div.s32", "sfu", "div.s32 %r0, %r0, %r1;", "div.s32 %r{i}, %r2, %r1;",
          latency_key="units.int_div.div_latency"),
    AluOp("rem.u32", "sfu", "rem.u32 %r0, %r0, %r1;", "rem.u32 %r{i}, %r2, %r1;",
          latency_key="units.int_div.rem_latency"),
    AluOp("lg2.approx.f32", "sfu", "lg2.approx.f32 %f0, %f0;", "lg2.approx.f32 %f{i}, %f1;"),
    AluOp("sin.approx.f32", "sfu", "sin.approx.f32 %f0, %f0;", "sin.approx.f32 %f{i}, %f1;"),
    AluOp("shfl.sync.idx.b32", "shfl", "shfl.sync.idx.b32 %r0, %r0, %r1, 31, 0xffffffff;",
          "shfl.sync.idx.b32 %r{i}, %r1, %r2, 31, 0xffffffff;"),
    AluOp("shfl.sync.bfly.b32", "shfl", "shfl.sync.bfly.b32 %r0, %r0, 1, 31, 0xffffffff;",
          "shfl.sync.bfly.b32 %r{i}, %r1, 1, 31, 0xffffffff;"),
)
_OPS = {op.name: op for op in ALU_OPS}
STREAM_OPS = ("add.s32", "fma.rn.f32", "fma.rn.f16x2", "fma.rn.f64", "sqrt.approx.f32", "shfl.sync.idx.b32")
K_ALU = 16


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
        own = int(cfg[op.latency_key]) if op.latency_key else 0
        latency = own or unit_latency(cfg, op.unit)
        return _alu_result(f"lat.{op.name}", config, step, op.count * latency, op.count)

    return runner


def _stream_runner(op: AluOp) -> Callable[[str], Result]:
    def runner(config: str) -> Result:
        cfg = flat(config)
        step = per_step(config, "alu_stream", K_ALU, op=op.stream, nregs=2 * K_ALU + 8)
        expected = max(unit_interval(cfg, op.unit), issue_per_warp(cfg))
        return _alu_result(f"ii.{op.name}", config, step, expected)

    return runner


def _waw(config: str) -> Result:
    cfg = flat(config)
    step = per_step(config, "alu_stream", K_ALU, op="add.s32 %r4, %r1, %r2;", nregs=8)
    return _alu_result("waw.add.s32", config, step, max(unit_latency(cfg, "int"), unit_interval(cfg, "int")))


def _param(same_dest: bool) -> Callable[[str], Result]:
    def runner(config: str) -> Result:
        cfg = flat(config)
        step = per_step(config, "param_chain", K_ALU, same_dest=same_dest)
        ii = unit_interval(cfg, "ldst")
        expected = max(unit_latency(cfg, "int"), ii) if same_dest else max(ii, issue_per_warp(cfg))
        return _alu_result("param.waw" if same_dest else "param.ii", config, step, expected)

    return runner


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
    expected = max(unit_interval(cfg, "fp32"), unit_interval(cfg, "fp16"), 2 * issue_per_warp(cfg))
    return _alu_result("pair.fp32+fp16", config, step, expected, 2)


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
            return not_applicable(f"warps.{kind}", config, "cycles", "template assumes 4 sub-cores")
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
        fp32 = unit_interval(cfg, "fp32")
        if kind == "same_subcore":
            expected = max(2 * fp32, 2 / iw)
        elif kind == "two_subcores":
            expected = max(fp32, issue_per_warp(cfg))
        elif kind == "hiding":
            expected = max(unit_latency(cfg, "fp32"), 4 * fp32, 4 / iw)
        else:  # 6 instructions per step on one scheduler; each unit gets 2 of them
            expected = max(6 / iw, *(2 * unit_interval(cfg, u) for u in ("int", "fp32", "fp16")))
        return Result(f"warps.{kind}", config, step, expected, "cycles")

    return runner


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
    fp32 = unit_interval(cfg, "fp32")
    return Result("warps.cta_slots", config, step, max(2 * fp32, 2 / int(cfg["sched.issue_width"])), "cycles")


def _branch(config: str) -> Result:
    cfg = flat(config)
    step = per_step(config, "branch_chain", K_ALU)
    return _alu_result("branch", config, step, max(unit_latency(cfg, "branch"), unit_interval(cfg, "branch")))


BRANCH_BODY = 12  # instructions under each branch: more than ptxas (and the engine) predicates


def _branch_taken(config: str) -> Result:
    cfg = flat(config)
    step = per_step(
        config, "branch_cond", K_ALU, cmp="ne", body=BRANCH_BODY, args=lambda e, out: [out, 0xFFFFFFFF]
    )
    expected = unit_latency(cfg, "int") + max(unit_latency(cfg, "branch"), unit_interval(cfg, "branch"))
    return _alu_result("branch.taken", config, step, expected, 2)


LOOP_BODY = 2  # add / xor instructions in the loop of branch.loop: the back-edge's chain is the longer


def _branch_loop(config: str) -> Result:
    cfg = flat(config)
    clock, cycles, _, _ = per_step(config, "branch_loop", K_ALU, body=LOOP_BODY,
                                   args=lambda e, out: [out, 0xFFFFFFFF])  # fmt: skip
    chain = 2 * unit_latency(cfg, "int") + max(unit_latency(cfg, "branch"), unit_interval(cfg, "branch"))
    slack = chain + unit_interval(cfg, "int")
    return Result(
        "branch.loop", config, clock, chain, "cycles", at_least=True,
        checks={"gpu_sim_cycle": Check(cycles, chain, at_least=True),
                "at most one int issue slot more": Check(clock, slack, at_most=True)},
    )  # fmt: skip


def _completion(body: str) -> Callable[[str], Result]:
    def runner(config: str) -> Result:
        cfg = flat(config)
        r = run(config, "completion", body=body)
        br = unit_latency(cfg, "branch")
        expected = max(unit_latency(cfg, "sfu"), 1 + br) if body else br
        return Result("end.sqrt+ret" if body else "end.ret", config, r.cycles, expected, "cycles")

    return runner


def _cases() -> Iterator[Bench]:
    """The cases of this group, in the order of the report."""
    for op in ALU_OPS:
        u = op.unit.upper()
        yield case(
            f"lat.{op.name}",
            "latency",
            f"{u} latency: dependent `{op.name}` chain"
            + (f" ({op.count} x latency per step)" if op.count > 1 else ""),
            (f"units.{op.unit}.latency",) + (("units.int.latency",) if op.unit == "shfl" else ())
            + ((op.latency_key,) if op.latency_key else ()),
            "alu_chain",
            _chain_runner(op),
        )
    for name in STREAM_OPS:
        op = _OPS[name]
        yield case(
            f"ii.{op.name}",
            "throughput",
            f"{op.unit.upper()} issue interval: independent `{op.name}` stream, one warp",
            (f"units.{op.unit}.issue_interval",)
            + (("units.int.issue_interval",) if op.unit == "shfl" else ()),
            "alu_stream",
            _stream_runner(op),
        )
    yield case(
        "waw.add.s32",
        "throughput",
        "WAW: independent `add.s32` into one register wait for the destination (latency, not interval)",
        ("units.int.latency",),
        "alu_stream",
        _waw,
    )
    yield case(
        "param.waw",
        "throughput",
        "ld.param latency (= INT latency), WAW chain into one register: max(int latency, LDST interval)",
        ("units.int.latency", "units.ldst.issue_interval"),
        "param_chain",
        _param(True),
    )
    yield case(
        "param.ii",
        "throughput",
        "LD/ST issue interval: independent `ld.param` stream",
        ("units.ldst.issue_interval",),
        "param_chain",
        _param(False),
    )
    yield case(
        "pair.fp32+fp16",
        "throughput",
        "one warp, alternating independent FP32 / FP16 instructions: at most one per warp per cycle",
        ("units.fp32.issue_interval", "units.fp16.issue_interval"),
        "alu_pair",
        _pair,
    )
    yield case(
        "warps.same_subcore",
        "throughput",
        "2 warps on one sub-core (warps 0 and 4), FP32 streams: they share one FP32 unit (2 x interval per "
        "step)",
        ("units.fp32.issue_interval", "sm.sub_cores"),
        "alu_warps",
        _warps("same_subcore"),
    )
    yield case(
        "warps.two_subcores",
        "throughput",
        "2 warps on two sub-cores (warps 0 and 1), FP32 streams: run in parallel (1 x interval per step)",
        ("units.fp32.issue_interval", "sm.sub_cores"),
        "alu_warps",
        _warps("two_subcores"),
    )
    yield case(
        "warps.hiding",
        "throughput",
        "4 warps on one sub-core, dependent FP32 chains: they hide each other's latency up to the unit's "
        "throughput, max(latency, 4 x interval) per step",
        ("units.fp32.latency", "units.fp32.issue_interval"),
        "alu_warps",
        _warps("hiding"),
    )
    yield case(
        "warps.issue",
        "throughput",
        "2 warps on one sub-core, each issuing INT / FP32 / FP16 triples: issue_width per scheduler per "
        "cycle",
        (
            "sched.issue_width",
            "units.int.issue_interval",
            "units.fp32.issue_interval",
            "units.fp16.issue_interval",
        ),
        "alu_warps",
        _warps("issue"),
    )
    yield case(
        "warps.cta_slots",
        "throughput",
        "warp slots continue across CTAs: the (sub_cores + 1)-th 1-warp CTA on an SM shares sub-core 0",
        ("sm.sub_cores", "units.fp32.issue_interval"),
        "alu_warps",
        _cta_slots,
    )
    yield case(
        "branch",
        "latency",
        "after a `bra` the warp's next instruction waits units.branch.latency",
        ("units.branch.latency",),
        "branch_chain",
        _branch,
    )
    yield case(
        "branch.taken",
        "latency",
        f"a taken warp-uniform `@p bra` over {BRANCH_BODY} instructions (ptxas keeps the branch), its "
        "predicate set just before: int latency + branch latency per step",
        ("units.int.latency", "units.branch.latency"),
        "branch_cond",
        _branch_taken,
    )
    yield case(
        "branch.loop",
        "latency",
        f"a `.pragma \"nounroll\"` loop over {LOOP_BODY} add / xor instructions: per iteration at least its "
        "back-edge's chain, counter add -> setp -> bra (2 x int latency + branch latency), and at most one "
        "int issue slot more",
        ("units.int.latency", "units.branch.latency"),
        "branch_loop",
        _branch_loop,
    )
    yield case(
        "end.ret",
        "latency",
        "kernel_cycles of a kernel that is only `ret` = branch latency (the last completion)",
        ("units.branch.latency",),
        "completion",
        _completion(""),
    )
    yield case(
        "end.sqrt+ret",
        "latency",
        "kernel_cycles of `sqrt; ret` = max(SFU latency, 1 + branch latency): the last completion, not issue",
        ("units.sfu.latency", "units.branch.latency"),
        "completion",
        _completion("sqrt.approx.f32 %f1, %f2;"),
    )


CASES: tuple[Bench, ...] = tuple(_cases())

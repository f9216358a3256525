"""Tensor Cores: the latency (dependent chain, D = A B + D) and issue interval (independent stream) of every
wmma and mma.sync shape and type (group `tensor`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from benchmarks.micro.contract import Bench, Check, Result, case, not_applicable
from benchmarks.micro.launch import (
    flat,
    issue_per_warp,
    per_step,
    stat_per_step,
)

PAPER_WMMA_V100 = 40  # cycles: paper 001 (Zhu et al., MICRO'19) Fig. 13(a), wmma m16n16k16 on a V100

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


def tensor_runner(op: TensorOp, stream: bool) -> Callable[[str], Result]:
    """The runner of `op`'s latency (dependent chain) or, with `stream`, issue interval case."""
    bench_id = f"{'ii' if stream else 'lat'}.{op.name}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        if f"{op.key}.issue_interval" not in cfg:
            return not_applicable(bench_id, config, "cycles", f"{op.key} not in the config")
        template = "tensor_stream" if stream else "tensor_chain"
        clock, cycles, r1, r2 = per_step(
            config, template, K_TENSOR, instr=op.instr, na=op.na, nb=op.nb, nacc=op.nacc, acc_type=op.acc_type
        )
        if stream:
            expected = max(float(cfg[f"{op.key}.issue_interval"]), issue_per_warp(cfg))
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


def _cases() -> Iterator[Bench]:
    """The cases of this group, in the order of the report."""
    for t in TENSOR_OPS:
        keys = (
            (f"{t.key}.sets", f"{t.key}.fetch_cycles", f"{t.key}.compute_cycles")
            if t.name.startswith("wmma")
            else (f"{t.key}.latency",)
        )
        yield case(
            f"lat.{t.name}",
            "tensor",
            f"`{t.instr.split('.sync')[0]}` {t.name.split('.', 1)[1]} latency: dependent chain (D = A B + D)"
            + (" = sets x (fetch + compute)" if t.name.startswith("wmma") else ""),
            keys,
            "tensor_chain",
            tensor_runner(t, False),
        )
        yield case(
            f"ii.{t.name}",
            "tensor",
            f"`{t.instr.split('.sync')[0]}` {t.name.split('.', 1)[1]} issue interval: independent stream",
            (f"{t.key}.issue_interval",),
            "tensor_stream",
            tensor_runner(t, True),
        )


CASES: tuple[Bench, ...] = tuple(_cases())

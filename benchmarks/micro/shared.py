"""Shared memory: the wavefronts and bank conflicts of ld.shared access patterns, and ldmatrix (group
`shared`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from benchmarks.micro.contract import Bench, Check, Result, case, not_applicable
from benchmarks.micro.launch import (
    Flat,
    flat,
    per_step,
    stat_per_step,
    unit_latency,
)
from benchmarks.micro.memory import K_MEM


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


def _ldmatrix(x: int) -> Callable[[str], Result]:
    bench_id = f"ldmatrix.x{x}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        key = f"smem.ldmatrix_x{x}.latency"
        if key not in cfg:
            return not_applicable(bench_id, config, "cycles", f"{key} not in the config (sm_75+)")
        k = K_MEM
        clock, _, r1, r2 = per_step(config, "ldmatrix", k, x=x)
        expected = float(cfg[key]) + unit_latency(cfg, "int")
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


def _cases() -> Iterator[Bench]:
    """The cases of this group, in the order of the report."""
    for p in SMEM_PATTERNS:
        yield case(
            f"smem.{p.name}",
            "shared",
            f"ld.shared {p.what}: latency, shared_wavefronts, shared_bank_conflicts",
            ("smem.latency", "smem.wavefront_latency", "smem.banks"),
            "smem",
            _smem(p),
        )
    for x in (1, 2, 4):
        yield case(
            f"ldmatrix.x{x}",
            "shared",
            f"`ldmatrix .x{x}` + dependent add: ldmatrix latency + INT latency, {x} wavefront(s)",
            (f"smem.ldmatrix_x{x}.latency", "units.int.latency"),
            "ldmatrix",
            _ldmatrix(x),
        )


CASES: tuple[Bench, ...] = tuple(_cases())

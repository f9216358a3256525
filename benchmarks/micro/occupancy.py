"""Occupancy: max_ctas_per_sm under each limit (threads, registers, shared memory, CTA slots) and the wave
structure it gives: exactly num_sms x c CTAs start before the first one ends (group `occupancy`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from benchmarks.micro.contract import Bench, Check, Result, case
from benchmarks.micro.launch import (
    Flat,
    Run,
    flat,
    run,
    unit_interval,
    unit_latency,
)

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


def _occupancy(occ: OccCase) -> Callable[[str], Result]:
    bench_id = f"occ.{occ.name}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        nsm = int(cfg["gpu.num_sms"])
        shared = occ.shared(cfg)
        c = ctas_per_sm(cfg, occ.threads, occ.regs, shared)

        def launch(grid: int) -> tuple[Run, np.ndarray]:
            r = run(
                config,
                "occupancy",
                n=K_OCC,
                grid=grid,
                block=occ.threads,
                shared_bytes=shared,
                regs_per_thread=occ.regs,
                args=lambda e, out: [e.malloc(256 * grid)],
            )
            return r, r.engine.copy_from(r.args[0], (grid, 32), np.uint64)[:, :2].astype(np.int64)

        one, one_clk = launch(nsm)
        full, full_clk = launch(nsm * c)
        extra, clk = launch(nsm * (c + 1))
        first_end = int(clk[:, 1].min())
        early = int((clk[:, 0] < first_end).sum())
        max_warps = int(cfg["sm.max_threads"]) // 32
        warps = _round_up(occ.threads, 32) // 32
        checks = {
            "theoretical_occupancy": Check(full.stat("theoretical_occupancy"), c * warps / max_warps),
            "CTAs started before any CTA ended": Check(float(early), float(nsm * c)),
        }
        # Cycle scaling, where the working warps do not compete for the SFU (latency-bound, so a full
        # wave takes as long as one CTA): c CTAs per SM cost T(1) (the longest CTA, from its own clock: the
        # launch also drains every CTA's final store through the L2 slices), the (c+1)-th a second wave.
        busy = working_warps_per_subcore(cfg, occ.threads, c) * unit_interval(cfg, "sfu")
        note = f"shared {shared} B; " if shared else ""
        note += f"T(1) {one.cycles:g}, T(c/SM) {full.cycles:g}, T(c+1/SM) {extra.cycles:g}"
        if busy <= unit_latency(cfg, "sfu"):
            longest = [float((clk[:, 1] - clk[:, 0]).max()) for clk in (one_clk, full_clk)]
            checks["T(c per SM) = T(1)"] = Check(longest[1], longest[0], WAVE_TOL)
            checks["T(c+1 per SM) = 2 T(1)"] = Check(extra.cycles, 2 * one.cycles, WAVE_TOL)
        else:
            note += " (SFU-bound: no cycle-scaling check)"
        return Result(
            bench_id, config, full.stat("max_ctas_per_sm"), float(c), "CTAs/SM", checks=checks, note=note
        )

    return runner


def _cases() -> Iterator[Bench]:
    """The cases of this group, in the order of the report."""
    for c in OCC_CASES:
        yield case(
            f"occ.{c.name}",
            "occupancy",
            f"max_ctas_per_sm limited by {c.what}; the (c+1)-th CTA waits for a slot",
            c.keys,
            "occupancy",
            _occupancy(c),
        )


CASES: tuple[Bench, ...] = tuple(_cases())

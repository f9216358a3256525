"""Memory latency by pointer chasing (L1, L2, DRAM, ld.global.cg, local and constant memory) and the cache
policy: stores that evict or allocate, requests merged in L1 and L2 (group `memory`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from benchmarks.micro.contract import Bench, Check, Result, case
from benchmarks.micro.launch import (
    Run,
    flat,
    run,
    stat_per_step,
)
from stcsim.sim import Engine

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
            nodes, stride = 4 * int(cfg["l1d.max_bytes"]) // line, line
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


def _cases() -> Iterator[Bench]:
    """The cases of this group, in the order of the report."""
    yield case(
        "chase.l1",
        "memory",
        "L1 hit latency: pointer chase over a ring that fits in L1, second pass",
        ("l1d.hit_latency",),
        "chase",
        _chase("l1"),
    )
    yield case(
        "chase.l2",
        "memory",
        "L2 hit latency: pointer chase over a ring of 4 x the largest L1 (LRU misses L1), second pass",
        ("l2.hit_latency", "l1d.max_bytes"),
        "chase",
        _chase("l2"),
    )
    yield case(
        "chase.dram",
        "memory",
        "DRAM latency: pointer chase over cold lines (caches are cold at launch)",
        ("dram.latency", "l2.dram_fetch_bytes"),
        "chase",
        _chase("dram"),
    )
    yield case(
        "chase.l1.cg",
        "memory",
        "`ld.global.cg` on an L1-resident ring (PTX: cache at L2, not L1; outside the written contract)",
        ("l2.hit_latency", "l1d.hit_latency"),
        "chase",
        _chase("l1", ".cg"),
    )
    yield case(
        "store.evict",
        "memory",
        "stores write through and evict from L1: chase after storing every node hits L2",
        ("l2.hit_latency",),
        "chase_store",
        _chase_store("evict"),
    )
    yield case(
        "store.allocate",
        "memory",
        "L2 is write-back write-allocate: chase over lines the kernel stored hits L2, no DRAM read",
        ("l2.hit_latency",),
        "chase_store",
        _chase_store("allocate"),
    )
    yield case(
        "chase.local.u32",
        "memory",
        "local loads: dependent warp-wide `ld.local.u32` chain hits L1 (4 sectors)",
        ("l1d.hit_latency", "l1d.sector_bytes"),
        "chase_local",
        _local(32),
    )
    yield case(
        "chase.local.u64",
        "memory",
        "local loads: dependent warp-wide `ld.local.u64` chain hits L1; 32 lanes x 8 B interleaved = 8 "
        "sectors",
        ("l1d.hit_latency", "l1d.sector_bytes"),
        "chase_local",
        _local(64),
    )
    yield case(
        "chase.const",
        "memory",
        "constant cache: dependent `ld.const` chain",
        ("const_cache.hit_latency",),
        "chase_const",
        _const,
    )
    yield case(
        "l1.merge",
        "memory",
        "a load of a sector whose L1 miss is still in flight waits for the fill (hit under miss)",
        ("dram.latency", "l1d.hit_latency"),
        "l1_merge",
        _l1_merge,
    )
    yield case(
        "l2.merge",
        "memory",
        "a second SM's load of a line whose DRAM fill is in flight waits for the fill (L2 MSHR merge; "
        "outside "
        "the written contract)",
        ("dram.latency", "l2.hit_latency"),
        "l2_merge",
        _l2_merge,
    )


CASES: tuple[Bench, ...] = tuple(_cases())

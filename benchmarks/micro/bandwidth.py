"""Bandwidth: one SM's shared-memory, L1 and L2 ports, DRAM reads, streaming copies within and over the L2,
and the whole L2 (group `bandwidth`, bytes per core cycle from the difference of two sizes)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from benchmarks.micro.contract import Bench, Check, Result, case, not_applicable
from benchmarks.micro.launch import (
    Flat,
    Run,
    flat,
    run,
)
from stcsim.sim import Engine

# Also run the microbenchmarks that take seconds per config (the copy over 4 x L2 on the 40-50 MB L2s).
_SLOW = os.environ.get("STCSIM_MICRO_SLOW", "") not in ("", "0")

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
                return not_applicable(
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
    per_pass = 4 * int(cfg["l1d.max_bytes"]) // (block * 16)

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


def _cases() -> Iterator[Bench]:
    """The cases of this group, in the order of the report."""
    yield case(
        "bw.smem.sm",
        "bandwidth",
        "one SM's shared-memory bandwidth: 32 warps of conflict-free ld.shared.v4",
        ("smem.banks", "smem.bank_width_bytes", "smem.cycles_per_wavefront"),
        "port_bw",
        _port("shared"),
    )
    yield case(
        "bw.l1.sm",
        "bandwidth",
        "one SM's L1 hit bandwidth: 32 warps of ld.global.v4 on a 16 KB L1-resident block",
        ("smem.banks", "smem.bank_width_bytes", "smem.cycles_per_wavefront"),
        "port_bw",
        _port("global"),
    )
    yield case(
        "bw.icnt.sm",
        "bandwidth",
        "one SM's L2 read bandwidth (interconnect port, or MSHRs x sector / L2 latency): one CTA, 4 x L1",
        ("icnt.bytes_per_cycle_per_sm", "l1d.mshr_entries", "l2.hit_latency"),
        "l2_read",
        _icnt,
    )
    yield case(
        "bw.dram.read",
        "bandwidth",
        "DRAM bandwidth: streaming float4 reads (cold), bytes/cycle from the 2S - S difference",
        ("dram.sustained_bandwidth_gbps", "gpu.core_clock_mhz", "dram.channels"),
        "stream_read",
        _dram_read,
    )
    yield case(
        "bw.copy.in_l2",
        "bandwidth",
        "streaming copy, footprint < L2: DRAM read bytes/cycle (writes stay in the write-back L2; the "
        "least of "
        "the sustained DRAM bandwidth and the L2 slices' read + fill + write time), at most the peak",
        ("dram.sustained_bandwidth_gbps", "dram.bandwidth_gbps", "l2.slice_write_bytes_per_cycle",
         "l2.slice_fill_bytes_per_cycle"),
        "stream_copy",
        _copy(False),
    )
    yield case(
        "bw.copy.over_l2",
        "bandwidth",
        "streaming copy, 4 x L2: DRAM read + write bytes/cycle (dirty evictions share the DRAM bandwidth; "
        "or the "
        "L2 slices' read + write time), at most the peak",
        ("dram.sustained_bandwidth_gbps", "dram.bandwidth_gbps", "l2.size_bytes"),
        "stream_copy",
        _copy(True),
    )
    yield case(
        "bw.l2.read",
        "bandwidth",
        "L2 bandwidth: every SM re-reads another SM's share of an L2-resident footprint",
        ("l2.slices", "l2.slice_bytes_per_cycle", "icnt.bytes_per_cycle_per_sm"),
        "l2_read",
        _l2_read,
    )


CASES: tuple[Bench, ...] = tuple(_cases())

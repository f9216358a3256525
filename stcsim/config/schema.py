"""Every GPU config key, declared once: type, unit, default or required, allowed values, source, doc.

The YAML files nest exactly like :data:`TREE`; the engine receives the flattened dotted form
(``l1d.size_bytes``). Values derived from these keys are declared and computed in ``derived.py``.

The conventions every declaration follows are in :data:`CONVENTIONS` (also rendered in docs/configs.md).
"""

from __future__ import annotations

from stcsim.config.extensions import extension_groups
from stcsim.config.params import Bool, Enum, Float, Group, Int, Ints, Param, Str, flatten_schema, group_docs

CONVENTIONS: tuple[str, ...] = (
    "All latencies and intervals are in core cycles at `gpu.core_clock_mhz`.",
    "`latency`: cycles from issue of a warp instruction until a dependent instruction may issue.",
    "`issue_interval`: cycles between two warp instructions one sub-core may send to the same unit (its "
    "reciprocal throughput: a unit with 16 lanes per sub-core takes 32 / 16 = 2 cycles per warp "
    "instruction). Each unit class is one pipeline per sub-core.",
    "Memory latencies (`smem.latency`, `l1d.hit_latency`, `l2.hit_latency`, `dram.latency`, "
    "`const_cache.hit_latency`) are load-to-use latencies as a single-thread pointer-chase microbenchmark "
    "measures them, so they can be checked against silicon directly. The timing model splits them with "
    "`icnt.latency` into the derived `l2.access_cycles` and `dram.access_cycles`, so that an uncontended "
    "access reproduces each configured total exactly.",
    "Keys marked `sm_N+` exist only on GPUs whose `gpu.sm_version` is at least N (the PTX target that "
    "introduced the instruction); on older GPUs they must be absent and are missing from `flat()`.",
    "Sizes are in bytes, bandwidths in bytes per core cycle unless the unit says GB/s (1e9 bytes/s).",
)
"""Conventions shared by every key (rendered at the top of docs/configs.md)."""

_DS = "vendor datasheet / architecture whitepaper"
_PG = "CUDA C++ Programming Guide, compute capability tables"
_DIV = ("silicon microbenchmark of a dependent chain (benchmarks/micro/silicon.py lat.div.s32 / "
        "lat.rem.u32); 0 where not measured")
_OCC = "CUDA Occupancy Calculator (allocation granularities)"
_P001 = "paper 001 (Zhu et al., MICRO'19)"
_P001_TC = f"{_P001} Sec. 4.1, Fig. 13(a)"
_P004 = "paper 004 (Zhu & Xie, ExTensor), PhaseLat model"
_MB = "microbenchmark literature (see each config's comments)"
_CAL = "calibration on silicon (results/reference/)"
_SHFL = "silicon microbenchmark where measured (lat./ii.shfl.sync.*); default 0: not measured, timed as INT"
_ICACHE = ("H100 silicon probe 2026-11-26 (results/reference/h100_icache_probe.csv, "
           "benchmarks/calibration/icache_probe.py)")


def _unit(doc: str) -> Group:
    """An execution-unit class: one pipeline per sub-core with a latency and an issue interval."""
    return Group(doc, {
        "latency": Int("Result latency of the unit's basic operation", "cycles", _MB, hi=10_000),
        "issue_interval": Int("Cycles between warp instructions a sub-core can send to this unit "
                              "(= 32 / lanes per sub-core)", "cycles", _DS, hi=1024),
    })


def _wmma(shape: str) -> Group:
    """Set-model timing of a ``wmma.mma`` shape (paper 001: latency = sets x (fetch + compute))."""
    doc = f"wmma.mma.sync {shape}: latency = sets x (fetch_cycles + compute_cycles) (paper 001 model)"
    return Group(doc, {
        "sets": Int("Sets per warp instruction (Volta: 4 sets of HMMA.884; sm_80+: SASS HMMAs per wmma)",
                    "count", _P001_TC, hi=64, used_by="derived"),
        "fetch_cycles": Int("Cycles to fill the operand buffers (A, B) before each set computes",
                            "cycles", _P001_TC, lo=0, hi=1024, used_by="derived"),
        "compute_cycles": Int("Dot-product cycles per set", "cycles", _P001_TC, hi=1024, used_by="derived"),
        "issue_interval": Int("Cycles the sub-core's Tensor Core pipe is busy before it accepts the "
                              "next wmma/mma", "cycles", _P001_TC, hi=1024),
    })


def _mma(ptx: str, min_sm: int) -> Group:
    """Direct timing of an ``mma.sync`` shape (f16 inputs, f32 accumulate)."""
    return Group(f"{ptx} (f16 x f16 + f32); only on sm_{min_sm}+", {
        "latency": Int("Latency of one warp instruction", "cycles", _MB, hi=10_000, min_sm=min_sm),
        "issue_interval": Int("Cycles the Tensor Core pipe is busy per instruction (from peak FLOP/s)",
                              "cycles", _DS, hi=1024, min_sm=min_sm),
    })


def _cache_geometry(what: str, sets_of: str) -> dict[str, Param]:
    return {
        "assoc": Int(f"{what} associativity ({sets_of})", "ways", _MB, hi=4096),
        "line_bytes": Int(f"{what} line (tag) size", "bytes", _DS, 128, lo=32, hi=1024, multiple_of=32),
        "sector_bytes": Int(f"{what} sector size: the unit of fill and of coalescing", "bytes", _DS, 32,
                            lo=4, hi=1024, multiple_of=4),
    }


TREE: dict[str, Param | Group] = {
    "gpu": Group("Whole-GPU organisation", {
        "name": Str("GPU name used in reports and error messages", _DS),
        "sm_version": Int("SM architecture = compute capability x 10 (70 Volta, 80 Ampere GA100, 90 Hopper); "
                          "PTX target sm_<N>", "version", _PG, lo=70, hi=120, used_by="loader"),
        "core_clock_mhz": Float("SM core clock; every cycle count in the config is at this clock", "MHz", _DS,
                                lo=100, hi=5000, used_by="derived"),
        "n_clusters": Int("Clusters (GPGPU-Sim -gpgpu_n_clusters; a TPC on Volta..Hopper)", "count", _DS,
                          hi=1024, used_by="derived"),
        "n_cores_per_cluster": Int("SMs per cluster (GPGPU-Sim -gpgpu_n_cores_per_cluster)", "count", _DS, 1,
                                   hi=16, used_by="derived"),
        "launch_overhead_cycles": Int("Fixed cycles of a kernel launch on the GPU (launch set-up and drain), "
                                      "added to gpu_sim_cycle; measured as an empty kernel's "
                                      "gpc__cycles_elapsed.max", "cycles", _CAL, 0, lo=0, hi=1_000_000),
    }),
    "sm": Group("Per-SM organisation and occupancy limits (CTA dispatcher)", {
        "sub_cores": Int("Processing blocks (sub-cores) per SM, each with its own scheduler and units",
                         "count", _DS, 4, hi=8),
        "max_threads": Int("Resident threads per SM", "threads", _PG, hi=4096, multiple_of=32,
                           used_by="derived"),
        "max_ctas": Int("Resident CTAs (thread blocks) per SM", "CTAs", _PG, hi=64),
        "registers": Int("32-bit registers per SM", "registers", _PG, hi=1 << 20, multiple_of=256),
        "register_alloc_unit": Int("Registers per allocation unit; registers are allocated per warp in "
                                   "these units", "registers", _OCC, 256, hi=4096),
        "max_registers_per_thread": Int("Registers one thread may use", "registers", _PG, 255, hi=255),
        "unified_l1_shared_bytes": Int("Unified L1 data cache + shared memory SRAM per SM", "bytes", _DS,
                                       hi=1 << 22, multiple_of=1024),
        "shared_carveouts_kb": Ints("Shared-memory capacities the driver may configure per kernel; it picks "
                                    "the smallest holding the resident CTAs' shared memory and reserve, and "
                                    "the L1 gets the rest of the unified SRAM (GPGPU-Sim's "
                                    "-gpgpu_shmem_option with the adaptive cache). Empty: a fixed L1 of "
                                    "l1d.size_bytes", "KB", _PG, "", hi=4096),
        "shared_mem_bytes": Int("Shared-memory carve-out per SM (occupancy limit); the rest of the "
                                "unified SRAM can be L1D", "bytes", _PG, hi=1 << 22, multiple_of=1024),
        "max_shared_per_cta_bytes": Int("Largest dynamic shared memory one CTA may opt in to", "bytes", _PG,
                                        hi=1 << 22, multiple_of=1024),
        "shared_alloc_unit_bytes": Int("Shared memory is allocated per CTA in multiples of this", "bytes",
                                       _OCC, hi=4096),
        "shared_reserved_per_cta_bytes": Int("Shared memory the system reserves per CTA (1 KB on sm_80+)",
                                             "bytes", _PG, 0, lo=0, hi=8192),
    }),
    "sched": Group("Warp scheduler of each sub-core", {
        "policy": Enum("Warp scheduling policy: greedy-then-oldest or loose round-robin", ("gto", "lrr"),
                       "GPGPU-Sim -gpgpu_scheduler", "gto"),
        "issue_width": Int("Warp instructions one scheduler issues per cycle", "count", _DS, 1, hi=2),
    }),
    "units": Group("Execution units per sub-core (one pipeline per class, width given as issue_interval)", {
        "int": _unit("INT32 pipe: integer add/logic/shift/mad (IADD3, LOP3, IMAD)"),
        "fp32": _unit("FP32 pipe: add/mul/fma (FADD, FMUL, FFMA)"),
        "fp16": _unit("Packed half-precision pipe (HADD2, HMUL2, HFMA2)"),
        "fp64": _unit("FP64 pipe (DADD, DMUL, DFMA)"),
        "sfu": _unit("Special-function unit (MUFU: rcp, rsqrt, ex2, lg2, sin, cos)"),
        "branch": _unit("Branch unit (bra, call, ret, exit)"),
        "shfl": Group("shfl.sync: on silicon an MIO instruction (SHFL), issued through the LD/ST pipe's "
                      "slots", {
            "latency": Int("Result latency of a dependent shfl.sync (0: not measured for this GPU; shfl then "
                           "times as an INT instruction on the INT pipe)", "cycles", _SHFL, 0, lo=0,
                           hi=10_000),
            "issue_interval": Int("Cycles the LD/ST (MIO) pipe is busy per shfl.sync warp instruction (used "
                                  "where latency > 0)", "cycles", _SHFL, 0, lo=0, hi=1024),
        }),
        "int_div": Group("32-bit integer div / rem: ptxas expands each into a sequence through the MUFU "
                         "(I2F.U32.RP, MUFU.RCP, F2I, IMAD.HI and corrections: 8-17 SASS instructions), "
                         "issued on the SFU pipe as one instruction of this latency", {
            "div_latency": Int("Result latency of a dependent 32-bit div (0: not measured for this GPU; "
                               "units.sfu.latency)", "cycles", _DIV, 0, lo=0, hi=10_000),
            "rem_latency": Int("Result latency of a dependent 32-bit rem (0: not measured for this GPU; "
                               "units.sfu.latency)", "cycles", _DIV, 0, lo=0, hi=10_000),
        }),
        "ldst": Group("Load/store issue (memory latencies are in smem, l1d, l2, dram, const_cache)", {
            "issue_interval": Int("Cycles between memory warp instructions a sub-core can issue "
                                  "(= 32 / LD/ST units per sub-core)", "cycles", _DS, hi=1024),
        }),
    }),
    "tensor": Group("Tensor Cores: counts and per-instruction-shape timing", {
        "cores_per_subcore": Int("Tensor Cores in each sub-core", "count", _DS, hi=16, used_by="derived"),
        "cores_per_warp_op": Int("Tensor Cores one warp-level MMA occupies at once", "count", _P001_TC,
                                 hi=16, used_by="derived"),
        "wmma_m16n16k16_f32": _wmma("m16n16k16, f16 x f16 + f32"),
        "wmma_m16n16k16_f16": _wmma("m16n16k16, f16 x f16 + f16"),
        "mma_m16n8k8_f32": _mma("mma.sync m16n8k8", 75),
        "mma_m16n8k16_f32": _mma("mma.sync m16n8k16", 80),
        "mma_sp_m16n8k32_f32": _mma("mma.sp.sync m16n8k32 (2:4 structured sparse A)", 80),
        "movm_latency": Int("Latency of the transposing register moves (MOVM.16.MT88) ptxas adds after a "
                            "wmma.load of an A .col or B .row f16 fragment from outside shared memory, "
                            "before the HMMA can read it (0: not modelled)", "cycles", _CAL, 0, lo=0,
                            hi=1000),
    }),
    "smem": Group("Shared memory: banks, latency, wavefront rule. A warp access is split into wavefronts of "
                  "banks x bank_width_bytes (64-bit accesses: half-warps, 128-bit: quarter-warps); "
                  "bank conflicts add wavefronts; ldmatrix .xN reads N 8x8 b16 matrices = N wavefronts", {
        "banks": Int("Shared-memory banks", "count", _PG, 32, hi=64),
        "bank_width_bytes": Int("Bytes per bank per cycle", "bytes", _PG, 4, hi=16),
        "latency": Int("Load-to-use latency of a conflict-free 32-bit ld.shared", "cycles", _MB, hi=10_000),
        "cycles_per_wavefront": Int("Cycles the shared-memory pipe is busy per wavefront (its bandwidth: "
                                    "banks x bank_width_bytes per this many cycles)", "cycles", _DS, 1,
                                    hi=64),
        "wavefront_latency": Int("Cycles each wavefront beyond the first adds to an access's latency (bank-"
                                 "conflict replays, vector and ldmatrix passes)", "cycles", _MB, 1, hi=64),
        "matrix_extra_latency": Int("Cycles a matrix-fragment load from shared memory (ldmatrix, wmma.load "
                                    "A/B: one SASS LDSM) takes beyond an ld.shared of the same wavefronts "
                                    "(0: none)", "cycles", _CAL, 0, lo=0, hi=1000),
        "cas_iteration_cycles": Float(
            "SM shared-pipe cycles one iteration of a warp's compare-and-swap loop on 64-bit words takes "
            "(the loop ptxas emits for a shared atomic add of u64/s64/f64: ATOMS.CAST.SPIN.64), besides "
            "cas_address_cycles per address it updates",
            "cycles", _CAL, lo=0, hi=1000),
        "cas_address_cycles": Float(
            "SM shared-pipe cycles a compare-and-swap loop iteration on 64-bit words takes per distinct "
            "address it updates",
            "cycles", _CAL, lo=0, hi=1000),
        "cas_iteration_cycles_b32": Float(
            "As cas_iteration_cycles, for the loop on 32-bit words (a shared atomic add of f32: "
            "ATOMS.CAST.SPIN)", "cycles", _CAL, lo=0, hi=1000),
        "cas_address_cycles_b32": Float(
            "As cas_address_cycles, for the loop on 32-bit words", "cycles", _CAL, lo=0, hi=1000),
    }),
    "l1d": Group("L1 data cache of each SM (sectored, caches global loads)", {
        "size_bytes": Int("L1D capacity modelled (must fit beside the shared carve-out in the unified SRAM)",
                          "bytes", _DS, hi=1 << 22, multiple_of=1024, used_by="derived"),
        **_cache_geometry("L1D", "sets = size_bytes / (assoc x line_bytes)"),
        "hit_latency": Int("Load-to-use latency of a global load that hits in L1D", "cycles", _MB,
                           hi=10_000),
        "mshr_entries": Int("Outstanding missed lines (MSHR entries) per L1D", "entries",
                            "Accel-Sim tested configs", hi=65_536),
        "store_sector_cycles": Float(
            "Cycles the SM's store path takes per 32-B sector a global store writes, times the sector's "
            "16-byte halves written only in part (at least one); a store waits to issue until the path is "
            "free. 0: no store-path limit (where not measured)",
            "cycles", "H100 silicon probe 2026-11-26 (results/reference/h100_store_probe.csv); 0 elsewhere",
            0.0, lo=0, hi=1024),
    }),
    "l2": Group("Shared L2 cache, split into slices (memory sub-partitions)", {
        "size_bytes": Int("Total L2 capacity", "bytes", _DS, hi=1 << 34, multiple_of=1024, used_by="derived"),
        "slices": Int("L2 slices; addresses interleave across slices", "count", _DS, hi=1024),
        **_cache_geometry("L2", "sets per slice = size_bytes / (slices x assoc x line_bytes)"),
        "hit_latency": Int("Load-to-use latency of a global load that misses L1D and hits L2", "cycles", _MB,
                           hi=100_000),
        "slice_bytes_per_cycle": Int("Read data bandwidth of one slice", "B/cycle", _MB, hi=4096),
        "slice_write_bytes_per_cycle": Int("Write data bandwidth of one slice (stores accepted into L2)",
                                           "B/cycle", _CAL, hi=4096),
        "slice_fill_bytes_per_cycle": Float(
            "Rate at which a DRAM fill writes its block into the slice's data array, on the same port the "
            "slice serves SM reads and writes on (a fill holds the port block bytes / this). 0: fills take "
            "no port time (where not measured)",
            "B/cycle", "H100: the data array's read rate (l2.slice_bytes_per_cycle, ld.cg read loop); that "
            "fills take the port: the 16 MiB stream_copy on silicon (tuning half) runs in about its DRAM "
            "read time plus its L2 write time; 0 elsewhere", 0.0, lo=0, hi=4096),
        "slice_request_cycles": Float(
            "Slice port cycles a read request (a warp's sectors of one line) takes at least, however few "
            "sectors it carries: a scattered 32-byte sector costs this, not sector_bytes / "
            "slice_bytes_per_cycle",
            "cycles", _CAL, lo=0.01, hi=1000),
        "slice_interleave_bytes": Int(
            "Contiguous bytes mapped to one slice before the (hashed) interleave moves to another slice",
            "bytes", _CAL, lo=32, hi=1 << 20, multiple_of=32),
        "slice_map": Enum(
            "Which slice an address lives on. hash: a mixing hash of the interleave unit (balls into bins: "
            "a small contiguous range lands unevenly). h100: the H100's map measured on silicon, the slice "
            "of each 256-byte unit of four 2 MiB pages (an address's page number modulo 4 picks the page; "
            "needs 80 slices and a 256-byte interleave), with each slice's buddy: the slice it shares atomic "
            "throughput with (l2.atomic_rounds_per_cycle)", ("hash", "h100"),
            "H100: silicon 2026-11-26, atomic contention between unit pairs "
            "(results/reference/h100_l2_slice_map.csv; benchmarks/calibration/slice_map_probe.py); "
            "hash elsewhere (not measured)", "hash"),
        "set_index": Enum(
            "Which set of its slice a line lives in. linear: the line address's low bits (a power-of-two row "
            "pitch of 16 KiB puts a column's lines into 2 of 256 sets). xor: the line address folded onto "
            "itself in set-index-wide pieces and XORed (every address bit moves the set), as GPGPU-Sim / "
            "Accel-Sim hash their L2 set index (IPOLY, the 'P' of -gpgpu_cache:dl2); needs a power-of-two "
            "number of sets per slice", ("linear", "xor"),
            "H100: silicon 2026-12-07 (results/reference/h100_tma_stream_2026-12-07/, strided capacity "
            "cases): rows 16 KiB apart re-read as fast as contiguous rows at a 17 MB footprint (0.96x), "
            "where the linear index takes 1.9x; linear elsewhere (not measured)", "linear"),
        "atomic_update_cycles": Float(
            "Cycles a slice's atomic unit takes per update round of one sector: the lanes of a warp atomic "
            "that update distinct words of a sector share a round, lanes updating the same word take one "
            "round each (N same-address atomics cost N rounds); one unit per slice, shared by its addresses",
            "cycles", _CAL, lo=0.01, hi=1000),
        "atomic_rounds_per_cycle": Float(
            "Update rounds all slices together complete per cycle when every slice is busy (a limit below "
            "slices / atomic_update_cycles): GPU-wide, or, where l2.slice_map pairs the slices into buddies "
            "(h100: two slices that contend partly), each pair at 2 / slices of it",
            "rounds/cycle", _CAL, lo=0.01, hi=4096),
        "atomic_words_per_cycle": Float(
            "Further distinct words of a round (beyond its first) all slices together update per cycle when "
            "every slice is busy: a round over w words costs 1 / atomic_rounds_per_cycle + (w - 1) / this "
            "(shared like atomic_rounds_per_cycle)",
            "words/cycle", _CAL, lo=0.01, hi=1 << 20),
        "dram_fetch_bytes": Int("Bytes an L2 miss reads from DRAM: whole sectors of the line, aligned; the "
                                "other sectors of the block are filled too (a scattered sector costs the "
                                "block)", "bytes", _CAL, lo=32, hi=1024, multiple_of=32),
    }),
    "dram": Group("Device memory (HBM)", {
        "channels": Int("Independent memory channels (L2 slices map evenly onto them)", "count", _DS,
                        hi=1024),
        "bandwidth_gbps": Float("Peak device-memory bandwidth, whole GPU (1 GB/s = 1e9 B/s)", "GB/s", _DS,
                                lo=1, hi=1e6, used_by="derived"),
        "sustained_bandwidth_gbps": Float(
            "Device-memory bandwidth a streaming kernel sustains, whole GPU (at most the peak): what the "
            "DRAM channels deliver in the model (refresh, bank and read/write turnaround keep silicon below "
            "the peak)", "GB/s", _CAL, lo=1, hi=1e6, used_by="derived"),
        "latency": Int("Load-to-use latency of a global load that misses L2 (TLB hit)", "cycles", _MB,
                       hi=100_000, used_by="derived"),
    }),
    "icnt": Group("Interconnect between SMs and L2 slices (crossbar)", {
        "latency": Int("One-way SM <-> L2 slice traversal latency", "cycles", _MB, lo=0, hi=10_000),
        "bytes_per_cycle_per_sm": Int("Injection/ejection bandwidth of one SM port", "B/cycle", _MB,
                                      hi=4096),
    }),
    "const_cache": Group("Constant cache (ld.const, kernel parameters)", {
        "hit_latency": Int("Load-to-use latency of a constant-cache hit", "cycles", _MB, hi=10_000),
    }),
    "icache": Group("Instruction fetch: a direct-mapped L0 per sub-core behind a direct-mapped L1 per SM; a "
                    "sub-core fills one line at a time, the next line is requested as a warp enters one", {
        "enabled": Bool("Model instruction fetch (off: every instruction issues as if fetched). On only "
                        "where silicon measured it", _ICACHE, False),
        "instruction_bytes": Int("Bytes of code per PTX instruction (one SASS instruction each; ptxas-folded "
                                 "ones take none): a pc's code address", "bytes", _ICACHE, 16, hi=1024),
        "line_bytes": Int("Instruction cache line (the unit fetched and filled)", "bytes", _ICACHE, 128,
                          lo=16, hi=4096),
        "l0_bytes": Int("Capacity of one sub-core's L0 instruction cache", "bytes", _ICACHE, 32768,
                        lo=16, hi=1 << 24),
        "l1_bytes": Int("Capacity of one SM's L1 instruction cache", "bytes", _ICACHE, 131072, lo=16,
                        hi=1 << 26),
        "fill_cycles": Float("Cycles a sub-core takes per line filled into its L0 from the SM's L1 or the "
                             "level above it (l15_bytes)", "cycles", _ICACHE, 17.5, lo=0, hi=100_000),
        "l15_bytes": Int("Capacity of the instruction cache above the SM's L1 (GPC level; modelled per SM, "
                         "direct-mapped). A launch finds it holding the start of its code: the measured "
                         "launch follows an identical one, and ncu's cache flush leaves it", "bytes",
                         _ICACHE, 65536, lo=16, hi=1 << 30),
        "l2_fill_cycles": Float("Cycles per line filled from L2 (a miss of the L1 and the level above it "
                                "on a line another fetch of the launch brought into L2)", "cycles",
                                _ICACHE, 44.3, lo=0, hi=100_000),
        "dram_fill_cycles": Float("Cycles per line filled from device memory (the launch's first fetch of a "
                                  "line missing in the L1 and the level above it)", "cycles", _ICACHE,
                                  120.0, lo=0, hi=100_000),
    }),
    "cp_async": Group("cp.async (global -> shared copies); only on sm_80+", {
        "mode": Enum("async: the copy proceeds in the background and only cp.async.wait_* blocks the warp; "
                     "sync: modelled as a blocking load followed by a store", ("async", "sync"),
                     "PTX ISA (cp.async)", "async", min_sm=80),
    }),
    **extension_groups(),
}
"""The config tree, nested as in the YAML files."""

PARAMS: dict[str, Param] = flatten_schema(TREE)
"""Every declared key, dotted, in declaration order."""

GROUP_DOCS: dict[str, str] = group_docs(TREE)
"""One-line description of every group (``"l1d"``, ``"tensor.wmma_m16n16k16_f32"``, ...)."""

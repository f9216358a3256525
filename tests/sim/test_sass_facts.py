"""The SASS reader (stcsim.sim.sass_facts) against cuobjdump, and the copy grouping it gives the schedule."""

from __future__ import annotations

import csv
import re
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from stcsim.sim import Engine, ptxas_facts, sass_facts
from stcsim.sim.engine import sass_facts_of

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "results/reference/h100_tc_styles_sass_mem_order.csv"
SUITE = ROOT / "benchmarks/calibration/kernels/tc_styles.ptx"

# (low word, high word, offset, target) of BRAs in cuobjdump's listing of the tc-styles suite (sm_90)
BRANCHES = [
    (0x400B48947, 0xFEA0003800000, 0xC0, 0x7A0),
    (0xFFFFFFF800EC0947, 0xFEC000383FFFF, 0x610, 0x1D0),
    (0xFFFFFFFC00FC7947, 0xFC0000383FFFF, 0x8A0, 0x8A0),
    (0x10007C8947, 0xFEA0003800000, 0x1F0, 0x13F0),
    (0xFFFFFFF400F41947, 0xFEC000383FFFF, 0xBC0, 0x3A0),
]
LDG, STS, OTHER = 0x0000000C06047981, 0x000000043A007388, 0x0000000104397824  # LDG.E.128, STS.128, IMAD.IADD


def _code(words: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack("<QQ", lo, hi) for lo, hi in words)


@pytest.mark.parametrize(("lo", "hi", "offset", "target"), BRANCHES)
def test_branch_targets_decode_as_cuobjdump_lists_them(lo, hi, offset, target):
    code = _code([(OTHER, 0)] * (offset // 16) + [(lo, hi)])
    assert sass_facts.decode(code)[-1] == sass_facts.SassInstruction(offset, "B", target)


def test_copy_group_counts_loads_per_group_in_innermost_loops():
    # a loop G S G G S S, branching back to its first instruction: 3 loads in 2 groups -> 2 (half up)
    body = [(LDG, 0), (STS, 0), (LDG, 0), (LDG, 0), (STS, 0), (STS, 0)]
    back = (0xFFFFFFFC00000947 | ((-28 & 0xFF) << 16), 0x3FFFF)  # BRA at 0x60 to 0: (0 - 0x70) / 4 = -28
    code = _code(body + [back])
    assert sass_facts.decode(code)[-1].target == 0
    assert sass_facts.memory_order(code) == "GSGGSS"
    assert sass_facts.copy_group(code) == 2
    assert sass_facts.copy_group(_code(body)) == 0  # no loop: no grouping


def test_copy_blocks_are_the_straight_line_copies_outside_innermost_loops():
    # G S G S, then a loop G G S S branching back to its first instruction (0x40), then G S alone
    body = [(LDG, 0), (STS, 0), (LDG, 0), (STS, 0), (LDG, 0), (LDG, 0), (STS, 0), (STS, 0)]
    back = (0xFFFFFFFC00000947 | ((-20 & 0xFF) << 16), 0x3FFFF)  # BRA at 0x80 to 0x40: (0x40 - 0x90) / 4
    code = _code(body + [back, (LDG, 0), (OTHER, 0), (STS, 0)])
    assert sass_facts.decode(code)[8].target == 0x40
    assert sass_facts.loop_order(code) == ["GGSS"]
    assert sass_facts.copy_block_orders(code) == ["GSGS", "GS"]  # the branch target cuts the first block
    assert sass_facts.copy_block_orders(_code([(LDG, 0), (OTHER, 0)])) == []  # loads only: no copy


def _ctrl(write: int = 7, wait: int = 0) -> int:
    """The high word of an instruction whose control bits set write barrier `write`, wait on mask `wait`."""
    return (0xF | 7 << 5 | 7 << 8) << 41 & ~(7 << 46) | write << 46 | wait << 52


def test_load_waits_follow_the_scoreboard_barriers_of_a_loop():
    # LDG (barrier 2), LDG (barrier 3), FFMA waiting on barrier 2, LDG, FFMA waiting on 3, LDG; back to 0
    body = [(LDG, _ctrl(2)), (LDG, _ctrl(3)), (OTHER, _ctrl(wait=0b100)), (LDG, _ctrl(2)),
            (OTHER, _ctrl(wait=0b1000)), (LDG, _ctrl(3))]
    back = (0xFFFFFFFC00000947 | ((-28 & 0xFF) << 16), 0x3FFFF)  # BRA at 0x60 to 0
    code = _code(body + [back])
    assert sass_facts.loop_order(code) == ["GGGG"]
    assert sass_facts.loop_load_waits(code) == [";;0;1"]
    # nothing waits before a later load: no waits
    back2 = (0xFFFFFFFC00000947 | ((-12 & 0xFF) << 16), 0x3FFFF)  # BRA at 0x20 to 0
    assert sass_facts.loop_load_waits(_code([(LDG, _ctrl(2)), (LDG, _ctrl(3)), back2])) == [""]


def test_a_file_that_is_not_a_cubin_is_a_value_error():
    with pytest.raises(ValueError, match="ELF64"):
        sass_facts.text_sections(b"not an elf file at all")


def _ptxas_build() -> str:
    exe = ptxas_facts.ptxas_path()
    if exe is None:
        return ""
    return subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout


def test_decoder_reads_the_suite_as_cuobjdump_did(tmp_path):
    header = REFERENCE.read_text().splitlines()[1]
    build = re.search(r"Build (\S+?)\)", header).group(1)
    if build not in _ptxas_build():
        pytest.skip(f"needs the ptxas build the reference was listed with ({build})")
    cubin = tmp_path / "suite.cubin"
    subprocess.run([ptxas_facts.ptxas_path(), "-arch=sm_90", "-O3", str(SUITE), "-o", str(cubin)],
                   capture_output=True, check=True)
    sections = sass_facts.text_sections(cubin.read_bytes())
    lines = REFERENCE.read_text().splitlines()
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    assert len(rows) == 18
    for row in rows:
        code = sections[row["kernel"]]
        assert sass_facts.memory_order(code) == row["memory_order"], row["kernel"]
        branches = " ".join(f"{i.offset:x}>{i.target:x}" for i in sass_facts.decode(code) if i.kind == "B")
        assert branches == row["branches"], row["kernel"]
    groups = sass_facts.copy_groups(cubin.read_bytes())
    assert groups["tcs_mma_ldm_1w"] == 3  # GG SS GGG SSS GGG SSS: 8 loads in 3 groups
    assert groups["tcs_wmma_smem_128x128"] == 4 and "tcs_mma_ldm_cpasync" not in groups
    # tcs_mma_lds's copy loop (two 16-byte copies a thread, trip count 2) runs its peeled iterations only
    assert sass_facts.block_orders(cubin.read_bytes())["tcs_mma_lds"] == ["GSGS", "GSGS", "GGSS"]
    # its unrolled copy loop: each pair of LDGs issues after the STSs that waited for the pair before
    assert sass_facts.loop_waits(cubin.read_bytes())["tcs_mma_lds"] == [";;0.1;;2.3;;4.5;"]
    orders = sass_facts.loop_orders(cubin.read_bytes())
    assert orders["tcs_mma_ldm_1w"] == ["GGSSGGGSSSGGGSSS"]
    # the 2:4 GEMM from global: 15 of a k-step's 21 loads before its first HMMA (two k-steps per iteration)
    assert orders["tcs_mmasp_gmem"] == ["G" * 15 + "HH" + "G" * 8 + "H" + "G" * 4 + "H" + "G" * 15 + "HHHH"]


# Four independent copies global -> shared by one warp: ptxas's copy grouping g puts ceil(4 / g) memory
# latencies on the warp's path (0: the PTX-only schedule, every load first).
COPIES = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry copies(.param .u64 src, .param .u64 dst)
{
  .reg .b32 %r<24>;
  .reg .b64 %rd<8>;
  .shared .align 16 .b8 tile[2048];
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd7, [dst];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r2, tile;
  shl.b32 %r3, %r1, 4;
  add.u32 %r4, %r2, %r3;
  ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd3];
  st.shared.v4.u32 [%r4], {%r5, %r6, %r7, %r8};
  ld.global.v4.u32 {%r9, %r10, %r11, %r12}, [%rd3+512];
  st.shared.v4.u32 [%r4+512], {%r9, %r10, %r11, %r12};
  ld.global.v4.u32 {%r13, %r14, %r15, %r16}, [%rd3+1024];
  st.shared.v4.u32 [%r4+1024], {%r13, %r14, %r15, %r16};
  ld.global.v4.u32 {%r17, %r18, %r19, %r20}, [%rd3+1536];
  st.shared.v4.u32 [%r4+1536], {%r17, %r18, %r19, %r20};
  bar.sync 0;
  ld.shared.u32 %r21, [%r4+1540];
  cvta.to.global.u64 %rd4, %rd7;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd4, %rd5;
  st.global.u32 [%rd6], %r21;
  ret;
}
"""


def _launch(ptx: str, name: str, words: int, read: np.ndarray, copy_groups: dict[str, int],
            sass_loops: dict[str, list[str]],
            copy_blocks: dict[str, list[str]] | None = None) -> tuple[Engine, dict]:
    """One warp of `name` over `words` random words given the schedule facts; its output checked (lane l
    stores word `read[l]` of the input)."""
    eng = Engine("h100", ptxas_facts=False)
    facts = ptxas_facts.PtxasFacts(copy_groups=copy_groups, loop_orders=sass_loops,
                                   block_orders=copy_blocks or {})
    eng._eng.load_ptx(ptx.encode(), f"<{name}>", sass_facts_of(facts))
    src, dst = eng.malloc(4 * words), eng.malloc(128)
    data = np.random.default_rng(1).integers(0, 2**32, words, dtype=np.uint32)
    eng.copy_to(src, data)
    stats = eng.launch(name, 1, 32, [src, dst])
    assert (eng.copy_from(dst, 32, np.uint32) == data[read]).all()
    return eng, stats


def _cycles(group: int) -> float:
    groups = {"copies": group} if group else {}
    _, stats = _launch(COPIES, "copies", 512, 384 + 4 * np.arange(32) + 1, groups, {})
    return float(stats["gpu_sim_cycle"])


def test_the_copy_grouping_puts_one_memory_latency_per_group_on_the_path():
    free, four, two, one = (_cycles(g) for g in (0, 4, 2, 1))
    assert four == free  # a group of 4 holds all four copies: the PTX-only schedule
    step = (one - free) / 3  # each further group adds one load latency
    assert step > 200  # a DRAM latency on the h100 config, not an issue slot
    assert two - free == pytest.approx(step, rel=0.15)


# COPIES with its copies a block of their own (a branch ends it), as a loop's peeled iterations are.
COPY_BLOCK = COPIES.replace("  bar.sync 0;", "  bra.uni $L_read;\n$L_read:\n  bar.sync 0;")


def test_a_straight_line_copy_block_takes_ptxas_order_from_the_sass():
    """tcs_mma_lds's peeled copy iterations (`G S G S`): each load waits for the store before it."""
    read = 384 + 4 * np.arange(32) + 1
    _, free = _launch(COPY_BLOCK, "copies", 512, read, {}, {})
    _, same = _launch(COPY_BLOCK, "copies", 512, read, {}, {}, {"copies": ["GGGGSSSS"]})
    _, serial = _launch(COPY_BLOCK, "copies", 512, read, {}, {}, {"copies": ["GSGSGSGS"]})
    _, grouped = _launch(COPY_BLOCK, "copies", 512, read, {"copies": 1}, {})
    assert same["gpu_sim_cycle"] == free["gpu_sim_cycle"]
    assert serial["gpu_sim_cycle"] == grouped["gpu_sim_cycle"]  # four memory latencies, as a group of 1
    assert serial["gpu_sim_cycle"] - free["gpu_sim_cycle"] > 3 * 200
    # a loop's order is no order for a straight-line block; nor is a copy block's for a block with more
    _, loop = _launch(COPY_BLOCK, "copies", 512, read, {}, {"copies": ["GSGSGSGS"]})
    assert loop["gpu_sim_cycle"] == free["gpu_sim_cycle"]
    _, mixed = _launch(COPIES, "copies", 512, read, {}, {}, {"copies": ["GSGSGSGS"]})
    assert mixed["gpu_sim_cycle"] == _launch(COPIES, "copies", 512, read, {}, {})[1]["gpu_sim_cycle"]


# A loop of two copies global -> shared (a warp's 32 lanes, 16 bytes each), 8 iterations, not unrolled.
LOOP = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry loop2(.param .u64 src, .param .u64 dst)
{
  .reg .pred %p<2>;
  .reg .b32 %r<24>;
  .reg .b64 %rd<8>;
  .shared .align 16 .b8 tile[1024];
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd7, [dst];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r2, tile;
  shl.b32 %r3, %r1, 4;
  add.u32 %r4, %r2, %r3;
  mov.u32 %r22, 0;
$L_loop:
  .pragma "nounroll";
  ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd3];
  st.shared.v4.u32 [%r4], {%r5, %r6, %r7, %r8};
  ld.global.v4.u32 {%r9, %r10, %r11, %r12}, [%rd3+512];
  st.shared.v4.u32 [%r4+512], {%r9, %r10, %r11, %r12};
  add.s64 %rd3, %rd3, 1024;
  add.u32 %r22, %r22, 1;
  setp.lt.u32 %p1, %r22, 8;
  @%p1 bra $L_loop;
  bar.sync 0;
  ld.shared.u32 %r21, [%r4+516];
  cvta.to.global.u64 %rd4, %rd7;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd4, %rd5;
  st.global.u32 [%rd6], %r21;
  ret;
}
"""


def _loop(orders: list[str]) -> tuple[str, float]:
    eng, stats = _launch(LOOP, "loop2", 2048, 7 * 256 + 128 + 4 * np.arange(32) + 1, {},
                         {"loop2": orders} if orders else {})
    body = [text.split()[0] for text, _, _ in eng._eng.kernel_code("loop2")]
    kinds = "".join("G" if op.startswith("ld.global") else "S" if op.startswith("st.shared") else ""
                    for op in body)
    return kinds, float(stats["gpu_sim_cycle"])


def test_a_loop_is_scheduled_in_ptxas_order_where_the_sass_loop_matches():
    free, free_cycles = _loop([])
    assert free == "GGSS"  # the PTX-only schedule hoists both loads
    interleaved, slow = _loop(["GSGS"])
    assert interleaved == "GSGS"
    assert slow - free_cycles > 8 * 200  # a memory latency more per iteration
    assert _loop(["GGSS"]) == (free, free_cycles)
    # an order the loop's dependencies contradict (a store before its load), or other instructions than the
    # loop's: the PTX-only schedule
    assert _loop(["SGSG"]) == (free, free_cycles)
    assert _loop(["GGGSSS"]) == (free, free_cycles)


# Two loads a step, each summed into its own accumulator, 8 steps (a gather's inner loop, unrolled 2x: the
# PTX-only schedule issues all four loads of an iteration together).
GATHER = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry gather4(.param .u64 src, .param .u64 dst)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<12>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd7, [dst];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  mov.f32 %f1, 0f00000000;
  mov.f32 %f2, 0f00000000;
  mov.u32 %r2, 0;
$L_loop:
  .pragma "nounroll";
  ld.global.f32 %f3, [%rd3];
  ld.global.f32 %f4, [%rd3+4096];
  add.f32 %f1, %f1, %f3;
  add.f32 %f2, %f2, %f4;
  ld.global.f32 %f5, [%rd3+8192];
  ld.global.f32 %f6, [%rd3+12288];
  add.f32 %f1, %f1, %f5;
  add.f32 %f2, %f2, %f6;
  add.s64 %rd3, %rd3, 16384;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, 8;
  @%p1 bra $L_loop;
  add.f32 %f7, %f1, %f2;
  add.s64 %rd4, %rd7, %rd2;
  st.global.f32 [%rd4], %f7;
  ret;
}
"""


def _gather(waits: list[str]) -> float:
    """Cycles of one warp of GATHER with ptxas's loop order GGGG and the given load waits; output checked."""
    eng = Engine("h100", ptxas_facts=False)
    facts = ptxas_facts.PtxasFacts(loop_orders={"gather4": ["GGGG"]},
                                   loop_waits={"gather4": waits} if waits else {})
    eng._eng.load_ptx(GATHER.encode(), "<gather4>", sass_facts_of(facts))
    data = np.random.default_rng(4).random(8 * 4096, dtype=np.float32)
    src, dst = eng.malloc(data.nbytes), eng.malloc(128)
    eng.copy_to(src, data)
    stats = eng.launch("gather4", 1, 32, [src, dst])
    want = data.reshape(32, 1024)[:, :32].sum(axis=0, dtype=np.float64)
    np.testing.assert_allclose(eng.copy_from(dst, 32, np.float32), want, rtol=1e-5)
    return float(stats["gpu_sim_cycle"])


def test_loads_issued_after_a_consumer_of_earlier_loads_wait_for_them():
    """spmm_csr's SASS: the FFMA of a step's loads comes before the next step's LDGs (`;;0.1;`), so each
    step waits a memory latency; the PTX-only schedule overlaps both steps' loads."""
    free = _gather([])
    assert _gather([";;;"]) == free
    serial = _gather([";;0.1;"])
    assert serial - free > 8 * 200  # a memory latency more per iteration, not an issue slot


# One warp, 8 k-steps of a WMMA GEMM with both fragments from global memory (A 16 x 128 and B 128 x 16,
# column-major: every k-step reads fresh sectors), not unrolled; D = A @ B stored row-major.
WMMA_LOOP = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry wloop(.param .u64 a, .param .u64 b, .param .u64 d)
{
  .reg .pred %p<2>;
  .reg .b32 %r<24>;
  .reg .f32 %f<9>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [d];
  mov.u32 %r17, 16;
  mov.u32 %r18, 128;
  mov.f32 %f1, 0f00000000; mov.f32 %f2, 0f00000000; mov.f32 %f3, 0f00000000; mov.f32 %f4, 0f00000000;
  mov.f32 %f5, 0f00000000; mov.f32 %f6, 0f00000000; mov.f32 %f7, 0f00000000; mov.f32 %f8, 0f00000000;
  mov.u32 %r20, 0;
$L_loop:
  .pragma "nounroll";
  wmma.load.a.sync.aligned.col.m16n16k16.global.f16 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1], %r17;
  wmma.load.b.sync.aligned.col.m16n16k16.global.f16 {%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16},
      [%rd2], %r18;
  wmma.mma.sync.aligned.col.col.m16n16k16.f32.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8},
      {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, {%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16},
      {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8};
  add.s64 %rd1, %rd1, 512;
  add.s64 %rd2, %rd2, 32;
  add.u32 %r20, %r20, 1;
  setp.lt.u32 %p1, %r20, 8;
  @%p1 bra $L_loop;
  wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd3], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, %r17;
  ret;
}
"""


def _wmma_loop(orders: list[str]) -> float:
    """Cycles of WMMA_LOOP given ptxas's loop order; its D checked against numpy."""
    eng = Engine("h100", ptxas_facts=False)
    facts = ptxas_facts.PtxasFacts(loop_orders={"wloop": orders} if orders else {})
    eng._eng.load_ptx(WMMA_LOOP.encode(), "<wloop>", sass_facts_of(facts))
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-1, 1, (16, 128)).astype(np.float16), rng.uniform(-1, 1, (128, 16)).astype(np.float16)
    da, db, dd = eng.malloc(a.nbytes), eng.malloc(b.nbytes), eng.malloc(16 * 16 * 4)
    eng.copy_to(da, np.ascontiguousarray(a.T))
    eng.copy_to(db, np.ascontiguousarray(b.T))
    stats = eng.launch("wloop", 1, 32, [da, db, dd])
    got = eng.copy_from(dd, 256, np.float32).reshape(16, 16)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)
    return float(stats["gpu_sim_cycle"])


def test_loads_ptxas_splits_around_an_hmma_wait_for_its_other_operands():
    """tcs_wmma_sample's SASS: two of B's four LDGs after the first HMMA of the wmma.mma (`GGGGGG H GG H`),
    so each k-step waits a second memory latency; all eight before the HMMAs: one latency, the PTX view."""
    free = _wmma_loop([])
    assert _wmma_loop(["GGGGGGGGHH"]) == free
    split = _wmma_loop(["GGGGGGHGGH"])
    assert split - free > 8 * 200  # a memory latency more per k-step, not an issue slot
    # other instructions than the loop's (a wmma.load of A or B is four LDGs): the PTX-only schedule
    assert _wmma_loop(["GGGGGHGGH"]) == free

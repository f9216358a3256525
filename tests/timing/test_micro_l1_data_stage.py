"""The L1's data stage (issue 43, step 25): a wavefront reads one sector of each of a 128-byte line's four
sector slots, so a warp's load whose sectors share a slot in different lines takes a wavefront per sector
(ncu `l1tex__data_pipe_lsu_wavefronts` per request on the H100, results/reference/h100_l1_metrics.csv: 35 for
lanes 128 bytes apart, 7.9 for 8 rows of 16 bytes 512 bytes apart); and a 16x16 wmma fragment from global
memory, four LDG.32 that each read half its sectors, passes its sectors twice. Shared memory: 64- and 128-bit
accesses are served in half- and quarter-warp phases, a wmma fragment (one LDSM.x4) as four 8-row matrices,
the phases' wavefronts adding up. Pinned with 32 warps of one CTA (the data stage's throughput: cycles per
extra warp access; smem.cycles_per_wavefront is 1 on the h100)."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sim import Engine

WARPS = 32


def _ptx(accesses: int, body: str) -> str:
    """One warp-strided kernel: %rd3 = src + lane * stride (global), %r4 = tile + lane * stride (shared),
    %r5 = tile; `body` repeated `accesses` times; %f0 stored per thread."""
    return f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry l1(.param .u64 src, .param .u64 dst, .param .u32 stride)
{{
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  .shared .align 16 .b8 tile[8192];
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd6, [dst];
  ld.param.u32 %r3, [stride];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 31;
  mul.wide.u32 %rd2, %r2, %r3;
  add.s64 %rd3, %rd1, %rd2;
  mul.lo.u32 %r14, %r2, %r3;
  mov.u32 %r5, tile;
  add.u32 %r4, %r5, %r14;
  mov.f32 %f0, 0f3F800000;
  mov.f32 %f1, %f0; mov.f32 %f2, %f0; mov.f32 %f3, %f0;
{body * accesses}
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd6, %rd4;
  st.global.f32 [%rd5], %f0;
  ret;
}}
"""


STRIDED = "  ld.global.f32 %f0, [%rd3];\n"
# A 16 x 16 column-major A fragment, lda = 256 halves (512 bytes): 16 lines, every sector in one slot.
FRAGMENT = ("  wmma.load.a.sync.aligned.col.m16n16k16.global.f16 {%r6, %r7, %r8, %r9, %r6, %r7, %r8, %r9}, "
            "[%rd1], 256;\n  mov.b32 %f0, %r6;\n")


def _per_access(body: str, stride: int) -> float:
    """Cycles per extra warp access of `body`: 64 vs 128 per thread by 32 warps of one CTA, the global data
    L1-resident after the first."""
    cycles = []
    for accesses in (64, 128):
        e = Engine("h100")
        e.load_ptx(_ptx(accesses, body))
        src, dst = e.malloc(256 * 512), e.malloc(WARPS * 32 * 4)
        e.copy_to(src, np.random.default_rng(0).uniform(-1, 1, 256 * 128).astype(np.float32))
        cycles.append(e.launch("l1", 1, 32 * WARPS, [src, dst, stride])["gpu_sim_cycle"])
    return (cycles[1] - cycles[0]) / (64 * WARPS)


@pytest.mark.parametrize(("stride", "wavefronts"), [(4, 1), (16, 4), (64, 16), (128, 32)])
def test_sectors_in_one_slot_of_different_lines_take_a_wavefront_each(stride, wavefronts):
    # 4: one line; 16: 16 sectors in 4 lines, 4 per slot; 64: 32 sectors in 16 lines, two slots; 128: 32
    # lines, one slot (ceil(sectors / 4), the conflict-free count, would say 1, 4, 8 and 8)
    assert _per_access(STRIDED, stride) == pytest.approx(wavefronts, rel=0.02)


def test_a_wmma_fragment_from_global_passes_its_sectors_twice():
    # 16 sectors in one slot, read by two of its four LDG.32 each
    assert _per_access(FRAGMENT, 0) == pytest.approx(2 * 16, rel=0.02)


def test_a_128_bit_shared_access_conflicts_within_quarter_warps():
    # 16 bytes a lane, lanes 128 bytes apart: each quarter warp's 8 lanes hit the same four banks (8 ways),
    # the four quarters one after another: 32 wavefronts (a whole-warp count would say 8); lanes 16 bytes
    # apart: 4, conflict-free
    store = "  st.shared.v4.f32 [%r4], {%f0, %f1, %f2, %f3};\n"
    assert _per_access(store, 128) == pytest.approx(32, rel=0.02)
    assert _per_access(store, 16) == pytest.approx(4, rel=0.02)


def test_a_wmma_fragment_from_shared_is_read_as_four_8_row_matrices():
    # rows 32 bytes apart (ld = 16 halves, the 512 bytes contiguous): each matrix's 8 rows of 16 bytes span
    # 256 bytes, two rows per bank: 2 wavefronts a matrix, 8 a fragment (a whole-access count would say 4);
    # rows 16 halves + 8 apart (48 bytes): conflict-free matrices, 4
    frag = ("  wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 "
            "{%r6, %r7, %r8, %r9, %r10, %r11, %r12, %r13}, [%r5], LD;\n  mov.b32 %f0, %r6;\n")
    assert _per_access(frag.replace("LD", "16"), 0) == pytest.approx(8, rel=0.02)
    assert _per_access(frag.replace("LD", "24"), 0) == pytest.approx(4, rel=0.02)

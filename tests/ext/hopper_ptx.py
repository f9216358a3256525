"""Test helpers for the Hopper extension: wgmma shared-memory images (the PTX ISA's canonical layouts and
matrix descriptors, written here from the ISA's tables), fragment maps and the PTX of a one-instruction
wgmma kernel."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SWIZZLE_CODE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
SWIZZLE_WIDTH = {"none": 16, "128B": 128, "64B": 64, "32B": 32}
SWIZZLE_BITS = {"none": 0, "128B": 3, "64B": 2, "32B": 1}


@dataclass(frozen=True)
class Layout:
    """One operand's shared-memory layout: majorness, swizzle and the descriptor's byte offsets."""

    mn_major: bool
    swizzle: str
    lbo: int
    sbo: int


def swizzled(addr: np.ndarray, swizzle: str) -> np.ndarray:
    """Swizzle<s,4,3> on absolute shared addresses: bits [4, 4+s) ^= bits [7, 7+s)."""
    mask = (1 << SWIZZLE_BITS[swizzle]) - 1
    return addr ^ (((addr >> 7) & mask) << 4)


def element_offsets(lay: Layout, mn: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Byte offset (before the swizzle) of f16 element (mn, k) in the ISA's canonical layout (T = 8)."""
    w = SWIZZLE_WIDTH[lay.swizzle]
    if not lay.mn_major and lay.swizzle == "none":   # ((8,m),(T,2k)):((1T,SBO),(1,LBO))
        return (mn % 8) * 16 + (mn // 8) * lay.sbo + (k % 8) * 2 + (k // 8) * lay.lbo
    if not lay.mn_major:                             # ((8,m),(T,2k)):((cT,SBO),(1,T))
        return (mn % 8) * w + (mn // 8) * lay.sbo + k * 2
    if lay.swizzle == "none":                        # ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
        return (mn % 8) * 2 + (mn // 8) * lay.sbo + (k % 8) * 16 + (k // 8) * lay.lbo
    line = 8 * (w // 16)                             # ((T,c,m),(8,k)):((1,T,LBO),(cT,SBO))
    return (mn % line) * 2 + (mn // line) * lay.lbo + (k % 8) * w + (k // 8) * lay.sbo


def default_layout(mn_major: bool, swizzle: str, mn_extent: int, k_extent: int) -> Layout:
    """A dense layout of an mn_extent x k_extent operand (the byte offsets a CUTLASS-style tile would use)."""
    w = SWIZZLE_WIDTH[swizzle]
    if not mn_major and swizzle == "none":
        return Layout(False, swizzle, lbo=128, sbo=128 * (k_extent // 8))
    if not mn_major:
        return Layout(False, swizzle, lbo=16, sbo=8 * w)
    if swizzle == "none":
        return Layout(True, swizzle, lbo=16 * mn_extent, sbo=128)
    line = 8 * (w // 16)
    return Layout(True, swizzle, lbo=w * k_extent if mn_extent > line else 16, sbo=8 * w)


def place(image: np.ndarray, start: int, lay: Layout, mat: np.ndarray) -> None:
    """Writes the f16 matrix `mat` (mn x k) into the byte image at `start` (a shared offset whose
    absolute address is 1024-aligned plus `start`)."""
    mn, k = np.meshgrid(np.arange(mat.shape[0]), np.arange(mat.shape[1]), indexing="ij")
    addr = swizzled(start + element_offsets(lay, mn, k), lay.swizzle)
    bits = mat.astype(np.float16).view(np.uint16)
    image[addr] = (bits & 0xFF).astype(np.uint8)
    image[addr + 1] = (bits >> 8).astype(np.uint8)


def descriptor(start: int, lay: Layout) -> int:
    """The 64-bit matrix descriptor of an operand at shared offset `start` (1024-aligned base)."""
    repeat = 8 * SWIZZLE_WIDTH[lay.swizzle]
    base = (start >> 7) & 7 if lay.swizzle != "none" and start % repeat else 0
    return (((start & 0x3FFFF) >> 4) | ((lay.lbo >> 4) << 16) | ((lay.sbo >> 4) << 32) | (base << 49)
            | (SWIZZLE_CODE[lay.swizzle] << 62))


def d_rowcol(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Accumulator fragment map: [thread, i] -> (row, col) of the 64 x n D (PTX ISA wgmma D figure)."""
    t = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    warp, lane = t // 32, t % 32
    return 16 * warp + lane // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (lane % 4) + i % 2


def a_rowcol() -> tuple[np.ndarray, np.ndarray]:
    """A register fragment map: [thread, e] (e = 0..7, two f16 per .b32) -> (row, k) of the 64 x 16 A."""
    t = np.arange(128)[:, None]
    e = np.arange(8)[None, :]
    warp, lane = t // 32, t % 32
    return 16 * warp + lane // 4 + 8 * ((e // 2) % 2), 2 * (lane % 4) + e % 2 + 8 * (e // 4)


def mma_ptx(n: int, dtype: str, a_regs: bool, sparse: bool, scale_d: int, sa: int, sb: int, ta: int, tb: int,
            smem_bytes: int, fence: bool = True) -> str:
    """A kernel of 128 threads: copy the image to shared memory, load D, one wgmma.mma_async, store D.

    Parameters: img (u64), words (u32), dio (u64, f32 [thread][n/2]), adesc, bdesc (u64; start fields are
    offsets into the shared buffer), aregs (u64, b32 [thread][4]), meta (u64, b32 [thread])."""
    nd = n // 2
    k = 32 if sparse else 16
    dregs = ",".join(f"%f{i}" for i in range(nd))
    a_opnd = "{%r10,%r11,%r12,%r13}" if a_regs else "%rd8"
    sp = ".sp" if sparse else ""
    extra = "%r14, 0, " if sparse else ""
    trans = f"{tb}" if a_regs else f"{ta}, {tb}"
    loads = "\n".join(f"  ld.global.f32 %f{i}, [%rd5+{4 * i}];" for i in range(nd))
    stores = "\n".join(f"  st.global.f32 [%rd5+{4 * i}], %f{i};" for i in range(nd))
    fence_line = "  wgmma.fence.sync.aligned;" if fence else ""
    return f"""
.version 8.7
.target sm_90a
.address_size 64
.visible .entry wg(.param .u64 img, .param .u32 words, .param .u64 dio, .param .u64 adesc, .param .u64 bdesc,
                   .param .u64 aregs, .param .u64 meta)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<32>;
  .reg .f32 %f<{max(nd, 1)}>;
  .reg .b64 %rd<20>;
  .shared .align 1024 .b8 smem[{smem_bytes}];
  ld.param.u64 %rd1, [img];
  ld.param.u32 %r1, [words];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %r2;
  mov.u32 %r7, smem;
$COPY:
  setp.ge.u32 %p1, %r3, %r1;
  @%p1 bra $DONE;
  mul.wide.u32 %rd2, %r3, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r4, [%rd3];
  shl.b32 %r6, %r3, 2;
  add.u32 %r5, %r7, %r6;
  st.shared.u32 [%r5], %r4;
  add.u32 %r3, %r3, 128;
  bra $COPY;
$DONE:
  bar.sync 0;
  ld.param.u64 %rd4, [dio];
  mul.wide.u32 %rd6, %r2, {4 * nd};
  add.s64 %rd5, %rd4, %rd6;
{loads}
  ld.param.u64 %rd10, [aregs];
  mul.wide.u32 %rd11, %r2, 16;
  add.s64 %rd12, %rd10, %rd11;
  ld.global.u32 %r10, [%rd12];
  ld.global.u32 %r11, [%rd12+4];
  ld.global.u32 %r12, [%rd12+8];
  ld.global.u32 %r13, [%rd12+12];
  ld.param.u64 %rd13, [meta];
  mul.wide.u32 %rd14, %r2, 4;
  add.s64 %rd15, %rd13, %rd14;
  ld.global.u32 %r14, [%rd15];
  shr.u32 %r8, %r7, 4;
  cvt.u64.u32 %rd16, %r8;
  ld.param.u64 %rd8, [adesc];
  add.s64 %rd8, %rd8, %rd16;
  ld.param.u64 %rd9, [bdesc];
  add.s64 %rd9, %rd9, %rd16;
{fence_line}
  wgmma.mma_async{sp}.sync.aligned.m64n{n}k{k}.f32.{dtype}.{dtype} {{{dregs}}}, {a_opnd}, %rd9,
      {extra}{scale_d}, {sa}, {sb}, {trans};
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
{stores}
  ret;
}}
"""

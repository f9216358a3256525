"""PTX of one-warp wmma.smma.L kernels (paper 004) and the chunk memory format the engine reads."""

from __future__ import annotations

import numpy as np

PAD = 0xFF


def _regs(prefix: str, first: int, n: int) -> str:
    return "{" + ", ".join(f"%{prefix}{first + i}" for i in range(n)) + "}"


def smma_tile_ptx(L: int, W: int, chain: int = 1, b_layout: str = "row") -> str:
    """Kernel `smma_l{L}_w{W}(vals, coords, b, c, d)`: D = C + chunk x B, the mma repeated `chain` times
    with D fed back as C (a dependent chain). vals: 16 x W fp16, coords: 16 x W u8 (0xFF = padding),
    b: L x 16 fp16 (`b_layout` in memory, L/16 stacked 16x16 blocks), c/d: 16 x 16 f32 row-major."""
    na, nx, nb = W // 4, -(-W // 8), L // 2
    a, x, b, c = _regs("a", 0, na), _regs("x", 0, nx), _regs("b", 0, nb), _regs("c", 0, 8)
    load_b = f"wmma.load.b.sync.aligned.{b_layout}.m16n16k16.global.f16"
    loads_b = "\n".join(f"  {load_b} {_regs('b', 8 * i, 8)}, [%rd3+{512 * i}], 16;" for i in range(L // 16))
    mma = f"  wmma.smma.mma.sync.aligned.m16n16.l{L}.w{W}.row.{b_layout}.f32.f32 {c}, {a}, {x}, {b}, {c};"
    return f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry smma_l{L}_w{W}(.param .u64 pv, .param .u64 px, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{{
  .reg .b32 %a<{na}>;
  .reg .b32 %x<{nx}>;
  .reg .b32 %b<{nb}>;
  .reg .f32 %c<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [pv];
  ld.param.u64 %rd2, [px];
  ld.param.u64 %rd3, [pb];
  ld.param.u64 %rd4, [pc];
  ld.param.u64 %rd5, [pd];
  wmma.smma.load.a.sync.aligned.m16n16.l{L}.w{W}.global.f16 {a}, [%rd1];
  wmma.smma.load.x.sync.aligned.m16n16.l{L}.w{W}.global {x}, [%rd2];
{loads_b}
  wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {c}, [%rd4], 16;
{chr(10).join([mma] * chain)}
  wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd5], {c}, 16;
  ret;
}}
"""


def chunk_arrays(mask: np.ndarray, values: np.ndarray, W: int) -> tuple[np.ndarray, np.ndarray]:
    """The engine's chunk format of a 16 x L chunk: per row its non-zeros in ascending column order, values
    (fp16) and coordinates (u8), padded to W entries with value 0 and coordinate 0xFF."""
    vals = np.zeros((16, W), np.float16)
    coords = np.full((16, W), PAD, np.uint8)
    for r in range(16):
        cols = np.flatnonzero(mask[r])
        vals[r, : cols.size] = values[r, cols]
        coords[r, : cols.size] = cols
    return vals, coords

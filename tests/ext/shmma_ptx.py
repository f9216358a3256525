"""PTX of a one-warp SHMMA kernel (paper 001): D = C + A_sparse x B for one 16x16x16 tile."""

from __future__ import annotations


def _regs(prefix: str, n: int) -> str:
    return "{" + ", ".join(f"%{prefix}{i}" for i in range(n)) + "}"


def shmma_tile_ptx(k: int, b_layout: str = "row", space: str = ".global") -> str:
    """Kernel `shmma_k{k}_{b_layout}(vals, offs, b, c, d)`: loads the compressed A (16 x k fp16, row-major,
    stride k), its offsets (one 4k-bit integer per row), B (16x16 fp16, `b_layout`), C (16x16 f32), runs the
    sparse mma and stores D (16x16 f32, row-major)."""
    a, o, b, c, d = _regs("a", 4), _regs("o", 1), _regs("b", 8), _regs("c", 8), _regs("d", 8)
    return f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry shmma_k{k}_{b_layout}(.param .u64 pv, .param .u64 po, .param .u64 pb, .param .u64 pc,
                                      .param .u64 pd)
{{
  .reg .b32 %a<4>;
  .reg .b32 %o<1>;
  .reg .b32 %b<8>;
  .reg .f32 %c<8>;
  .reg .f32 %d<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [pv];
  ld.param.u64 %rd2, [po];
  ld.param.u64 %rd3, [pb];
  ld.param.u64 %rd4, [pc];
  ld.param.u64 %rd5, [pd];
  wmma.load.a.sync.aligned.row.m16n16k16.smma.k{k}{space}.f16 {a}, [%rd1];
  wmma.load.meta.sync.aligned.row.m16n16k16.smma.k{k}{space} {o}, [%rd2];
  wmma.load.b.sync.aligned.{b_layout}.m16n16k16{space}.f16 {b}, [%rd3], 16;
  wmma.load.c.sync.aligned.row.m16n16k16{space}.f32 {c}, [%rd4], 16;
  wmma.mma.sync.aligned.row.{b_layout}.m16n16k16.smma.k{k}.f32.f32 {d}, {a}, {b}, {c}, {o};
  wmma.store.d.sync.aligned.row.m16n16k16{space}.f32 [%rd5], {d}, 16;
  ret;
}}
"""

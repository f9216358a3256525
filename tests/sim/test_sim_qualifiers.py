"""'::' qualifiers inside opcodes (.shared::cta, .L2::128B) parse as one modifier."""

import numpy as np

from stcsim.sim import Engine

PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry q(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 buf[128];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, buf;
  add.s32 %r3, %r3, %r2;
  st.shared::cta.u32 [%r3], %r1;
  bar.sync 0;
  ld.shared::cta.u32 %r2, [%r3];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.L1::no_allocate.u32 [%rd3], %r2;
  ret;
}
"""


def test_shared_cta_and_cache_qualifiers():
    eng = Engine()
    eng.load_ptx(PTX)
    out = eng.malloc(128)
    eng.launch("q", 1, 32, [out])
    assert eng.copy_from(out, 32, np.uint32).tolist() == list(range(32))

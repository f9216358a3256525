"""A launch after another starts from zeroed registers and shared memory, although the engine hands it the
host memory the earlier launch used (func/huge_pool.cc keeps its regions between launches).

The engine's rule (a simulator's, not the hardware's: a GPU leaves both undefined): every register and
every byte of shared memory reads 0 until written.
"""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sim import Engine

pytestmark = pytest.mark.sim_only

# `fill`: every thread writes a word of a 1 KiB shared array and leaves its registers non-zero.
# `peek`: every thread reads its word of the same-sized array and a register it never wrote, and stores
# their OR.
PTX = """.version 8.0
.target sm_80
.address_size 64

.visible .entry fill(.param .u32 v)
{
\t.reg .b32 %r<8>;
\t.shared .align 4 .b8 buf[1024];
\tld.param.u32 %r1, [v];
\tmov.u32 %r2, %tid.x;
\tshl.b32 %r3, %r2, 2;
\tmov.u32 %r4, buf;
\tadd.s32 %r5, %r4, %r3;
\txor.b32 %r6, %r1, %r2;
\tst.shared.u32 [%r5], %r6;
\tbar.sync 0;
\tret;
}

.visible .entry peek(.param .u64 out)
{
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<4>;
\t.shared .align 4 .b8 buf[1024];
\tld.param.u64 %rd1, [out];
\tmov.u32 %r2, %tid.x;
\tshl.b32 %r3, %r2, 2;
\tmov.u32 %r4, buf;
\tadd.s32 %r5, %r4, %r3;
\tld.shared.u32 %r6, [%r5];
\tor.b32 %r7, %r6, %r1;
\tcvta.to.global.u64 %rd2, %rd1;
\tcvt.u64.u32 %rd3, %r3;
\tadd.s64 %rd2, %rd2, %rd3;
\tst.global.u32 [%rd2], %r7;
\tret;
}
"""


@pytest.mark.parametrize("config", [None, "v100", "h100"])
def test_next_launch_finds_registers_and_shared_memory_zeroed(config, rng):
    e = Engine(config)
    e.load_ptx(PTX)
    for value in rng.integers(1, 2**32, size=2, dtype=np.uint64):
        e.launch("fill", 8, 256, [np.uint32(value)])
        out = e.malloc(4 * 256)
        e.copy_to(out, rng.integers(1, 2**32, size=256, dtype=np.uint64).astype(np.uint32))
        e.launch("peek", 2, 256, [out])
        assert not e.copy_from(out, 256, np.uint32).any()

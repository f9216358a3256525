"""wmma.mma m16n16k16 reads A's and B's registers 4-7 where they differ from 0-3 (docs/isa.md, "wmma
m16n16k16": registers 4-7 duplicate 0-3, and the later ones count), on both paths: the host SIMD kernel on
the registers' lanes (ops_tensor.cc: wmma_mma_direct) and the portable fragment tables (FragTable's
overwritten elements), run in two processes, one with STCSIM_PORTABLE set.

The kernel builds each operand's fragment from two wmma.loads of different matrices: registers 0-3 from
the first, 4-7 from the second. Only element-wise code may touch a wmma fragment (the ISA leaves its layout
to the implementation), so no conforming program depends on which half counts; the rule is ours, and the two
paths must agree on it. Small-integer fp16 inputs keep every product and sum exact in fp32.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from simkit import run_python


def _regs(name: str, lo: int = 0, hi: int = 8) -> str:
    return ", ".join(f"%{name}{i}" for i in range(lo, hi))


def _mixed(first: str, second: str) -> str:
    """A fragment operand: registers 0-3 of `first`, 4-7 of `second`."""
    return "{" + _regs(first, 0, 4) + ", " + _regs(second, 4, 8) + "}"


def _load(kind: str, regs: str, ptr: str) -> str:
    return f"  wmma.load.{kind}.sync.aligned.row.m16n16k16.global.f16 {{{_regs(regs)}}}, [{ptr}];"


PTX = f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry mixed(.param .u64 a1, .param .u64 a2, .param .u64 b1, .param .u64 b2, .param .u64 c,
                      .param .u64 d)
{{
  .reg .b32 %ra<8>;
  .reg .b32 %rx<8>;
  .reg .b32 %rb<8>;
  .reg .b32 %ry<8>;
  .reg .f32 %fc<8>;
  .reg .f32 %fd<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [a1];
  ld.param.u64 %rd2, [a2];
  ld.param.u64 %rd3, [b1];
  ld.param.u64 %rd4, [b2];
  ld.param.u64 %rd5, [c];
  ld.param.u64 %rd6, [d];
{_load("a", "ra", "%rd1")}
{_load("a", "rx", "%rd2")}
{_load("b", "rb", "%rd3")}
{_load("b", "ry", "%rd4")}
  wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {{{_regs("fc")}}}, [%rd5];
  wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {{{_regs("fd")}}},
      {_mixed("ra", "rx")}, {_mixed("rb", "ry")}, {{{_regs("fc")}}};
  wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd6], {{{_regs("fd")}}};
  ret;
}}
"""

SCRIPT = """
import sys
import numpy as np
from stcsim.sim import Engine

ptx, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(seed)
mats = [rng.integers(-4, 5, size=(16, 16)).astype(np.float16) for _ in range(4)]
c = rng.integers(-8, 9, size=(16, 16)).astype(np.float32)
eng = Engine("v100")
eng.load_ptx(open(ptx).read())
ptrs = []
for m in (*mats, c):
    p = eng.malloc(m.nbytes)
    eng.copy_to(p, m)
    ptrs.append(p)
d = eng.malloc(16 * 16 * 4)
eng.launch("mixed", 1, 32, [*ptrs, d])
np.savez(out, a1=mats[0], a2=mats[1], b1=mats[2], b2=mats[3], c=c, d=eng.copy_from(d, 256, np.float32))
"""


def _run(tmp_path: Path, portable: bool, seed: int) -> dict[str, np.ndarray]:
    ptx = tmp_path / "mixed.ptx"
    ptx.write_text(PTX)
    out = tmp_path / ("portable.npz" if portable else "default.npz")
    run_python(SCRIPT, [str(ptx), str(seed), str(out)], portable)
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def test_wmma_mma_takes_registers_4_to_7_on_both_paths(tmp_path):
    seed = int(np.random.default_rng().integers(1 << 31))
    for portable in (False, True):
        r = _run(tmp_path, portable, seed)
        a2, b2 = r["a2"].astype(np.float32), r["b2"].astype(np.float32)
        expect = a2 @ b2 + r["c"]
        assert not np.array_equal(expect, r["a1"].astype(np.float32) @ r["b1"].astype(np.float32) + r["c"])
        np.testing.assert_array_equal(r["d"].reshape(16, 16), expect, err_msg=f"portable={portable}")

"""The warp scheduler policy: GTO runs the oldest ready warp greedily, LRR takes turns.

Two warps on one sub-core (an overlay with sm.sub_cores = 1) each issue a stream of independent FP32 adds
(issue interval 1 on the h100 config, so a warp can issue every cycle) and store %clock64 at their end.
"""

import numpy as np

from stcsim.sim import Engine

N = 64


def _ptx() -> str:
    adds = "\n".join(f"  add.f32 %f{4 + i}, %f1, %f2;" for i in range(N))
    return f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry stream(.param .u64 out)
{{
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  .reg .f32 %f<{N + 8}>;
  ld.param.u64 %rd1, [out];
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0f40000000;
{adds}
  mov.u64 %rd2, %clock64;
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mul.wide.u32 %rd3, %r2, 8;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u64 [%rd4], %rd2;
  ret;
}}
"""


def _ends(tmp_path, policy: str) -> np.ndarray:
    overlay = tmp_path / f"{policy}.yaml"
    overlay.write_text(f"sm:\n  sub_cores: 1\nsched:\n  policy: {policy}\n")
    eng = Engine(f"h100+warm-icache+{overlay}")  # issue order apart from instruction fetch
    eng.load_ptx(_ptx())
    out = eng.malloc(16)
    eng.launch("stream", 1, 64, [out])
    return eng.copy_from(out, 2, np.uint64).astype(np.int64)


def test_gto_runs_the_oldest_warp_to_completion_first(tmp_path):
    end0, end1 = _ends(tmp_path, "gto")
    assert end1 - end0 >= N  # warp 1 issues its stream only after warp 0's


def test_lrr_interleaves_the_warps(tmp_path):
    end0, end1 = _ends(tmp_path, "lrr")
    # Turns: both streams end together, give or take the few INT instructions after them.
    assert abs(int(end1) - int(end0)) <= 8
    # neither warp had the sub-core to itself: the 2N adds take cycles 0 .. 2N - 1 (the constant movs are
    # folded, as ptxas folds them, and take no issue cycle)
    assert min(end0, end1) >= 2 * N - 1

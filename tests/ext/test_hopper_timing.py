"""Timing of the Hopper extension on the h100 config, measured by %clock64 differences as the
microbenchmarks of benchmarks/micro do: a warpgroup's wgmma.mma_async occupies each sub-core's Tensor Core
pipe 16 N 16 / (hopper.wgmma_fma_per_cycle / 4) cycles (wgmma.sp: the same for twice the K at the 200%
sparse rate); it runs asynchronously (a chain on one accumulator does not wait for the previous result) and
completes at wgmma.wait_group, hopper.wgmma_latency cycles after its occupancy."""

from __future__ import annotations

import pytest

from stcsim.config import load_config
from stcsim.sim import Engine


def chain_ptx(n: int, count: int, sparse: bool) -> str:
    """`count` wgmma on one accumulator (descriptors of zeroed shared memory), then commit and wait 0;
    thread 0 stores the %clock64 difference."""
    d = "{" + ",".join(f"%f{i}" for i in range(n // 2)) + "}"
    if sparse:
        op = f"wgmma.mma_async.sp.sync.aligned.m64n{n}k32.f32.f16.f16 {d}, %rd2, %rd3, %r3, 0, 1, 1, 1, 0, 0;"
    else:
        op = f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {d}, %rd2, %rd3, 1, 1, 1, 0, 0;"
    body = "\n".join(f"  {op}" for _ in range(count))
    return f"""
.version 8.7
.target sm_90a
.address_size 64
.visible .entry chain(.param .u64 out)
{{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<{n // 2}>;
  .reg .b64 %rd<8>;
  .shared .align 1024 .b8 smem[16384];
  mov.u32 %r1, smem;
  shr.u32 %r2, %r1, 4;
  cvt.u64.u32 %rd2, %r2;
  or.b64 %rd3, %rd2, 0x1000080000;
  or.b64 %rd2, %rd2, 0x1000080000;
  mov.u32 %r3, 0;
  wgmma.fence.sync.aligned;
  mov.u64 %rd4, %clock64;
{body}
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  mov.u64 %rd5, %clock64;
  sub.s64 %rd6, %rd5, %rd4;
  mov.u32 %r4, %tid.x;
  setp.ne.u32 %p1, %r4, 0;
  ld.param.u64 %rd7, [out];
  @!%p1 st.global.u64 [%rd7], %rd6;
  ret;
}}
"""


def _cycles(n: int, count: int, sparse: bool = False) -> int:
    eng = Engine("h100")
    eng.load_ptx(chain_ptx(n, count, sparse))
    out = eng.malloc(8)
    eng.launch("chain", 1, 128, [out])
    return int(eng.copy_from(out, 1, "uint64")[0])


def _keys() -> dict:
    return load_config("h100").flat()


@pytest.mark.parametrize("n", [64, 256])
@pytest.mark.parametrize("sparse", [False, True])
def test_wgmma_issue_interval_per_n(n: int, sparse: bool) -> None:
    """A chain of wgmma on one accumulator costs its Tensor Core occupancy per instruction, not its
    latency."""
    k = _keys()
    busy = -(-16 * n * 16 // (k["hopper.wgmma_fma_per_cycle"] // 4))
    if sparse:
        busy = -(-2 * busy * 100 // k["hopper.wgmma_sparse_speedup_pct"])
    per = (_cycles(n, 8, sparse) - _cycles(n, 4, sparse)) / 4
    assert busy <= per <= busy + 2  # the warpgroup's rendezvous may add a cycle


def test_wait_group_waits_for_the_latency() -> None:
    """One wgmma then wait_group 0: its occupancy plus hopper.wgmma_latency (the difference of two N cancels
    the fixed cost)."""
    k = _keys()
    per_sub = k["hopper.wgmma_fma_per_cycle"] // 4
    grow = (_cycles(256, 1) - _cycles(64, 1))
    assert grow == 16 * (256 - 64) * 16 // per_sub
    assert _cycles(64, 1) >= 16 * 64 * 16 // per_sub + k["hopper.wgmma_latency"]

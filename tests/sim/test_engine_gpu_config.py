"""An Engine built from a resolved GpuConfig (a sweep point's config) times launches as its spec does."""

from __future__ import annotations

import numpy as np

from stcsim.config import load_config
from stcsim.sim import Engine

COPY = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry twice(.param .u64 src, .param .u64 dst)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.u32 %r2, [%rd4];
  add.u32 %r3, %r2, %r2;
  st.global.u32 [%rd5], %r3;
  ret;
}
"""


def _stats(config: object) -> dict:
    eng = Engine(config, ptxas_facts=False)
    eng.load_ptx(COPY)
    src, dst = eng.malloc(4 * 64), eng.malloc(4 * 64)
    data = np.random.default_rng(3).integers(0, 2**30, 64, dtype=np.uint32)
    eng.copy_to(src, data)
    stats = eng.launch("twice", 1, 64, [src, dst])
    assert (eng.copy_from(dst, 64, np.uint32) == 2 * data).all()
    return stats


def test_a_resolved_config_times_as_its_spec():
    resolved = load_config("h100")
    by_object, by_name = _stats(resolved), _stats("h100")
    assert by_object == by_name
    assert Engine(resolved).gpu_config is resolved


def test_the_digest_names_the_values_not_the_files():
    assert load_config("h100").digest() == load_config("h100").digest()
    assert load_config("h100").digest() != load_config("v100").digest()
    slower = load_config("h100", {"dram.latency": 2000})
    assert slower.digest() != load_config("h100").digest()
    assert _stats(slower)["gpu_sim_cycle"] > _stats("h100")["gpu_sim_cycle"]  # the override is what runs

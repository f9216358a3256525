"""Cycles-only launches (``Engine.launch(..., values=False)``, engine/func/value_flow.h): where no value
derived from a Tensor Core result can reach the timing, the arithmetic is skipped and every statistic stays
the same; where one can (a guard, an address), the launch computes it as usual and says so."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.harness.kernel_choice import TENSOR_CORE, math_units
from stcsim.kernels import KERNEL_SET, get_kernel
from stcsim.kernels.run import launch
from stcsim.sim import Engine
from stcsim.sparsity import get as get_pattern
from tests.timing.stats_golden import _CONFIGS, _PATTERNS, PROBLEM, SEED


def _cases() -> list[tuple[str, str, float, str]]:
    """(kernel, pattern, sparsity, config) of every Tensor Core kernel of the set, as the golden guard runs
    them (each pattern family on its configs; sm_90 kernels only on sm_90 configs)."""
    cases = []
    for kernel in KERNEL_SET:
        name = kernel.procedural_name
        if math_units(name) != TENSOR_CORE:
            continue
        for spec, sparsity in _PATTERNS[kernel.pattern_name]:
            if kernel.supports(get_pattern(spec))[0]:
                cases += [(name, spec, sparsity, config) for config in _CONFIGS[kernel.pattern_name]]
    return cases


def _launch(name: str, spec: str, sparsity: float, config: str,
            values: bool) -> tuple[np.ndarray | None, dict]:
    kernel = get_kernel(name)
    rng = np.random.default_rng(SEED)
    p = PROBLEM
    weights = rng.uniform(-1, 1, (p.m, p.k)).astype(np.float32)
    x = rng.uniform(-1, 1, (p.k, p.n)).astype(np.float32)
    operands = kernel.prepare(weights, x, get_pattern(spec), sparsity)
    return launch(kernel, Engine(config), operands, values=values)


# The kernels whose results the analysis cannot keep off the timing, and why (Engine.cycles_only_note):
# TEW's cp.async gathers follow its remainder's atomics and the result stores in the code; the ExTensor
# chunk SpMM stages its accumulators in the shared memory that holds its record offsets, inside its panel
# loop. Both are computed in a cycles-only launch; every other Tensor Core kernel of the set is skipped.
COMPUTED = ("gemm_tew_", "spmm_extensor_")


@pytest.mark.parametrize(("name", "spec", "sparsity", "config"), _cases())
def test_a_cycles_only_launch_has_the_stats_of_the_full_one(name, spec, sparsity, config):
    try:
        full_result, full = _launch(name, spec, sparsity, config, True)
    except ValueError:  # the config has no timing for one of its instructions (the golden guard's refusals)
        pytest.skip(f"{config} refuses {name}")
    quick_result, quick = _launch(name, spec, sparsity, config, False)
    computed = name.startswith(COMPUTED)
    assert quick.pop("mma_values_skipped") == (0.0 if computed else 1.0)
    assert "mma_values_skipped" not in full
    assert quick == full
    # Outputs that hold no values are not copied back (kernels.run.launch); computed ones are the full
    # launch's.
    assert full_result is not None
    if computed:
        np.testing.assert_array_equal(quick_result, full_result)
    else:
        assert quick_result is None


def test_the_note_says_where_a_result_reaches_the_timing():
    eng = Engine("h100")
    for name, inert in (("gemm_wgmma_sp_f16_f32_tile128x128x64_stage5", True),
                        ("gemm_tew_f16_f32_tile32x128x32_warp32x32_stage3", False)):
        kernel = get_kernel(name)
        eng.load_ptx(str(kernel.ptx_path))
        note = eng.cycles_only_note(kernel.entry)
        assert (note == "") == inert, note
        if not inert:
            assert "gemm_tilewise.ptx:" in note and "a Tensor Core result reaches" in note


PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry probe(.param .u64 a, .param .u64 b, .param .u64 d, .param .u64 t)
{{
  .reg .pred %p;
  .reg .b32 %ra<8>;
  .reg .b32 %rb<8>;
  .reg .b32 %r<4>;
  .reg .f32 %fd<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [d];
  ld.param.u64 %rd4, [t];
  wmma.load.a.sync.aligned.row.m16n16k16.global.f16
      {{%ra0, %ra1, %ra2, %ra3, %ra4, %ra5, %ra6, %ra7}}, [%rd1];
  wmma.load.b.sync.aligned.row.m16n16k16.global.f16
      {{%rb0, %rb1, %rb2, %rb3, %rb4, %rb5, %rb6, %rb7}}, [%rd2];
  mov.f32 %fd0, 0f00000000;
  mov.f32 %fd1, 0f00000000;
  mov.f32 %fd2, 0f00000000;
  mov.f32 %fd3, 0f00000000;
  mov.f32 %fd4, 0f00000000;
  mov.f32 %fd5, 0f00000000;
  mov.f32 %fd6, 0f00000000;
  mov.f32 %fd7, 0f00000000;
  wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {{%fd0, %fd1, %fd2, %fd3, %fd4, %fd5, %fd6, %fd7}},
      {{%ra0, %ra1, %ra2, %ra3, %ra4, %ra5, %ra6, %ra7}}, {{%rb0, %rb1, %rb2, %rb3, %rb4, %rb5, %rb6, %rb7}},
      {{%fd0, %fd1, %fd2, %fd3, %fd4, %fd5, %fd6, %fd7}};
  wmma.store.d.sync.aligned.row.m16n16k16.global.f32
      [%rd3], {{%fd0, %fd1, %fd2, %fd3, %fd4, %fd5, %fd6, %fd7}};
{tail}
  ret;
}}
"""
# What the kernel does with the result after storing it: nothing more, a branch on it, an address from it.
TAILS = {
    "stored": "",
    "guard": "  setp.gt.f32 %p, %fd0, 0f00000000;\n  @%p st.global.f32 [%rd4], %fd1;",
    "address": "  cvt.rzi.u32.f32 %r1, %fd0;\n  and.b32 %r2, %r1, 255;\n  mul.wide.u32 %rd5, %r2, 4;\n"
               "  add.s64 %rd6, %rd4, %rd5;\n  st.global.f32 [%rd6], %fd1;",
    "through_memory": "  ld.global.f32 %fd2, [%rd3];\n  setp.gt.f32 %p, %fd2, 0f00000000;\n"
                      "  @%p st.global.f32 [%rd4], %fd1;",
}


@pytest.mark.parametrize(("tail", "inert"), [("stored", True), ("guard", False), ("address", False),
                                              ("through_memory", False)])
def test_a_result_that_reaches_the_timing_is_computed(tail, inert):
    rng = np.random.default_rng()
    a = rng.integers(-4, 5, size=(16, 16)).astype(np.float16)
    b = rng.integers(-4, 5, size=(16, 16)).astype(np.float16)
    runs = []
    for values in (True, False):
        eng = Engine("v100")
        eng.load_ptx(PTX.format(tail=TAILS[tail]))
        ptrs = [eng.malloc(m.nbytes) for m in (a, b)] + [eng.malloc(16 * 16 * 4), eng.malloc(256 * 4)]
        eng.copy_to(ptrs[0], a)
        eng.copy_to(ptrs[1], b)
        stats = eng.launch("probe", 1, 32, ptrs, values=values)
        runs.append((stats, eng.copy_from(ptrs[2], 256, np.float32).reshape(16, 16)))
    (full, d_full), (quick, d_quick) = runs
    assert quick.pop("mma_values_skipped") == float(inert)
    assert (eng.cycles_only_note("probe") == "") == inert
    assert quick == full
    np.testing.assert_array_equal(d_full, a.astype(np.float32) @ b.astype(np.float32))
    if not inert:  # computed: the same outputs too
        np.testing.assert_array_equal(d_quick, d_full)


def test_values_must_be_a_bool():
    eng = Engine("v100")
    eng.load_ptx(PTX.format(tail=""))
    with pytest.raises(ValueError, match="values must be True or False"):
        eng.launch("probe", 1, 32, [0, 0, 0, 0], values="no")

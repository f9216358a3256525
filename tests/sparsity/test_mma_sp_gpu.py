"""Checks the mma.sp m16n8k32 operand layout of ``stcsim.sparsity.mma_sp`` on a real GPU (``-m gpu``).

The kernel runs ``mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32`` once per warp on lane registers
built by the module and compares D with numpy. B (32 x 8, "col") is fed as in the PTX figure for sparse
m16n8k32 .f16 B: register ``r`` of lane ``4g + t`` holds ``B[2t + 8r], B[2t + 8r + 1]`` of column ``g``;
D follows the m16n8k16 f32 accumulator layout.
"""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.sparsity.mma_sp import lane_a_fragments, lane_metadata, pack_m16n8k32
from stcsim.sparsity.nm import NM

cp = pytest.importorskip("cupy")

pytestmark = pytest.mark.gpu

SOURCE = r"""
#define MMA_SP(SEL) asm volatile( \
    "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 " \
    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, " #SEL ";" \
    : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) \
    : "r"(a[4 * l]), "r"(a[4 * l + 1]), "r"(a[4 * l + 2]), "r"(a[4 * l + 3]), \
      "r"(b[4 * l]), "r"(b[4 * l + 1]), "r"(b[4 * l + 2]), "r"(b[4 * l + 3]), "r"(e[l]))
extern "C" __global__ void mma_sp_16832(const unsigned* a, const unsigned* b, const unsigned* e,
                                        float* d, int selector) {
    const int l = threadIdx.x;
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    if (selector == 0) { MMA_SP(0x0); } else { MMA_SP(0x1); }
    for (int i = 0; i < 4; ++i) d[4 * l + i] = c[i];
}
"""


def _gpu_available() -> bool:
    try:
        return cp.cuda.runtime.getDeviceCount() > 0 and cp.cuda.Device(0).compute_capability >= "80"
    except cp.cuda.runtime.CUDARuntimeError:
        return False


def b_fragments(b: np.ndarray) -> np.ndarray:
    """Lane registers (32, 4) of a 32 x 8 fp16 B operand."""
    regs = np.zeros((32, 4), dtype=np.uint32)
    for lane in range(32):
        g, t = divmod(lane, 4)
        for r in range(4):
            regs[lane, r] = np.ascontiguousarray(b[2 * t + 8 * r : 2 * t + 8 * r + 2, g]).view(np.uint32)[0]
    return regs


def d_matrix(d_regs: np.ndarray) -> np.ndarray:
    """The 16 x 8 f32 D from lane registers (32, 4)."""
    d = np.zeros((16, 8), dtype=np.float32)
    for lane in range(32):
        g, t = divmod(lane, 4)
        d[g, 2 * t : 2 * t + 2] = d_regs[lane, :2]
        d[g + 8, 2 * t : 2 * t + 2] = d_regs[lane, 2:]
    return d


@pytest.mark.skipif(not _gpu_available(), reason="needs a CUDA GPU of compute capability >= 8.0")
@pytest.mark.parametrize("selector", [0, 1])
@pytest.mark.parametrize("seed", range(4))
def test_layout_matches_hardware(selector: int, seed: int) -> None:
    """The module's A fragments and metadata make the hardware compute W @ B for a random 2:4 tile."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-8, 9, size=(16, 32)).astype(np.float16)
    mask = NM(2, 4).prune(w, 0.5) if seed % 2 == 0 else NM(2, 4).prune(w, 0.7)
    b = rng.integers(-4, 5, size=(32, 8)).astype(np.float16)
    ops = pack_m16n8k32(w, mask)
    a_regs = lane_a_fragments(ops.tile_values(0, 0))
    e_regs = lane_metadata(ops.metadata[0, 0], selector)
    kernel = cp.RawModule(code=SOURCE, options=("-std=c++17",)).get_function("mma_sp_16832")
    d = cp.zeros(32 * 4, dtype=cp.float32)
    args = (cp.asarray(a_regs.ravel()), cp.asarray(b_fragments(b).ravel()), cp.asarray(e_regs), d)
    kernel((1,), (32,), (*args, np.int32(selector)))
    expected = np.where(mask, w, 0).astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_array_equal(d_matrix(cp.asnumpy(d).reshape(32, 4)), expected)

"""The host SIMD fragment kernels (engine/func/fragment_simd.cc: AVX2/F16C fp16 decode and tile product,
fused multiply-adds where every A and B element is a finite fp16 value, and mma.sync m16n8k16's kernel
on the registers' lanes) against the portable code, bit
for bit: the same tensor kernels on the same random fp16 bit patterns (normals, subnormals, infinities
and NaN, which the SIMD path hands to the table) run in two processes, one with STCSIM_PORTABLE set.
Every non-NaN result is identical; a NaN result is NaN in both, its payload being whichever NaN operand
the host's add returns (the compiler's operand order, in either path). On a host without AVX2/F16C both
runs take the portable path and agree trivially.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from simkit import run_python

HERE = Path(__file__).resolve().parent

SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, {here!r})
from simkit import kernels

k = kernels("tensor")
rng = np.random.default_rng(7)
out = {{}}


def halves(shape, special):
    # every finite pattern (exponent field below all-ones), and with `special` one infinity or NaN per matrix
    bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint32).astype(np.uint16)
    bits = np.where((bits & 0x7C00) == 0x7C00, bits & 0xBFFF, bits).astype(np.uint16)
    if special:
        flat = bits.reshape(-1, shape[-2] * shape[-1])
        for m in flat:
            m[rng.integers(m.size)] = rng.choice([0x7C00, 0xFC00, 0x7C01, 0x7E00, 0xFD55])
    return bits


for special in (False, True):
    for name, kdim in (("mma_m16n8k16_f16_f32", 16), ("mma_m16n8k8_f16_f32", 8)):
        A, B = halves((16, kdim), special), halves((kdim, 8), special)
        C = rng.standard_normal((16, 8)).astype(np.float32)
        *_, got = k.launch(name, 1, 32, A, B, C, np.zeros((16, 8), np.float32))
        out[f"{{name}}_{{special}}"] = got.view(np.uint32)
    for la, lb in (("row", "col"), ("col", "row"), ("row", "row")):
        A, B = halves((2, 16, 32), special), halves((2, 32, 16), special)
        C = rng.standard_normal((2, 16, 16)).astype(np.float32)
        a_mem = A if la == "row" else np.ascontiguousarray(A.transpose(0, 2, 1))
        b_mem = B if lb == "row" else np.ascontiguousarray(B.transpose(0, 2, 1))
        lda, ldb = (32 if la == "row" else 16), (16 if lb == "row" else 32)
        args = (a_mem.view(np.float16), b_mem.view(np.float16), C, np.zeros_like(C), np.int32(lda))
        *_, got = k.launch(f"wmma_f32_{{la}}_{{lb}}", 2, 32, *args, np.int32(ldb), np.int32(16), np.int32(0))
        out[f"wmma_{{la}}_{{lb}}_{{special}}"] = got.view(np.uint32)
np.savez(sys.argv[1], **out)
"""


def run(tmp_path: Path, portable: bool) -> dict[str, np.ndarray]:
    out = tmp_path / ("portable.npz" if portable else "default.npz")
    run_python(SCRIPT.format(here=str(HERE)), [str(out)], portable)
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def test_simd_and_portable_fragment_paths_agree_bit_for_bit(tmp_path):
    fast, portable = run(tmp_path, False), run(tmp_path, True)
    assert fast.keys() == portable.keys() and len(fast) == 10
    for name in fast:
        a, b = fast[name], portable[name]
        nan_a, nan_b = np.isnan(a.view(np.float32)), np.isnan(b.view(np.float32))
        np.testing.assert_array_equal(nan_a, nan_b, err_msg=name)
        np.testing.assert_array_equal(a[~nan_a], b[~nan_b], err_msg=name)
        assert (~nan_a).sum() > a.size // 4, name  # the comparison is not vacuous

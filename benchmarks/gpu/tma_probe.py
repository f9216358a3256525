"""Which TMA box starts and row strides the H100 accepts: each case of the test kernel of
tests/ext/test_hopper_tma.py (128 threads, thread 0 issues one 2D 64 x 16 u16 box load, 128B swizzle, the
driver's tensor map) in a process of its own, since a faulting TMA leaves a sticky CUDA error.

    python -m benchmarks.gpu.tma_probe            # on an sm_90 GPU with CuPy; one line per case
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

TEST = Path(__file__).parents[2] / "tests" / "ext" / "test_hopper_tma.py"
# (row elements of u16, inner coordinate, outer coordinate): row bytes 256 or 208, box start 16-byte
# aligned or not (the case the first silicon run of the test used: 104 columns at (20, 10)).
CASES = [(128, 16, 10), (128, 20, 10), (104, 16, 10), (104, 20, 10)]


def run_case(i: int) -> str:
    """Runs case `i` in this process: 'match', 'MISMATCH' or the exception."""
    spec = importlib.util.spec_from_file_location("hopper_tma_test", TEST)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cols, c0, c1 = CASES[i]
    tensor = np.random.default_rng(i).integers(1, 2**16, (40, cols), dtype=np.uint16)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            got = mod.gpu_tma(tensor, (64, 16), (c0, c1), Path(tmp))
        except Exception as exc:  # noqa: BLE001  (the probe reports what the GPU said)
            return f"{type(exc).__name__}: {exc}"
    want = mod.expected_image(tensor, (c0, c1), (64, 16), "128B")
    return "match" if np.array_equal(got, want) else "MISMATCH"


def main() -> int:
    """Runs every case in a subprocess and prints one line each."""
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        print(run_case(int(sys.argv[2])))
        return 0
    for i, (cols, c0, c1) in enumerate(CASES):
        r = subprocess.run([sys.executable, "-m", "benchmarks.gpu.tma_probe", "--case", str(i)],
                           capture_output=True, text=True, timeout=120)
        result = (r.stdout.strip().splitlines() or [f"exit {r.returncode}: {r.stderr.strip()[-300:]}"])[-1]
        print(f"row {2 * cols} B, box start ({c0}, {c1}) = byte {2 * c0} of its row: {result}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

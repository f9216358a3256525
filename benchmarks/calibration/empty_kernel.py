"""Launches an empty kernel (one CTA, then 8 CTAs per SM of 128 threads), a warm-up and a measured launch
each, so that ncu's gpc__cycles_elapsed.max of the measured launches gives the fixed cost of a launch and
of dispatching CTAs on the GPU. Run under ncu on a GPU machine:
``python -m benchmarks.calibration.empty_kernel``.
"""

from __future__ import annotations

from stcsim.gpu.runner import GpuEngine

EMPTY = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry empty_kernel()
{
  ret;
}
"""


def main() -> int:
    """Four launches: (1 CTA) x 2, (8 x 132 CTAs) x 2."""
    eng = GpuEngine(repeats=1)
    eng.load_ptx(EMPTY)
    for grid in (1, 8 * 132):
        eng.launch("empty_kernel", (grid, 1, 1), (128, 1, 1), [])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

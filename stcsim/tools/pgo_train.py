"""The training run of the engine's profile-guided build (CMakeLists.txt, option STCSIM_PGO).

The build compiles the engine twice: first instrumented (``-fprofile-generate``), then optimised with the
branch and call counts that copy recorded (``-fprofile-use``). Between the two, CMake runs this module with
the instrumented extension: it loads that file as ``stcsim._engine`` (this source tree's Python package around
it) and simulates a small mix of the kernel classes the toolkit runs - dense WMMA, mma.sync with cp.async,
WMMA from global memory, SIMT, the sparse mma.sp kernel and a functional-only launch - so the counts weight
the paths those launches take. Each result is checked against numpy, so a training run that computes
garbage fails instead of training the build on it.

Run by the build as ``python -m stcsim.tools.pgo_train --module PATH`` (from the source tree).
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

# (kernel, M x N x K, config); small shapes: the counts need the mix, not the size. The WMMA GEMM's grid (256
# CTAs, three to four per V100 SM) gives its sub-cores several warps each, as the bench GEMMs and network
# layers have them: the scheduler's paths over more than one warp get their counts (one CTA per SM left them
# out; -1.4 % host instructions on WMMA 1024x1024x128 with the profile of this shape).
TRAINING_CASES: tuple[tuple[str, tuple[int, int, int], str | None], ...] = (
    ("gemm_wmma_f16_f32_tile64x64x32_warp32x32", (1024, 1024, 128), "v100"),
    ("gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3", (256, 256, 512), "h100"),
    ("gemm_wmma_global_f16_f32_tile32x32x16_warp16x16", (128, 128, 128), "v100"),
    ("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", (128, 128, 128), "v100"),
    ("gemm_mma_sp_f16_f32_tile128x128x64_warp64x64_stage3", (256, 256, 256), "a100"),
    ("gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3", (256, 256, 256), None),
)


def load_engine_module(path: Path) -> None:
    """Makes the extension file `path` the module ``stcsim._engine`` for this process (before any stcsim
    module imports it); raises ImportError, leaving sys.modules as it was, when `path` cannot be loaded."""
    spec = importlib.util.spec_from_file_location("stcsim._engine", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the engine extension {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["stcsim._engine"] = module


def train(cases: tuple[tuple[str, tuple[int, int, int], str | None], ...] = TRAINING_CASES) -> list[str]:
    """Runs each case once (fixed seed) and checks its result against the kernel's numpy reference; returns
    one line per case. Raises RuntimeError on a wrong result."""
    from stcsim.kernels import GemmProblem, get_kernel, verify_gemm
    from stcsim.kernels.descriptors.gemm_mma_sp import TWO_FOUR
    from stcsim.sim import Engine

    lines = []
    for name, shape, config in cases:
        sparse = "_sp_" in name
        start = time.perf_counter()
        check = verify_gemm(get_kernel(name), Engine(config), GemmProblem(*shape), seed=1,
                            pattern=TWO_FOUR if sparse else "dense", sparsity=0.5 if sparse else 0.0)
        seconds = time.perf_counter() - start
        if not check.ok:
            raise RuntimeError(f"{name}: relative error {check.rel_error:.3g} over {check.tolerance:.3g} "
                               "in the training run")
        lines.append(f"{name} {'x'.join(map(str, shape))} {config or 'functional'}: "
                     f"{int(check.stats['warp_insts'])} warp instructions, {seconds:.2f} s")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command line: loads the instrumented extension named by --module and runs the training cases."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", type=Path, required=True, help="the instrumented engine extension")
    args = parser.parse_args(argv)
    load_engine_module(args.module)
    for line in train():
        print(f"pgo training: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

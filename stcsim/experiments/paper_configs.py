"""A paper's configurations on one GEMM layer: cycles of each (a kernel, a sparsity pattern and a sparsity)
on a timing config, checked against numpy, with the speedup over the first configuration and the paper's.

``python -m stcsim.experiments.paper_configs --preset paper001-cuda-core --shape 256x196x2304 --config v100``
prints a markdown table (docs/kernels.md keeps the one for ResNet-50's 256 x 196 x 2304 layer).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stcsim.harness.run import parse_shape
from stcsim.kernels import GemmCheck, GemmProblem, get_kernel, verify_gemm
from stcsim.sim import Engine


@dataclass(frozen=True)
class Configuration:
    """One bar of a paper's figure: a kernel of the set run on weights pruned to `sparsity` in `pattern`;
    `paper_speedup` is the paper's speedup of this configuration over its baseline (None: not given)."""

    label: str
    kernel: str
    pattern: str = "dense"
    sparsity: float = 0.0
    paper_speedup: float | None = None


_SIMT_TILES = "f32_f32_tile64x64x8_warp32x16_thread4x4"
_CSR = "spmm_csr_f32_f32_tile4x64_warp1x64"
PAPER001_CUDA_CORE = (
    Configuration("CUDA Core Dense", f"gemm_simt_{_SIMT_TILES}", paper_speedup=1.0),
    Configuration("CUDA Core Generic (96%)", _CSR, "unstructured", 0.96, 0.86),
    Configuration("CUDA Core Unified (50%)", f"gemm_simt_channel_{_SIMT_TILES}", "channel", 0.5, 1.32),
    Configuration(
        "CUDA Core Vector-wise (75%)", f"gemm_simt_vw_l16k4_{_SIMT_TILES}", "vw:L=16,K=4", 0.75, 1.56
    ),
)
"""Paper 001 Fig. 16, the CUDA-core bars, with the ResNet-50 column as the paper's speedups."""

PRESETS: dict[str, tuple[Configuration, ...]] = {"paper001-cuda-core": PAPER001_CUDA_CORE}


class CheckFailed(ValueError):
    """A configuration's result does not match numpy (the message is the check's line)."""


@dataclass(frozen=True)
class Measurement:
    """One configuration run on the engine: its check (error and stats) and the host CPU seconds it took
    (prune, encode, simulate, reference; process time, so other load on the machine does not count)."""

    configuration: Configuration
    check: GemmCheck
    host_seconds: float

    @property
    def cycles(self) -> float:
        """Simulated cycles of the launch."""
        return float(self.check.stats["gpu_sim_cycle"])

    @property
    def active_sms(self) -> float:
        """SMs holding at least one thread block, averaged over the kernel's cycles."""
        stats = self.check.stats
        return float(stats["active_sm_cycles"]) / max(float(stats["kernel_cycles"]), 1.0)


def measure(
    configurations: Sequence[Configuration], problem: GemmProblem, config: str | None, seed: int | None = None
) -> list[Measurement]:
    """Run every configuration on `config` with the same random weights and activations (from `seed`,
    fresh when None). CheckFailed when a result does not match numpy, ValueError when `config` does not
    time (no cycles in the stats)."""
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    results = []
    for c in configurations:
        start = time.process_time()
        check = verify_gemm(get_kernel(c.kernel), Engine(config), problem, seed, pattern=c.pattern,
                            sparsity=c.sparsity)
        if "gpu_sim_cycle" not in check.stats:
            raise ValueError(f"config {config!r} gives no cycles: use a timing config such as v100")
        if not check.ok:
            raise CheckFailed(f"{c.label}: {check}")
        results.append(Measurement(c, check, time.process_time() - start))
    return results


def format_table(measurements: Sequence[Measurement]) -> str:
    """Markdown table: configuration, kernel, cycles, speedup over the first row, the paper's speedup,
    warp instructions, mean active SMs, relative error and host CPU seconds."""
    base = measurements[0].cycles
    lines = [
        "| configuration | kernel | cycles | speedup | paper | warp instructions | active SMs | rel. error "
        "| host s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in measurements:
        c = m.configuration
        paper = "-" if c.paper_speedup is None else f"{c.paper_speedup:.2f}"
        lines.append(
            f"| {c.label} | `{c.kernel}` | {m.cycles:,.0f} | {base / m.cycles:.2f} | {paper} | "
            f"{m.check.stats['warp_insts']:,.0f} | {m.active_sms:.1f} | {m.check.rel_error:.1e} | "
            f"{m.host_seconds:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI: --preset NAME --shape MxNxK --config C [--seed S]; prints the table. Exit status 2 for bad input
    (unknown preset, shape or config), 1 when a configuration fails its check."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="paper001-cuda-core")
    ap.add_argument("--shape", default="256x196x2304", help="MxNxK (ResNet-50's 256 x 196 x 2304 layer)")
    ap.add_argument("--config", default="v100", help="GPU config spec (a timing config)")
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args(argv)
    try:
        problem = parse_shape(a.shape)
        measurements = measure(PRESETS[a.preset], problem, a.config, a.seed)
    except CheckFailed as err:
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 1
    except ValueError as err:  # a bad shape or config
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 2
    print(f"{a.preset} at {problem} on {a.config} (seed {measurements[0].check.seed})")
    print(format_table(measurements))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`invoke run`: one kernel of the kernel set on the engine, checked against numpy, with its stats."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from stcsim.harness.host_memory import reuse_freed_memory
from stcsim.harness.jobs import fixed_sparsity
from stcsim.kernels import (
    GemmCheck,
    GemmProblem,
    NoKernelError,
    get_kernel,
    kernels_for,
    verify_gemm,
)
from stcsim.sim import Engine
from stcsim.sparsity import get as get_pattern

DEFAULT_KERNEL = "gemm_wmma_f16_f32_tile64x64x32_warp32x32"
DEFAULT_SHAPE = "256x256x256"
DEFAULT_CONFIG = "v100"
DEFAULT_PATTERN = "dense"

# The stats printed by default, in order (every stat is in the returned dict).
HEADLINE_STATS = (
    "gpu_sim_cycle",
    "gpu_sim_insn",
    "warp_insts",
    "gpu_ipc",
    "achieved_occupancy",
    "max_ctas_per_sm",
    "regs_per_thread",
    "tensor_insts",
    "tensor_busy_cycles",
    "issue_cycles",
    "stall_scoreboard",
    "stall_unit_busy",
    "stall_barrier",
    "stall_memory",
    "stall_control",
    "stall_idle",
    "shared_wavefronts",
    "shared_bank_conflicts",
    "l1d_hits",
    "l1d_misses",
    "l2_hits",
    "l2_misses",
    "dram_read_bytes",
    "dram_write_bytes",
)


@dataclass(frozen=True)
class RunResult:
    """A checked kernel run: the numerical check and the engine's statistics."""

    check: GemmCheck
    config: str | None

    @property
    def stats(self) -> dict:
        """The launch statistics."""
        return self.check.stats


def parse_shape(text: str) -> GemmProblem:
    """'MxNxK' -> GemmProblem (each a positive integer)."""
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"shape must be MxNxK with positive integers, e.g. 256x256x256; got {text!r}")
    m, n, k = (int(p) for p in parts)
    return GemmProblem(m, n, k)


def default_kernel(pattern: str) -> str:
    """The kernel `invoke run` uses for a pattern spec: the WMMA GEMM for dense, else the first registered
    kernel that consumes the pattern (NoKernelError listing what exists when none does)."""
    if get_pattern(pattern).name == DEFAULT_PATTERN:
        return DEFAULT_KERNEL
    return kernels_for(pattern)[0].procedural_name


def run_kernel(
    kernel: str,
    shape: str,
    config: str | None,
    seed: int | None = None,
    *,
    pattern: str = DEFAULT_PATTERN,
    sparsity: float = 0.0,
    threads: int = 1,
) -> RunResult:
    """Runs `kernel` at `shape` ('MxNxK') on an engine with `config` (None: functional only), the weights
    pruned to `sparsity` in the sparsity `pattern` (a stcsim.sparsity spec), the launch on `threads` host
    threads (the same stats as one)."""
    problem = parse_shape(shape)
    engine = Engine(config, threads=threads)
    check = verify_gemm(get_kernel(kernel), engine, problem, seed, pattern=pattern, sparsity=sparsity)
    return RunResult(check, config)


def _fmt(v: float | str) -> str:
    if isinstance(v, str):
        return v
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.4g}"


def format_result(r: RunResult, all_stats: bool = False) -> str:
    """The check line and a two-column stats table (the headline stats, or all of them)."""
    lines = [str(r.check), f"config: {r.config or 'none (functional only)'}"]
    if all_stats or not r.config:
        keys = sorted(r.stats)
    else:
        keys = [k for k in HEADLINE_STATS if k in r.stats]
    width = max((len(k) for k in keys), default=0)
    lines += [f"  {k:<{width}}  {_fmt(r.stats[k])}" for k in keys]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI: python -m stcsim.harness.run [--kernel K] [--shape MxNxK] [--config C|none] [--pattern P
    --sparsity S] [--threads N] [--all]. Exit status 0 when the check passes, 1 when it fails, 2 for bad
    input (unknown kernel or pattern, a pattern no kernel implements, a problem the kernel cannot run)."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernel", default=None, help=f"kernel name (default: {DEFAULT_KERNEL} for dense)")
    ap.add_argument("--shape", default=DEFAULT_SHAPE)
    ap.add_argument("--config", default=DEFAULT_CONFIG, help="GPU config spec, or 'none' for functional only")
    ap.add_argument("--pattern", default=DEFAULT_PATTERN, help="sparsity pattern spec, e.g. vw:L=16,K=4")
    ap.add_argument("--sparsity", type=float, default=None,
                    help="weights pruned (default: the pattern's own, 1 - N/M for N:M; else 0)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--all", action="store_true", help="print every statistic")
    ap.add_argument("--threads", type=int, default=1,
                    help="host threads of the launch (its SMs split among them; the same stats as one)")
    a = ap.parse_args(argv)
    config = None if a.config == "none" else a.config
    try:
        kernel = a.kernel or default_kernel(a.pattern)
        sparsity = a.sparsity if a.sparsity is not None else fixed_sparsity(get_pattern(a.pattern)) or 0.0
        r = run_kernel(kernel, a.shape, config, a.seed, pattern=a.pattern, sparsity=sparsity,
                       threads=a.threads)
    except (NoKernelError, KeyError, ValueError) as err:  # no kernel, unknown name, bad shape/pattern/problem
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 2
    print(format_result(r, a.all))
    return 0 if r.check.ok else 1


if __name__ == "__main__":
    reuse_freed_memory()  # the CLI process only: an importing program keeps its allocator
    raise SystemExit(main())

"""The latency-bound Tensor Core chain taken apart (issue 43): tc_chain_probes.cu on silicon and simulated.

Each probe (see the .cu) runs one warp per CTA on 1 CTA and on 132 CTAs (one warp per SM), `iters` = 256 and
512 dependent steps timed by clock64; cycles per step = the difference of the two / 256 (free of the loop's
entry and the cold first pass). ``silicon`` needs CuPy and a GPU; ``simulate`` runs the same PTX on a config;
``compare`` joins the two CSVs.

    python -m benchmarks.calibration.tc_chain silicon --out chain_silicon.csv        # on the GPU
    python -m benchmarks.calibration.tc_chain simulate --config h100 --out chain_sim.csv
    python -m benchmarks.calibration.tc_chain compare chain_silicon.csv chain_sim.csv
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

PTX = Path(__file__).resolve().parent / "kernels" / "tc_chain_probes.ptx"
SMS = 132
ITERS = (256, 512)
PROBES = ("ldg_chain_rows1", "ldg_chain_rows8", "ldg_chain_rows16", "hmma_acc_chain", "hmma_operand_chain",
          "wmma_ldg_chain", "ldsm_chain")


def _inputs(probe: str, rng: np.random.Generator, ctas: int) -> tuple[list[np.ndarray], Callable[[list, int],
                                                                                                   list]]:
    """Host buffers of a probe and a function (device addresses, iters) -> its argument list; the cycles
    buffer is always buffers[1]."""
    cycles = np.zeros(ctas, np.int64)
    if probe.startswith("ldg_chain"):
        nxt = np.arange(1024, dtype=np.uint32)  # each slot names itself: the chase stays on its address
        return [nxt, cycles, np.zeros(ctas * 32, np.uint32)], lambda d, it: [d[0], d[1], d[2], it]
    if probe.startswith("hmma"):
        words = rng.uniform(-1, 1, 384).astype(np.float16).view(np.uint32)
        out = np.zeros(ctas * 128, np.float32)
        extra = [0] if probe == "hmma_operand_chain" else []
        return [words, cycles, out], lambda d, it: [d[0], d[1], d[2], it, *extra]
    if probe == "wmma_ldg_chain":
        a, b = (rng.uniform(-1, 1, 512).astype(np.float16) for _ in range(2))
        return [a, cycles, b, np.zeros(ctas * 256, np.float32)], lambda d, it: [d[0], d[2], d[1], d[3], it, 0]
    a = rng.uniform(-1, 1, 256).astype(np.float16)
    return [a, cycles, np.zeros(ctas * 128, np.uint32)], lambda d, it: [d[0], d[1], d[2], it, 0]


def measure(engine_factory: Callable[[], Any], probes: tuple[str, ...] = PROBES,
            ctas: tuple[int, ...] = (1, SMS)) -> pd.DataFrame:
    """Cycles per step of `probes` at each CTA count of `ctas` on engines from `engine_factory` (load_ptx,
    malloc, copy_to, copy_from, launch)."""
    rows = []
    for probe in probes:
        for grid in ctas:
            per_iters = {}
            for iters in ITERS:
                eng = engine_factory()
                eng.load_ptx(PTX.read_text())
                bufs, args = _inputs(probe, np.random.default_rng(0), grid)
                addrs = []
                for arr in bufs:
                    addrs.append(eng.malloc(arr.nbytes))
                    eng.copy_to(addrs[-1], arr)
                eng.launch(probe, (grid, 1, 1), (32, 1, 1), args(addrs, iters), 0)
                per_iters[iters] = float(eng.copy_from(addrs[1], (grid,), np.int64).mean())
            step = (per_iters[ITERS[1]] - per_iters[ITERS[0]]) / (ITERS[1] - ITERS[0])
            rows.append({"probe": probe, "ctas": grid, "cycles_per_step": step,
                         **{f"cycles_{it}": per_iters[it] for it in ITERS}})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """CLI: silicon | simulate | compare."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("silicon")
    p.add_argument("--out", required=True)
    p = sub.add_parser("simulate")
    p.add_argument("--config", default="h100")
    p.add_argument("--out", required=True)
    p = sub.add_parser("compare")
    p.add_argument("silicon")
    p.add_argument("simulated")
    a = ap.parse_args(argv)
    if a.cmd == "compare":
        both = pd.read_csv(a.silicon, comment="#").merge(pd.read_csv(a.simulated, comment="#"),
                                                         on=["probe", "ctas"], suffixes=("_silicon", "_sim"))
        both["ratio"] = both["cycles_per_step_sim"] / both["cycles_per_step_silicon"]
        print(both[["probe", "ctas", "cycles_per_step_silicon", "cycles_per_step_sim", "ratio"]]
              .to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        return 0
    if a.cmd == "silicon":
        from stcsim.gpu.runner import GpuEngine

        table = measure(lambda: GpuEngine(repeats=0))
    else:
        from stcsim.sim import Engine

        table = measure(lambda: Engine(a.config))
    table.to_csv(a.out, index=False)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

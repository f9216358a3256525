"""The Hopper microbenchmarks of benchmarks/micro/hopper.py run on the engine, and their comparison with a
silicon CSV (results/reference/h100_hopper_micro.csv): the table of docs/calibration.md, "Hopper
microbenchmarks".

    python -m benchmarks.micro.hopper_sim --measured results/reference/h100_hopper_micro.csv

Rows are those of the silicon run (name, n or bytes, cycles): wgmma{_sp}_interval and wgmma{_sp}_latency per
N, tma_latency per box size; the same PTX and the same %clock64 differences.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from benchmarks.micro.hopper import tma_clock_ptx, wgmma_chain_ptx
from benchmarks.micro.launch import warm_icache
from stcsim.sim import Engine, TensorMap

WGMMA_N = (8, 16, 32, 64, 128, 256)
TMA_ROWS = (8, 16, 32, 64, 128, 256)  # box rows of 64 u16 (128 B): 1 KiB .. 32 KiB


def wgmma_clock(config: str, n: int, count: int, sparse: bool) -> int:
    """%clock64 cycles of `count` chained wgmma m64nN (k16, or k32 when sparse) to wait_group 0."""
    eng = Engine(warm_icache(config))
    eng.load_ptx(wgmma_chain_ptx(n, count, sparse))
    out = eng.malloc(1024)
    eng.launch("chain", 1, 128, [out])
    return int(eng.copy_from(out, 1, "uint64")[0])


def tma_clock(config: str, rows: int) -> int:
    """%clock64 cycles from one 2D TMA load of a 64 x `rows` u16 box to its mbarrier phase completing."""
    eng = Engine(warm_icache(config))
    eng.load_ptx(tma_clock_ptx(64 * rows * 2))
    src = eng.malloc(256 * 64 * 2)
    out = eng.malloc(64)
    tmap = TensorMap("u16", src, (64, 256), (128,), (64, rows), swizzle="128B")
    eng.launch("tmaclk", 1, 1, [tmap, out])
    return int(eng.copy_from(out, 1, "uint64")[0])


def simulate(config: str = "h100") -> dict[tuple[str, int], float]:
    """Every cycle row of the silicon CSV, simulated on `config`: {(name, n_or_bytes): cycles}."""
    rows: dict[tuple[str, int], float] = {}
    for sparse in (False, True):
        tag = "wgmma_sp" if sparse else "wgmma"
        for n in WGMMA_N:
            c8, c4 = wgmma_clock(config, n, 8, sparse), wgmma_clock(config, n, 4, sparse)
            rows[(f"{tag}_interval", n)] = (c8 - c4) / 4
            rows[(f"{tag}_latency", n)] = float(wgmma_clock(config, n, 1, sparse))
    for r in TMA_ROWS:
        rows[("tma_latency", 64 * r * 2)] = float(tma_clock(config, r))
    return rows


def read_measured(path: Path) -> dict[tuple[str, int], float]:
    """The cycle rows of a silicon CSV written by benchmarks/micro/hopper.py ('#' lines are its header)."""
    with path.open() as fh:
        lines = [ln for ln in fh if not ln.startswith("#")]
    return {(r["name"], int(r["n_or_bytes"])): float(r["value"])
            for r in csv.DictReader(lines) if r["unit"] == "cycles"}


def comparison(sim: dict[tuple[str, int], float],
               measured: dict[tuple[str, int], float]) -> list[tuple[str, int, float, float, float]]:
    """(name, n_or_bytes, simulated, measured, error in percent) for every row both have."""
    return [(name, n, s, measured[(name, n)], 100.0 * (s - measured[(name, n)]) / measured[(name, n)])
            for (name, n), s in sim.items() if (name, n) in measured]


def markdown(table: list[tuple[str, int, float, float, float]]) -> str:
    """The comparison as a Markdown table."""
    out = ["| microbenchmark | N or bytes | simulated (cycles) | measured (cycles) | error |",
           "|---|---:|---:|---:|---:|"]
    out += [f"| {name} | {n} | {s:g} | {m:g} | {e:+.1f}% |" for name, n, s, m, e in table]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Prints the simulated vs measured table of the Hopper microbenchmarks."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--measured", type=Path, default=Path("results/reference/h100_hopper_micro.csv"))
    parser.add_argument("--config", default="h100")
    args = parser.parse_args(argv)
    table = comparison(simulate(args.config), read_measured(args.measured))
    print(markdown(table))
    errs = [abs(e) for *_, e in table]
    print(f"\n{len(table)} rows, mean |error| {sum(errs) / len(errs):.1f}%, max {max(errs):.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

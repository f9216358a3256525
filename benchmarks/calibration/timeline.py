"""Where a launch spends its cycles, on silicon and on the engine: a kernel's PTX instrumented with clock64
probes (issue 11: the small GEMMs' start-up gap).

`instrument` adds a last parameter (a trace buffer) to the entry and a probe at its start, at every loop head
(a label a later branch jumps back to) and before every `ret`: thread (0, 0, 0) of each CTA stores
(clock64, probe id) into its CTA's slots. A probe is a scheduling barrier for ptxas and the engine alike
(a clock read), so probes stay out of straight-line code such as an epilogue's stores. The
same instrumented PTX runs on the GPU (CuPy; a warm-up launch, a 256 MiB write to evict L2, the measured
launch, as ncu's cold-cache protocol) and on the engine's h100 config, and `compare` lines up each CTA's
probes: cycles from the CTA's first probe to each later one, median over CTAs.

    python -m benchmarks.calibration.timeline run --out DIR [--case KERNEL:MxNxK ...]   # GPU machine
    python -m benchmarks.calibration.timeline compare DIR/timeline_gpu.csv --out DIR/timeline.csv
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

SLOTS = 512  # probes recorded per CTA (later ones are dropped)
CASES = (
    "gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2:256x256x256",
    "gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2:200x136x72",
    "gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3:256x256x256",
    "gemm_wmma_f16_f32_tile64x64x32_warp32x32:200x136x72",
    "gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4:200x136x72",
    "gemm_naive_f32_f32_tile16x16x1:128x128x128",
)
_LABEL = re.compile(r"^\s*([$\w]+):\s*$")
_RET = re.compile(r"^\s*(@!?%\w+\s+)?ret(\.uni)?\s*;")
_BRA = re.compile(r"\bbra(\.uni)?\s+([$\w]+)\s*;")


def _probe(pid: int) -> str:
    return (f"  mov.u64 %tl1, %clock64;\n  mov.u64 %tl2, {pid};\n"
            "  @%tlp0 st.global.v2.u64 [%tl0], {%tl1, %tl2};\n  @%tlp0 add.u64 %tl0, %tl0, 16;\n"
            "  setp.lt.and.u64 %tlp0, %tl0, %tl3, %tlp0;\n")


def _matching(text: str, start: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == open_
        depth -= text[i] == close
        if depth == 0:
            return i
    raise ValueError(f"unbalanced {open_}{close}")


def instrument(ptx: str, entry: str) -> tuple[str, list[str]]:
    """`ptx` with entry `entry` instrumented; returns the text and the probe names by id ("start", a label,
    or "ret@<line>")."""
    m = re.search(rf"\.entry\s+{re.escape(entry)}\s*\(", ptx)
    if not m:
        raise ValueError(f"no .entry {entry}")
    close = _matching(ptx, m.end() - 1, "(", ")")
    ptx = ptx[:close] + ",\n  .param .u64 __tl_buf\n" + ptx[close:]
    body_open = ptx.index("{", close)
    body_close = _matching(ptx, body_open, "{", "}")
    lines = ptx[body_open + 1:body_close].split("\n")
    defined: dict[str, int] = {}
    heads = set()
    for n, line in enumerate(lines):
        if (lm := _LABEL.match(line)):
            defined[lm.group(1)] = n
        if (bm := _BRA.search(line)) and bm.group(2) in defined:  # a branch back: a loop head
            heads.add(bm.group(2))
    names = ["start"]
    out = []
    for n, line in enumerate(lines):
        if _RET.match(line):
            names.append(f"ret@{n}")
            out.append(_probe(len(names) - 1))
        out.append(line)
        if (lm := _LABEL.match(line)) and lm.group(1) in heads:
            names.append(lm.group(1))
            out.append(_probe(len(names) - 1))
    init = ("\n  .reg .b64 %tl<4>;\n  .reg .pred %tlp<2>;\n  .reg .b32 %tlr<4>;\n"
            "  ld.param.u64 %tl0, [__tl_buf];\n  cvta.to.global.u64 %tl0, %tl0;\n"
            "  mov.u32 %tlr0, %tid.x;\n  mov.u32 %tlr1, %tid.y;\n  or.b32 %tlr0, %tlr0, %tlr1;\n"
            "  mov.u32 %tlr1, %tid.z;\n  or.b32 %tlr0, %tlr0, %tlr1;\n  setp.eq.u32 %tlp0, %tlr0, 0;\n"
            "  mov.u32 %tlr1, %ctaid.x;\n  mov.u32 %tlr2, %ctaid.y;\n  mov.u32 %tlr3, %nctaid.x;\n"
            "  mad.lo.u32 %tlr1, %tlr2, %tlr3, %tlr1;\n"
            f"  mul.wide.u32 %tl1, %tlr1, {SLOTS * 16};\n  add.u64 %tl0, %tl0, %tl1;\n"
            f"  add.u64 %tl3, %tl0, {SLOTS * 16};\n" + _probe(0))
    return ptx[:body_open + 1] + init + "\n".join(out) + ptx[body_close:], names


def _trace_rows(trace: np.ndarray, names: list[str], ctas: int) -> list[dict[str, Any]]:
    """(ctas x SLOTS x 2) uint64 -> rows (cta, seq, probe, cycles since the CTA's first probe)."""
    rows = []
    for cta in range(ctas):
        t = trace[cta]
        n = int(np.argmax(t[:, 0] == 0)) if (t[:, 0] == 0).any() else SLOTS
        for seq in range(n):
            rows.append({"cta": cta, "seq": seq, "probe": names[int(t[seq, 1])],
                         "cycles": int(t[seq, 0]) - int(t[0, 0])})
    return rows


def run_case(case: str, engine: Any, flush: Any = None) -> pd.DataFrame:
    """One GEMM case on `engine` (the engine's or a GpuEngine with repeats=0), instrumented; the output is
    checked against numpy. `flush()` runs between the warm-up and the measured launch."""
    from stcsim.kernels import get_kernel
    from stcsim.kernels.protocol import as_pattern, ptx_for

    kernel_name, shape = case.split(":")
    m, n, k = (int(v) for v in shape.split("x"))
    kernel = get_kernel(kernel_name)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    if "f16" in kernel_name:
        a, b = a.astype(np.float16), b.astype(np.float16)
    operands = kernel.prepare(a, b, as_pattern("dense"), 0.0)
    text, names = instrument(Path(str(ptx_for(kernel, operands))).read_text(), kernel.entry)
    grid, block, shared = kernel.launch_geometry(operands.problem)
    ctas = grid[0] * grid[1] * grid[2]
    ptrs = {o.name: engine.malloc(o.data.nbytes) for o in operands}
    tl = engine.malloc(ctas * SLOTS * 16)
    engine.load_ptx(text)
    for launch in (0, 1):
        for o in operands:
            engine.copy_to(ptrs[o.name], o.data)
        engine.copy_to(tl, np.zeros(ctas * SLOTS * 2, np.uint64))
        if launch and flush is not None:
            flush()
        stats = engine.launch(kernel.entry, grid, block, [*kernel.args(operands, ptrs), tl], shared)
    outs = {o.name: engine.copy_from(ptrs[o.name], o.data.shape, o.dtype) for o in operands.outputs}
    c = kernel.unpack(operands, outs)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.abs(c - ref).max() / np.abs(ref).max())
    if not err < kernel.tolerance:
        raise RuntimeError(f"{case}: output error {err:.2e}")
    trace = engine.copy_from(tl, (ctas, SLOTS, 2), np.uint64)
    rows = pd.DataFrame(_trace_rows(trace, names, ctas))
    rows.insert(0, "case", case)
    if isinstance(stats, dict) and "gpu_sim_cycle" in stats:
        rows["launch_cycles"] = stats["gpu_sim_cycle"]
    return rows


def run_gpu(out: Path, cases: list[str]) -> None:
    """Every case on the GPU -> out/timeline_gpu.csv."""
    import cupy as cp

    from stcsim.gpu.runner import GpuEngine

    scratch = cp.empty(256 << 20, cp.uint8)

    def flush() -> None:
        scratch.fill(1)
        cp.cuda.runtime.deviceSynchronize()

    frames = []
    for case in cases:
        frames.append(run_case(case, GpuEngine(repeats=0), flush))
        print(f"{case} done", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    pd.concat(frames).to_csv(out / "timeline_gpu.csv", index=False)


def compare(gpu_csv: Path, config: str = "h100") -> pd.DataFrame:
    """Each case of `gpu_csv` simulated on `config`; per (case, probe occurrence): median cycles since the
    CTA's first probe on silicon and simulated."""
    from stcsim.sim import Engine

    gpu = pd.read_csv(gpu_csv)
    frames = []
    for case in gpu["case"].unique():
        frames.append(run_case(case, Engine(config)))
    sim = pd.concat(frames)

    def summary(t: pd.DataFrame) -> pd.DataFrame:
        return t.groupby(["case", "seq", "probe"], sort=False)["cycles"].median().reset_index()

    both = summary(gpu).merge(summary(sim), on=["case", "seq", "probe"], suffixes=("_silicon", "_sim"),
                              how="outer")
    both["sim_minus_silicon"] = both["cycles_sim"] - both["cycles_silicon"]
    return both


def main(argv: list[str] | None = None) -> int:
    """CLI: run (GPU) | compare."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--case", action="append", help=f"KERNEL:MxNxK (repeatable; default: {len(CASES)} cases)")
    c = sub.add_parser("compare")
    c.add_argument("gpu_csv", type=Path)
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--config", default="h100")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        run_gpu(a.out, a.case or list(CASES))
    else:
        table = compare(a.gpu_csv, a.config)
        table.to_csv(a.out, index=False)
        print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

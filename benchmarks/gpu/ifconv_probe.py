"""Which short forward branches ptxas keeps, in the project's own kernels (the open question of calibration
step 30: the engine if-converts bodies of up to 8 PTX instructions, the branch probe saw ptxas keep a BRA over
8 add / xor and predicate 6; bodies with loads were not measured).

Per kernel entry and architecture: the PTX's guarded forward branches by body length (instructions between
the branch and its target; <= 6, 7-8, more) and whether the body holds a load or store, the PTX's other
branches (backward, uniform), and the BRA count of the SASS (``ptxas -O3``, ``cuobjdump -sass``). Needs
ptxas and cuobjdump (the device machine has both; no GPU is used).

    python -m benchmarks.gpu.ifconv_probe --out ifconv.csv
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from pathlib import Path

import pandas as pd

from benchmarks.calibration.silicon_memory import parse_sass
from stcsim.harness.files import write_csv_atomic

ROOT = Path(__file__).resolve().parents[2]
FILES = ("gemm_simt_channel.ptx", "gemm_simt.ptx", "gemm_simt_vw.ptx", "gemm_wmma.ptx", "gemm_mma.ptx",
         "spmm_csr.ptx")
ARCHS = ("sm_80", "sm_90")  # (CUDA 13 ptxas has no sm_70; the PTX targets sm_80)
_ENTRY = re.compile(r"\.visible \.entry (\w+)\(")
_BRA = re.compile(r"^\s*(@!?%p\w*\s+)?bra(\.uni)?\s+(\$?\w+);")
_LABEL = re.compile(r"^\s*(\$?\w+):")


def ptx_branches(body: list[str]) -> dict[str, int]:
    """Counts of one entry's branches: guarded forward ones by body length and memory content, the rest."""
    labels = {m.group(1): i for i, line in enumerate(body) if (m := _LABEL.match(line))}
    out = {"fwd_le6": 0, "fwd_le6_mem": 0, "fwd_7_8": 0, "fwd_7_8_mem": 0, "fwd_gt8": 0, "other": 0}
    for i, line in enumerate(body):
        m = _BRA.match(line)
        if not m:
            continue
        target = labels.get(m.group(3))
        if not m.group(1) or m.group(2) or target is None or target <= i:
            out["other"] += 1
            continue
        insts = [x for x in body[i + 1:target] if x.strip().endswith(";") and not x.strip().startswith(".")]
        mem = any(re.search(r"\b(ld|st|atom|red)\.", x) for x in insts)
        n = len(insts)
        key = "fwd_le6" if n <= 6 else "fwd_7_8" if n <= 8 else "fwd_gt8"
        out[key] += 1
        if mem and key != "fwd_gt8":
            out[key + "_mem"] += 1
    return out


def entries(ptx: str) -> dict[str, list[str]]:
    """Each entry's body lines."""
    lines = ptx.splitlines()
    starts = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _ENTRY.search(line))]
    return {name: lines[s:(starts[j + 1][0] if j + 1 < len(starts) else len(lines))]
            for j, (s, name) in enumerate(starts)}


def sass_bra(ptx_path: Path, arch: str) -> dict[str, int]:
    """BRA instructions per function in the SASS of `ptx_path` for `arch`."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        subprocess.run(["ptxas", "-O3", f"-arch={arch}", str(ptx_path), "-o", str(cubin)], check=True)
        sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True,
                              check=True).stdout
    table = parse_sass(sass, {"bra": r"BRA\b"})
    return dict(zip(table["kernel"], table["bra"], strict=True)) if len(table) else {}


def main(argv: list[str] | None = None) -> int:
    """Writes one row per (file, entry, arch)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    rows = []
    for name in FILES:
        path = ROOT / "ptx_kernels" / name
        per_entry = {e: ptx_branches(body) for e, body in entries(path.read_text()).items()}
        for arch in ARCHS:
            bra = sass_bra(path, arch)
            for entry, counts in per_entry.items():
                rows.append({"file": name, "entry": entry, "arch": arch, **counts,
                             "sass_bra": bra.get(entry, -1)})
                print(f"{entry[:60]:60s} {arch} {counts} SASS BRA {bra.get(entry, -1)}", flush=True)
    write_csv_atomic(pd.DataFrame(rows), a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Which loops ptxas unrolls, and how deep: the SASS loops of probe PTX and of every kernel we ship.

nvcc's PTX is not what the H100 runs: ptxas may unroll a loop again (the naive GEMM's 4-deep PTX loop runs
16 deep in SASS), which lets its scheduler issue many more loads before their first use. The engine executes
PTX, so it needs the rule ptxas follows. This probe gives the evidence:

* probe loops written here in PTX: a dot-product body of B loads of A, B loads of B and B dependent FMAs
  (B = 1 .. 32), with each of the loop-control forms nvcc emits: a counter stepped by an immediate towards
  zero (`setp.ne r, 0`), towards a register bound (`setp.lt r, n`, step 1 or 4), a register step
  (grid-stride loops), a pointer compared with an end pointer, and the down-counter with
  `.pragma "nounroll"`;
* every PTX file of ptx_kernels/ and benchmarks/calibration/kernels/.

`sass` (on a machine with ptxas and cuobjdump) compiles each file for sm_90 (sm_90a if it needs it; -O3),
finds every loop of the SASS (a branch backwards), and writes one row per loop: its instructions, LDG, FFMA,
HMMA, LDS, BAR, STG.

    python -m benchmarks.calibration.unroll_probe emit --out DIR     # the probe PTX (any machine)
    python -m benchmarks.calibration.unroll_probe sass --ptx DIR --out FILE.csv   # needs cuobjdump
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
BODIES = (1, 2, 4, 8, 16, 32)
FORMS = ("down", "up1", "up4", "regstep", "ptr", "nounroll")
DOWN_EXTRA = (10, 12, 14)  # down-counter bodies between the last unrolled (8) and the first kept (16)
ALU_EXTRA = (8, 16, 24, 32, 40, 48)  # down-counter loops of 2 loads and 1 + A dependent FMAs


def probe_ptx() -> str:
    """PTX of one kernel per (form, body size), `loop_<form>_b<B>(a, b, c, n, stride)`."""
    head = ".version 8.0\n.target sm_80\n.address_size 64\n"
    kernels = [_kernel(form, b) for form in FORMS for b in BODIES]
    kernels += [_kernel("down", b) for b in DOWN_EXTRA]
    kernels += [_kernel("down", 1, alu) for alu in ALU_EXTRA]
    return head + "".join(kernels)


def _kernel(form: str, body: int, alu: int = 0) -> str:
    """c[tid] = sum over the loop of B products a[..] * b[..]; `n` trips (n >= 1 is checked first). `alu`:
    that many more FMAs of the first product into the sum (a longer body with the same loads)."""
    setup = {
        "down": "mov.u32 %r4, %r1;",
        "nounroll": "mov.u32 %r4, %r1;",
        "up1": "mov.u32 %r4, 0;",
        "up4": "mov.u32 %r4, 0;\n  shl.b32 %r1, %r1, 2;",
        "regstep": "mov.u32 %r4, 0;\n  mul.lo.s32 %r1, %r1, %r2;",
        "ptr": "mul.wide.s32 %rd7, %r1, %r2;\n  shl.b64 %rd7, %rd7, 2;\n  add.s64 %rd7, %rd7, %rd1;",
    }[form]
    step = {
        "down": "add.s32 %r4, %r4, -1;\n  setp.ne.s32 %p2, %r4, 0;",
        "nounroll": "add.s32 %r4, %r4, -1;\n  setp.ne.s32 %p2, %r4, 0;",
        "up1": "add.s32 %r4, %r4, 1;\n  setp.lt.s32 %p2, %r4, %r1;",
        "up4": "add.s32 %r4, %r4, 4;\n  setp.lt.s32 %p2, %r4, %r1;",
        "regstep": "add.s32 %r4, %r4, %r2;\n  setp.lt.s32 %p2, %r4, %r1;",
        "ptr": "setp.lt.u64 %p2, %rd1, %rd7;",
    }[form]
    loads = []
    for j in range(body):
        loads.append(f"ld.global.nc.f32 %f{2 + 2 * j}, [%rd1+{4 * 32 * j}];")
        loads.append(f"ld.global.nc.f32 %f{3 + 2 * j}, [%rd2+{4 * j}];")
        loads.append(f"fma.rn.f32 %f1, %f{2 + 2 * j}, %f{3 + 2 * j}, %f1;")
    loads += ["fma.rn.f32 %f1, %f2, %f3, %f1;"] * alu
    pragma = '.pragma "nounroll";\n  ' if form == "nounroll" else ""
    body_text = "\n  ".join(loads)
    name = f"loop_{form}_b{body}" + (f"_alu{alu}" if alu else "")
    return f"""
.visible .entry {name}(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n, .param .u32 stride)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .f32 %f<{2 + 2 * body}>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [c];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r2, [stride];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd4, %r3, 4;
  add.s64 %rd1, %rd1, %rd4;
  add.s64 %rd3, %rd3, %rd4;
  mul.wide.s32 %rd5, %r2, 4;
  mov.f32 %f1, 0f00000000;
  setp.lt.s32 %p1, %r1, 1;
  @%p1 bra DONE;
  {setup}
LOOP:
  {pragma}{body_text}
  add.s64 %rd1, %rd1, %rd5;
  add.s64 %rd2, %rd2, {4 * body};
  {step}
  @%p2 bra LOOP;
DONE:
  st.global.f32 [%rd3], %f1;
  ret;
}}
"""


def shipped_ptx() -> list[Path]:
    """Every PTX file of the kernel set and of the calibration suite."""
    return sorted((ROOT / "ptx_kernels").glob("*.ptx")) + sorted(
        (ROOT / "benchmarks" / "calibration" / "kernels").glob("*.ptx"))


_FUNC = re.compile(r"^\s*Function : (\S+)")
_INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
_BRA = re.compile(r"\bBRA\b.*?0x([0-9a-f]+)")


def sass_loops(sass: str, file: str) -> list[dict[str, object]]:
    """One row per SASS loop (a BRA to an earlier address) of each function in cuobjdump's text."""
    rows: list[dict[str, object]] = []
    func = ""
    instrs: list[tuple[int, str]] = []

    def flush() -> None:
        for addr, text in instrs:
            m = _BRA.search(text)
            if not m or int(m.group(1), 16) >= addr:  # forward, or the BRA-to-itself after EXIT
                continue
            start = int(m.group(1), 16)
            body = [t for a, t in instrs if start <= a <= addr]
            ops = [re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0] for t in body]
            rows.append({"file": file, "kernel": func, "loop_start": start, "loop_end": addr,
                         "sass_insts": len(body), "ldg": ops.count("LDG"), "ffma": ops.count("FFMA"),
                         "hmma": ops.count("HMMA"), "lds": ops.count("LDS") + ops.count("LDSM"),
                         "bar": ops.count("BAR"), "stg": ops.count("STG")})

    for line in sass.splitlines():
        m = _FUNC.match(line)
        if m:
            flush()
            func, instrs = m.group(1), []
            continue
        m = _INSTR.search(line)
        if m and func:
            instrs.append((int(m.group(1), 16), m.group(2).strip()))
    flush()
    return rows


def sass_table(ptx_files: list[Path]) -> pd.DataFrame:
    """Compiles each PTX for sm_90 and tabulates its SASS loops (files ptxas rejects are listed as such)."""
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for ptx in ptx_files:
            cubin = Path(tmp) / (ptx.stem + ".cubin")
            for arch in ("sm_90", "sm_90a"):  # sm_90a: wgmma
                done = subprocess.run(["ptxas", f"-arch={arch}", "-O3", str(ptx), "-o", str(cubin)],
                                      capture_output=True, text=True)
                if done.returncode == 0:
                    break
            if done.returncode != 0:
                rows.append({"file": ptx.name, "kernel": "(ptxas rejects)", "sass_insts": 0})
                continue
            sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True,
                                  check=True).stdout
            rows.extend(sass_loops(sass, ptx.name))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """CLI: `emit` writes the probe PTX; `sass` tabulates the SASS loops of it and of the shipped PTX."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("emit")
    e.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("sass")
    s.add_argument("--ptx", type=Path, required=True, help="directory with unroll_probe.ptx (from emit)")
    s.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if args.cmd == "emit":
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "unroll_probe.ptx").write_text(probe_ptx())
        return 0
    table = sass_table([args.ptx / "unroll_probe.ptx", *shipped_ptx()])
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Regenerate the committed PTX of the kernel set: ``python -m stcsim.kernels.build [--check]``.

Each ptx_kernels/NAME.cu compiles to ptx_kernels/NAME.ptx with ``nvcc -ptx -arch=sm_80 -O3``; a source
whose first line is ``// nvcc-arch: sm_XX`` (e.g. the sm_90a Hopper GEMM) is compiled for that architecture
instead. Machines without nvcc use the committed PTX; the script then says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from stcsim.kernels.paths import PTX_DIR

NVCC_FLAGS = ("-ptx", "-arch=sm_80", "-O3")
_RELEASE = re.compile(r"release (\d+\.\d+), V([\d.]+)")


def find_nvcc() -> str | None:
    """Path of nvcc on PATH or under $CUDA_HOME/bin, or None."""
    found = shutil.which("nvcc")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidate = Path(home, "bin", "nvcc") if home else None
    return str(candidate) if candidate is not None and candidate.is_file() else None


def nvcc_version(nvcc: str) -> str:
    """nvcc's full version, e.g. '13.0.88'."""
    out = subprocess.run([nvcc, "--version"], check=True, capture_output=True, text=True).stdout
    match = _RELEASE.search(out)
    if match is None:
        raise RuntimeError(f"cannot read the version of {nvcc} from: {out!r}")
    return match.group(2)


def ptx_compiler_version(ptx: str) -> str | None:
    """The nvcc version recorded in a PTX header ('Cuda compilation tools, release X, VY'), or None."""
    match = _RELEASE.search(ptx)
    return match.group(2) if match else None


def sources(src_dir: Path = PTX_DIR) -> list[Path]:
    """The CUDA sources of the kernel set, sorted."""
    return sorted(src_dir.glob("*.cu"))


def source_flags(source: Path) -> tuple[str, ...]:
    """nvcc flags of one source: NVCC_FLAGS, with the architecture of a first-line `// nvcc-arch: sm_XX`."""
    first = source.read_text().split("\n", 1)[0]
    if first.startswith("// nvcc-arch: "):
        arch = first.removeprefix("// nvcc-arch: ").strip()
        return tuple(f"-arch={arch}" if f.startswith("-arch=") else f for f in NVCC_FLAGS)
    return NVCC_FLAGS


def compile_ptx(source: Path, out: Path, nvcc: str) -> str:
    """Compile one .cu to PTX at `out`; returns nvcc's diagnostics (empty when warning-free)."""
    cmd = [nvcc, *source_flags(source), f"-I{source.parent}", str(source), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return proc.stderr.strip()


def build_all(out_dir: Path, nvcc: str, src_dir: Path = PTX_DIR) -> dict[Path, str]:
    """Compile every source into out_dir; maps each written PTX to nvcc's diagnostics for it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return {
        (out := out_dir / f"{src.stem}.ptx"): compile_ptx(src, out, nvcc) for src in sources(src_dir)
    }


def stale_ptx(nvcc: str, src_dir: Path = PTX_DIR) -> list[str]:
    """Names of committed PTX files that differ from a fresh compile (or are missing)."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = build_all(Path(tmp), nvcc, src_dir)
        stale = []
        for path in fresh:
            committed = src_dir / path.name
            if not committed.is_file() or committed.read_text() != path.read_text():
                stale.append(path.name)
        return stale


def main(argv: list[str] | None = None) -> int:
    """Command line: rebuild the PTX, or with --check only report PTX that is out of date."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with a fresh compile, write nothing")
    opts = parser.parse_args(argv)
    nvcc = find_nvcc()
    if nvcc is None:
        print("nvcc not found: keeping the committed PTX in", PTX_DIR)
        return 0
    if opts.check:
        stale = stale_ptx(nvcc)
        print("PTX up to date" if not stale else f"stale PTX: {', '.join(stale)}")
        return 1 if stale else 0
    for path, diagnostics in build_all(PTX_DIR, nvcc).items():
        print(f"wrote {path}")
        if diagnostics:
            print(diagnostics, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

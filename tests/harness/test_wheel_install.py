"""`pip install .` as a wheel (not editable) into a fresh venv, then the main job from another directory.

The wheel is built from this checkout with the current environment's build tools (no build isolation, so
nothing is downloaded) in a build folder of its own: the engine compiles from scratch (about a minute on two
cores). The fresh venv gets the wheel alone; a .pth file lets it import the dependencies this interpreter has
(numpy, pandas, ...) without installing them again. Then, from an empty directory, the package must find its
configs and PTX in its own package data, and `python -m stcsim.harness.run` and `invoke run` (with this
checkout's tasks.py) must run and check a kernel.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_DEPENDENCIES = ("numpy", "pandas", "yaml", "jinja2", "invoke", "rich", "matplotlib")
BUILD_SECONDS = 1200

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _dependency_dirs() -> list[str]:
    """The site folders this interpreter imports stcsim's runtime dependencies from."""
    dirs: list[str] = []
    for module in RUNTIME_DEPENDENCIES:
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None, f"{module} is not installed"
        folder = str(Path(spec.origin).resolve().parent.parent)
        if folder not in dirs:
            dirs.append(folder)
    return dirs


def _clean_env(extra_path: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["CMAKE_BUILD_PARALLEL_LEVEL"] = str(os.cpu_count() or 1)
    if extra_path is not None:
        env["PATH"] = f"{extra_path}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_a_wheel_install_runs_the_main_job_from_any_directory(tmp_path: Path) -> None:
    pytest.importorskip("scikit_build_core", reason="building the wheel needs the dev extras")
    pytest.importorskip("nanobind", reason="building the wheel needs the dev extras")
    dist, venv, elsewhere = tmp_path / "dist", tmp_path / "venv", tmp_path / "elsewhere"
    elsewhere.mkdir()
    build_env = _clean_env()
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist),
          "-C", f"build-dir={tmp_path / 'build'}", str(ROOT)], tmp_path, build_env, timeout=BUILD_SECONDS)
    (wheel,) = dist.glob("stcsim-*.whl")

    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, build_env)
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = str(bin_dir / "python")
    _run([python, "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], tmp_path, build_env)
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path,
                build_env).strip()
    Path(site, "stcsim_test_dependencies.pth").write_text("\n".join(_dependency_dirs()) + "\n")

    env = _clean_env(bin_dir)
    where = _run([python, "-c", "import stcsim, stcsim.resources as r; "
                  "print(stcsim.__file__, r.data_dir('configs'), r.data_dir('ptx_kernels'), sep='\\n')"],
                 elsewhere, env).split()
    assert all(Path(p).resolve().is_relative_to(Path(site).resolve()) for p in where), where
    _, configs, ptx = map(Path, where)
    assert (configs / "overlays" / "stc.yaml").is_file() and (ptx / "gemm_mma.ptx").is_file()

    job = ["-m", "stcsim.harness.run", "--shape", "40x24x56", "--config", "v100"]
    out = _run([python, *job], elsewhere, env)
    assert ": ok" in out and "gpu_sim_cycle" in out, out
    out = _run([python, "-m", "invoke", "--search-root", str(ROOT), "run", "--shape", "32x32x32",
                "--config", "h100"], elsewhere, env)
    assert ": ok" in out and "config: h100" in out, out

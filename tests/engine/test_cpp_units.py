"""The engine's C++ unit tests (engine/tests/*.test.cc: the calendar, the sector cache, the fill map, the L2
slice map, the opcode table, register allocation and the scheduling passes), built and run from pytest.

The tests and the engine sources they need (engine/ptx/*.cc, engine/func/*.cc and the few timing files) are
compiled with the C++ compiler CMake would use ($CXX, else c++, g++ or clang++ on PATH), C++17, -O1, -Wall
-Wextra -Werror, into a cache directory (STCSIM_CPP_UNITS_CACHE, else one per checkout under the system's
temporary directory). An object is rebuilt only when its source or a header it includes (the compiler's own
dependency list) changed, so a rerun costs one link at most. Each C++ test is one pytest test, found in the
sources by `^TEST\\((\\w+)\\)` (no build at collection) and run as its own process (`binary NAME`); a test
checks that the binary's `--list` is the same set. Without a C++ compiler every test skips.

Run by hand: `python tests/engine/test_cpp_units.py [NAME...]` builds, then runs the named tests (or all).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"
TESTS = ENGINE / "tests"
# The engine sources the tests link: the front end and functional core whole (the pass tests parse PTX),
# and the timing files whose data structures are tested (calendar.h and sector_map.h are header-only).
TIMING_SOURCES = ("cache.cc", "l2_slice_map.cc")
FLAGS = ("-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread")
TEST_NAME = re.compile(r"^TEST\((\w+)\)", re.MULTILINE)
# C++ tests that pin a documented behaviour the engine does not have yet: expected to fail (strict: once the
# engine is fixed the test passes and this entry must go).
KNOWN_FAILURES: dict[str, str] = {}


def unit_test_sources() -> list[Path]:
    return sorted(TESTS.glob("*.cc"))


def engine_sources() -> list[Path]:
    return [
        *sorted((ENGINE / "ptx").glob("*.cc")),
        *sorted((ENGINE / "func").glob("*.cc")),
        *(ENGINE / "timing" / name for name in TIMING_SOURCES),
    ]


def declared_tests() -> list[str]:
    """The C++ tests' names, from the sources (in file order)."""
    return [name for src in unit_test_sources() for name in TEST_NAME.findall(src.read_text())]


def find_compiler() -> list[str] | None:
    """The C++ compiler CMake would pick: $CXX, else the first of c++, g++, clang++ on PATH."""
    if os.environ.get("CXX"):
        cmd = shlex.split(os.environ["CXX"])
        return cmd if shutil.which(cmd[0]) else None
    for name in ("c++", "g++", "clang++"):
        if path := shutil.which(name):
            return [path]
    return None


def cache_dir() -> Path:
    if os.environ.get("STCSIM_CPP_UNITS_CACHE"):
        return Path(os.environ["STCSIM_CPP_UNITS_CACHE"])
    key = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    user = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"stcsim-cpp-units-{user}-{key}"


def _digest(paths: list[str]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.encode() + b"\0")
        try:
            h.update(Path(p).read_bytes())
        except OSError:
            h.update(b"<missing>")
        h.update(b"\0")
    return h.hexdigest()


def _deps(dep_file: Path) -> list[str]:
    """The files a make-style dependency file (-MMD) names, the target excluded."""
    text = dep_file.read_text().replace("\\\n", " ")
    _, _, rest = text.partition(": ")
    return sorted({p for p in rest.split() if p})


class BuildError(RuntimeError):
    pass


def _stem(src: Path) -> str:
    """A source's name in the cache: engine/func/cfg.cc -> func__cfg."""
    return src.relative_to(ENGINE).with_suffix("").as_posix().replace("/", "__")


def _compile(cxx: list[str], src: Path, out_dir: Path) -> bool:
    """Compiles src to out_dir unless its cached object is current; True when it compiled."""
    stem = _stem(src)
    obj, record = out_dir / f"{stem}.o", out_dir / f"{stem}.json"
    command = [*cxx, *FLAGS, f"-I{ENGINE}"]
    if obj.exists() and record.exists():
        try:
            rec = json.loads(record.read_text())
            if rec["command"] == command and rec["digest"] == _digest(rec["deps"]):
                return False
        except (OSError, ValueError, KeyError):
            pass
    tmp_obj, tmp_dep = out_dir / f"{stem}.{os.getpid()}.o.tmp", out_dir / f"{stem}.{os.getpid()}.d"
    proc = subprocess.run(
        [*command, "-MMD", "-MF", str(tmp_dep), "-c", str(src), "-o", str(tmp_obj)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise BuildError(f"compiling {src.relative_to(ROOT)} failed:\n{proc.stdout}{proc.stderr}")
    deps = _deps(tmp_dep)
    tmp_dep.unlink()
    os.replace(tmp_obj, obj)
    record.write_text(json.dumps({"command": command, "deps": deps, "digest": _digest(deps)}))
    return True


def build(jobs: int | None = None) -> tuple[Path, float, int]:
    """Builds the unit-test binary; returns its path, the seconds the build took and how many objects it
    compiled. Raises BuildError with the compiler's output, LookupError without a compiler."""
    cxx = find_compiler()
    if cxx is None:
        raise LookupError("no C++ compiler ($CXX, c++, g++ or clang++)")
    out_dir = cache_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    lock = open(out_dir / "lock", "w")  # one build at a time per cache (pytest-xdist, parallel sessions)
    try:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - not POSIX
            pass
        sources = [*engine_sources(), *unit_test_sources()]
        with ThreadPoolExecutor(max_workers=jobs or min(4, os.cpu_count() or 1)) as pool:
            compiled = sum(pool.map(lambda s: _compile(cxx, s, out_dir), sources))
        binary = out_dir / "stcsim_unit_tests"
        objects = [out_dir / f"{_stem(s)}.o" for s in sources]
        if compiled or not binary.exists():
            tmp = out_dir / f"stcsim_unit_tests.{os.getpid()}.tmp"
            # the engine's objects as an archive: only those the tests reach are linked
            archive = out_dir / f"engine.{os.getpid()}.a"
            archive.unlink(missing_ok=True)
            n_engine = len(engine_sources())
            ar = shutil.which("ar")
            if ar:
                subprocess.run(
                    [ar, "rcs", str(archive), *map(str, objects[:n_engine])], check=True, capture_output=True
                )
                link_inputs = [*map(str, objects[n_engine:]), str(archive)]
            else:
                link_inputs = list(map(str, objects))
            link = [*cxx, *FLAGS, *link_inputs, "-o", str(tmp)]
            proc = subprocess.run(link, capture_output=True, text=True)
            archive.unlink(missing_ok=True)
            if proc.returncode != 0:
                raise BuildError(f"linking the unit tests failed:\n{proc.stdout}{proc.stderr}")
            os.replace(tmp, binary)
        return binary, time.monotonic() - start, compiled
    finally:
        lock.close()


@pytest.fixture(scope="session")
def unit_binary() -> Path:
    try:
        binary, _, _ = build()
    except LookupError as e:
        pytest.skip(str(e))
    except BuildError as e:
        pytest.fail(str(e), pytrace=False)
    return binary


def test_every_declared_test_is_registered(unit_binary: Path) -> None:
    """The binary's `--list` is the set the sources declare (a TEST written otherwise than `TEST(name)` at
    the start of a line would run nowhere)."""
    proc = subprocess.run([str(unit_binary), "--list"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(proc.stdout.split()) == sorted(declared_tests())
    assert set(KNOWN_FAILURES) <= set(declared_tests())


def _params() -> list:
    known = {n: pytest.mark.xfail(reason=why, strict=True) for n, why in KNOWN_FAILURES.items()}
    return [pytest.param(n, marks=known[n]) if n in known else n for n in declared_tests()]


@pytest.mark.parametrize("name", _params())
def test_cpp(unit_binary: Path, name: str) -> None:
    proc = subprocess.run([str(unit_binary), name], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or f"PASS {name}" not in proc.stdout:
        out = proc.stdout + proc.stderr
        pytest.fail(f"C++ test {name} failed (exit {proc.returncode}):\n{out}", pytrace=False)


if __name__ == "__main__":
    binary, seconds, compiled = build()
    print(f"built {binary} in {seconds:.1f} s ({compiled} objects compiled)", file=sys.stderr)
    sys.exit(subprocess.run([str(binary), *sys.argv[1:]]).returncode)

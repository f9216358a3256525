"""invoke tasks: thin wrappers that call into stcsim (build-sim, test, run, bench, workloads, ...)."""

from __future__ import annotations

from invoke import task


@task(name="build-sim")
def build_sim(c):
    """Rebuild the C++ engine in place (incremental, reuses build/)."""
    c.run('pip install --no-build-isolation --no-deps -e . -q', pty=False)


@task
def test(c, k="", x=False):
    """Run the test suite (`-k` to select, `-x` to stop at the first failure)."""
    args = " -q"
    if k:
        args += f" -k '{k}'"
    if x:
        args += " -x"
    c.run("python -m pytest" + args, pty=False)

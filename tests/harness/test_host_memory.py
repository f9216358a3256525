"""The toolkit's processes keep freed host memory for reuse (stcsim/harness/host_memory.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import numpy as np
from numpy._core.multiarray import _set_madvise_hugepage
from stcsim.harness.host_memory import reuse_freed_memory
print(reuse_freed_memory(), _set_madvise_hugepage(False))
a = np.ones(64 << 20, np.uint8); del a      # a 64 MiB array, freed: kept in the heap ...
b = np.ones(64 << 20, np.uint8)             # ... and reused
print(int(b.sum()) == 64 << 20)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_reuse_freed_memory_turns_off_mmap_and_huge_pages_in_its_process() -> None:
    """Applied on Linux (True); numpy's huge-page advice is off afterwards (the setter returns the old
    value, False); large arrays still allocate and compute."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False", "True"]


def test_pool_workers_start_with_it() -> None:
    """The process pool of network runs calls it in every worker."""
    from stcsim.harness import executor
    from stcsim.harness.host_memory import reuse_freed_memory

    pool = executor.ProcessExecutor(1)
    try:
        assert pool._pool._initializer is reuse_freed_memory
    finally:
        pool.close()

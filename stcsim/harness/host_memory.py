"""How the toolkit's own processes (the CLIs and their pool workers) use host memory: freed memory is reused.

A layer job allocates and frees arrays of hundreds of megabytes (a Llama layer's weights, its fp16 copy, the
2:4 mask and packed operands, the float64 reference). On Linux with glibc every allocation above 32 MiB is a
fresh ``mmap`` returned to the kernel when freed, so each such array pays the kernel's page faults again;
numpy also asks for transparent huge pages for them (``madvise``), which the kernel may compact memory to
provide, synchronously. On the development host (a 2-core VM, THP ``madvise`` with ``defrag=madvise``) the
system time of a numpy-heavy script fell from 7-17 s to 0.6-3.3 s (three runs each, the same user time)
with both turned off: glibc keeps freed memory in the heap for the next array, numpy asks for no huge pages.

The cost is resident memory: freed memory is not given back to the kernel until the process ends (the
workers end with the run). Library users who import stcsim into their own process are not affected: only
the toolkit's entry points call ``reuse_freed_memory``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1  # glibc malloc.h: mallopt parameters
M_MMAP_MAX = -4
TRIM_THRESHOLD_BYTES = 1 << 30  # free heap memory kept for reuse before any is given back


def reuse_freed_memory() -> bool:
    """Keep freed host memory in this process for reuse (glibc: no ``mmap`` per large allocation, the heap
    trimmed only above 1 GiB free) and stop numpy's huge-page ``madvise``; True where both applied (Linux
    with glibc), False elsewhere, where nothing changes."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # numpy < 2 keeps it in numpy.core
        from numpy.core.multiarray import _set_madvise_hugepage
    _set_madvise_hugepage(False)
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))

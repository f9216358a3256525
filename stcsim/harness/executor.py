"""Where the jobs of a network run execute: in this process, in a local process pool, or on a Dask cluster.

Every executor maps one picklable function over (index, job) items and yields results as they finish, in
any order. ``attempt`` is that function: it runs a job and turns an exception into a ``JobError`` (message
and traceback) so one failing layer never stops the others. ``ProcessExecutor`` is a ``multiprocessing``
pool of spawned workers (the default: one worker per core; each keeps its freed memory for reuse,
``host_memory``). ``DaskExecutor`` submits the same function to a
``dask.distributed`` scheduler at an address, or to a ``LocalCluster`` it starts when none is given; it needs
the optional extra ``pip install "stcsim[dask]"``.
"""

from __future__ import annotations

import logging
import multiprocessing
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from stcsim.harness.host_memory import reuse_freed_memory
from stcsim.harness.jobs import LayerJob
from stcsim.harness.layer_run import run_job

EXECUTORS = ("local", "dask")


@dataclass(frozen=True)
class JobError:
    """A job that raised: the exception's one-line message and its traceback."""

    message: str
    trace: str


Outcome = tuple[int, "dict[str, object] | JobError"]


def attempt(item: tuple[int, LayerJob]) -> Outcome:
    """Run one job; its row, or a JobError when it raised (KeyboardInterrupt still stops the worker)."""
    index, job = item
    try:
        return index, run_job(job)
    except Exception as err:  # every failure becomes data: the run goes on with the other layers
        return index, JobError(f"{type(err).__name__}: {err}", traceback.format_exc())


class Executor(Protocol):
    """Maps `attempt` over items; `close` ends the workers (at once when the run was interrupted)."""

    workers: int

    def map_unordered(self, fn: Callable[[Any], Outcome], items: Iterable[Any]) -> Iterator[Outcome]: ...

    def close(self, interrupted: bool = False) -> None: ...


class InlineExecutor:
    """Runs the jobs one after another in this process (one worker: no pool to start)."""

    workers = 1

    def map_unordered(self, fn: Callable[[Any], Outcome], items: Iterable[Any]) -> Iterator[Outcome]:
        """Results in order."""
        return map(fn, items)

    def close(self, interrupted: bool = False) -> None:
        """Nothing to end."""


class ProcessExecutor:
    """A pool of `workers` spawned processes (each imports stcsim once and runs jobs one at a time)."""

    def __init__(self, workers: int) -> None:
        """Start the pool."""
        self.workers = workers
        self._pool = multiprocessing.get_context("spawn").Pool(workers, initializer=reuse_freed_memory)

    def map_unordered(self, fn: Callable[[Any], Outcome], items: Iterable[Any]) -> Iterator[Outcome]:
        """Results as workers finish them."""
        return self._pool.imap_unordered(fn, items)

    def close(self, interrupted: bool = False) -> None:
        """Wait for the workers to exit, or end them at once after an interruption."""
        if interrupted:
            self._pool.terminate()
        else:
            self._pool.close()
        self._pool.join()


class DaskUnavailable(RuntimeError):
    """The Dask executor was asked for but dask.distributed is not installed."""


class DaskExecutor:
    """Jobs as tasks of a dask.distributed cluster: the scheduler at `scheduler`, or a LocalCluster of
    `workers` single-threaded worker processes when `scheduler` is empty."""

    def __init__(self, scheduler: str = "", workers: int = 1) -> None:
        """Connect to the scheduler (or start the LocalCluster)."""
        try:
            from distributed import Client, LocalCluster
        except ImportError as err:
            message = '--executor dask needs dask.distributed: pip install "stcsim[dask]"'
            raise DaskUnavailable(message) from err
        self._cluster = None
        if scheduler:
            self._client = Client(scheduler)
        else:
            self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                         dashboard_address=None, silence_logs=logging.ERROR)
            self._client = Client(self._cluster)
        self.workers = len(self._client.scheduler_info()["workers"]) or workers
        self._futures: list[Any] = []

    def map_unordered(self, fn: Callable[[Any], Outcome], items: Iterable[Any]) -> Iterator[Outcome]:
        """Results as the cluster finishes them."""
        from distributed import as_completed

        self._futures = [self._client.submit(fn, item, pure=False) for item in items]
        for future in as_completed(self._futures):
            yield future.result()

    def close(self, interrupted: bool = False) -> None:
        """Cancel what is left, disconnect, and stop the LocalCluster if this executor started it."""
        if interrupted and self._futures:
            self._client.cancel(self._futures)
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def make_executor(kind: str = "local", workers: int = 1, scheduler: str = "") -> Executor:
    """`local` (a process pool, or this process for one worker) or `dask` (ValueError for another kind)."""
    if kind == "local":
        return InlineExecutor() if workers <= 1 else ProcessExecutor(workers)
    if kind == "dask":
        return DaskExecutor(scheduler, workers)
    raise ValueError(f"unknown executor {kind!r}; choose one of: {', '.join(EXECUTORS)}")

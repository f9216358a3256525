"""Result files written atomically (a temporary file in the same folder, then rename), and the lock file that
gives one process at a time a results file."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd


class FileUseError(ValueError):
    """A results file or folder that cannot be used; the message names it and says why (one line)."""


class InUseError(FileUseError):
    """The file is locked by another process that is still running (its pid and host are in the message)."""


def _umask() -> int:
    """The process's umask, read without changing it where the system shows it (Linux), else set and reset."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode(target: Path) -> int:
    """The permissions a file written to `target` gets: those of the file it replaces, else what `open`
    would create (0o666 less the umask; mkstemp's temporary files are 0o600)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def write_csv_atomic(
    df: pd.DataFrame, path: str | os.PathLike[str], *, comments: Sequence[str] = (), **to_csv: Any
) -> None:
    """Writes `df` to `path` so that readers see either the old file or the complete new one: the one CSV
    writer of stcsim (`comments`: ``# line`` header lines before the table, which pandas skips with
    ``comment="#"``; `to_csv`: more options of DataFrame.to_csv, e.g. float_format). The file keeps the
    permissions of the one it replaces; a new file gets the umask's (e.g. 0644), like any file the user
    creates."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = new_file_mode(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", newline="") as f:
            f.writelines(f"# {line}\n" for line in comments)
            df.to_csv(f, index=False, **to_csv)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Owner:
    """Who holds a lock: process id, host name and when it took the lock (ISO 8601, local time)."""

    pid: int
    host: str
    since: str

    @staticmethod
    def me() -> Owner:
        """This process, now."""
        return Owner(os.getpid(), socket.gethostname(), time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    @staticmethod
    def parse(text: str) -> Owner | None:
        """The owner a lock file names, or None when it names none (empty or not written by `FileLock`)."""
        try:
            data = json.loads(text)
            return Owner(int(data["pid"]), str(data["host"]), str(data.get("since", "?")))
        except (ValueError, TypeError, KeyError):
            return None

    def text(self) -> str:
        """The lock file's contents."""
        return json.dumps({"pid": self.pid, "host": self.host, "since": self.since}) + "\n"

    def alive(self) -> bool:
        """Whether the process still runs (one on another host counts as running: it cannot be asked)."""
        if self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


_held: dict[Path, list] = {}
"""Locks this process holds: lock path -> [file descriptor, holders] (a process may open one file twice)."""
_held_guard = threading.Lock()


class FileLock:
    """An exclusive lock on `path` (e.g. ``results.csv.lock``) that names its owner (pid, host, time).

    The lock is an ``flock`` on the lock file, which the system drops when the owner exits however it
    exits; the file's contents say who holds it, for the refusal message. A lock file that no process holds
    (its run was killed) is stale: it is taken over, with a note on stderr naming the process that left it.
    Within one process the lock is shared (every `FileLock` of the same path holds it until the last one is
    released). `what` names the locked thing in messages.
    """

    def __init__(self, path: str | os.PathLike[str], what: str) -> None:
        """Take the lock; InUseError when another running process holds it."""
        self.path = Path(os.path.abspath(path))
        self.what = what
        self.took_over: Owner | None = None
        self._released = False
        with _held_guard:
            if self.path in _held:
                _held[self.path][1] += 1
                return
            _held[self.path] = [self._acquire(), 1]

    def _acquire(self) -> int:
        """Open, lock and sign the lock file; its descriptor."""
        for _ in range(100):  # another process may remove the file between our open and our lock: retry
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            except OSError as err:
                raise FileUseError(f"cannot create the lock file {self.path}: {err.strerror}") from None
            try:
                if not self._lock(fd):
                    os.close(fd)
                    continue
                previous = _owner_of(fd)
                if previous is not None and previous.pid != os.getpid():
                    self.took_over = previous
                    state = "no longer running" if not previous.alive() else "no longer holding it"
                    print(f"note: taking over the stale lock {self.path} of {self.what}: pid {previous.pid} "
                          f"on host {previous.host} (since {previous.since}) is {state}", file=sys.stderr)
                os.ftruncate(fd, 0)
                os.pwrite(fd, Owner.me().text().encode(), 0)
                return fd
            except BaseException:
                os.close(fd)
                raise
        raise FileUseError(f"cannot take the lock file {self.path}: it keeps being replaced")

    def _refuse(self, owner: Owner | None) -> InUseError:
        """The error saying who holds the lock."""
        who = f"pid {owner.pid} on host {owner.host} (since {owner.since})" if owner else "another process"
        return InUseError(f"{self.what} is in use by another run: {who} holds {self.path}; wait for it to "
                          "finish or write to another folder")

    def _lock(self, fd: int) -> bool:
        """flock `fd`; False when the file was replaced meanwhile (retry); InUseError when it is held."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise self._refuse(_owner_of(fd)) from None
        except OSError as err:  # a file system without flock (ENOLCK, EOPNOTSUPP): trust the pid it names
            if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            owner = _owner_of(fd)
            if owner is not None and owner.pid != os.getpid() and owner.alive():
                raise self._refuse(owner) from None
        try:
            return os.path.samestat(os.fstat(fd), os.stat(self.path))
        except FileNotFoundError:
            return False

    def release(self) -> None:
        """Give the lock up (the last holder in this process removes the file); idempotent."""
        if self._released:
            return
        self._released = True
        _release(self.path)


def _owner_of(fd: int) -> Owner | None:
    """The owner the open lock file names."""
    return Owner.parse(os.pread(fd, 4096, 0).decode("utf-8", "replace"))


def _release(path: Path) -> None:
    """Drop one holder of the lock at `path`; the last one removes the file and unlocks it."""
    with _held_guard:
        entry = _held.get(path)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del _held[path]
        fd = entry[0]
    try:
        if os.path.samestat(os.fstat(fd), os.stat(path)):
            path.unlink()
    except OSError:
        pass
    finally:
        os.close(fd)

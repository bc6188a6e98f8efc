"""Every cross-process lock the program takes, all through the `filelock` library.

Locks live under `.memory/` (the caller gives a path there, from MemoryRoot.ensure_state_dir):

    index.lock      the index writer (index/indexer.py): one process writes the indices at a time
    chroma.lock     every use of the embedded Chroma store, read or write (index/vectors.py)
    dream.lock      dream run, apply and reject (dream/run.py)
    compress.lock   writing compressed sessions (sessions/compress.py)

On a read-only root a lock file cannot be made; nobody can write there, so a reader may go on without the
lock (`optional=True`), while a writer is refused with a message.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import filelock

from memory_server.errors import LockedError, RootError

log = logging.getLogger(__name__)

INDEX_LOCK = "index.lock"
CHROMA_LOCK = "chroma.lock"
COMPRESS_LOCK = "compress.lock"


class FileLock:
    """An exclusive lock on `path`, reentrant within a thread. `busy` is the LockedError message when it does
    not come in time; `{path}` and `{timeout}` (whole seconds) in it are filled in."""

    def __init__(self, path: Path, busy: str, *, poll: float = 0.05) -> None:
        self.path = Path(path)
        self.busy = busy
        self._lock = filelock.FileLock(str(self.path), poll_interval=poll)

    def acquire(self, timeout: float, *, optional: bool = False) -> bool:
        """Wait up to `timeout` seconds (< 0: forever) for the lock; LockedError when it stays busy.

        Returns False, without the lock, when `optional` and the lock file cannot be made (a read-only root);
        without `optional` that is a RootError saying the root is read-only.
        """
        try:
            self._lock.acquire(timeout=timeout)
        except filelock.Timeout as exc:
            message = self.busy.replace("{path}", str(self.path)).replace("{timeout}", f"{timeout:.0f}")
            raise LockedError(message) from exc
        except OSError as exc:
            if optional:
                log.debug("reading without %s: %s", self.path, exc)
                return False
            raise RootError(
                f"cannot take the lock {self.path} ({exc.strerror}): the memory root is read-only or its "
                ".memory/ folder is not writable, so nothing can be written there; make it writable first"
            ) from exc
        return True

    def release(self) -> None:
        self._lock.release()

    @contextlib.contextmanager
    def held(self, timeout: float, *, optional: bool = False) -> Iterator[None]:
        """Hold the lock for the `with` block (see acquire)."""
        taken = self.acquire(timeout, optional=optional)
        try:
            yield
        finally:
            if taken:
                self.release()


class WriterLock:
    """One writer per process (a thread lock) and per root (a file lock): the index writer."""

    def __init__(self, path: Path, busy: str) -> None:
        self.file = FileLock(path, busy)
        self._thread = threading.Lock()

    @contextlib.contextmanager
    def held(self, timeout: float) -> Iterator[None]:
        if not self._thread.acquire(timeout=timeout if timeout >= 0 else -1):
            raise LockedError(f"another index update in this process has run for over {timeout:.0f}s; try again")
        try:
            with self.file.held(timeout):
                yield
        finally:
            self._thread.release()

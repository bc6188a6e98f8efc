"""The server's background work: bring the indices up to date at start, then follow file changes.

One worker thread owns all of it. Keyword index first (a few seconds at most, so search_exact is complete
early), then vectors (the model loads here, never during the MCP handshake). Then the watcher adds changed
paths to a pending set and wakes the worker; a periodic sweep (sooner when a search finds the vector store
gone) catches anything an event missed, repairs indices that disagree with the files, and starts the
compression of sessions still waiting in the queue (`sessions/pending.py`). A pass that fails (another
process holds the writer lock, a full disk) keeps its work pending and is tried again after a back-off that
doubles from 2 × RETRY_SECONDS to MAX_RETRY_SECONDS while the failure lasts; changes arriving meanwhile join the
pending set instead of starting anything new. `stop()` returns within about two seconds.

The worker belongs to its Memory (`Memory.background()` makes it, `Memory.close()` stops it); it keeps its own
state (`failure`: why indexing stopped) and changes the memory only by calling it.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory_server.errors import IndexCancelled, LockedError, MemoryServerError
from memory_server.index.watcher import Watcher
from memory_server.process_memory import trim
from memory_server.sessions.hooks import resume_pending

if TYPE_CHECKING:
    from memory_server.api import Memory

log = logging.getLogger(__name__)

SWEEP_SECONDS = 60.0
RETRY_SECONDS = 1.0  # after a failed pass, wait this long, doubling while it keeps failing
MAX_RETRY_SECONDS = 60.0
START_DELAY_SECONDS = 0.5


@dataclass
class _Work:
    """What the worker has still to do: a full sync, and paths the watcher reported."""

    full: bool = False
    paths: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return self.full or bool(self.paths)


class Background:
    """The one background worker of a Memory (see the module docstring); made by `Memory.background()`."""

    def __init__(self, memory: Memory, *, watch: bool = True) -> None:
        self.memory = memory
        self.watch = watch
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._work = _Work(full=True)
        self.failure: str | None = None  # why the last pass failed, and when it is tried again (status shows it)
        self._thread: threading.Thread | None = None
        self._watcher: Watcher | None = None
        self._begin = threading.Event()  # a search is waiting: skip the start delay
        self.keyword_ready = threading.Event()  # the first keyword pass has run (or failed)
        self._retry_seconds = RETRY_SECONDS
        self._retry_at = 0.0  # monotonic time before which no pass is tried (back-off after a failure)
        self.passes = 0  # sync passes run (tests and status)

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="memory-index", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        """Whether the worker thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def wait_for_keyword_pass(self, timeout: float) -> bool:
        """Start at once if still waiting to start, and wait up to `timeout` for the first keyword pass
        (on a small root it takes a fraction of a second). False when it is not done (or never started)."""
        if self._thread is None:
            return self.keyword_ready.is_set()
        self._begin.set()
        return self.keyword_ready.wait(timeout)

    def request_full_sync(self) -> None:
        """Have the worker compare every file with the indices as soon as it can (a store vanished)."""
        with self._cond:
            self._work.full = True
            self._cond.notify()

    def stop(self, timeout: float = 1.5) -> bool:
        """Stop the watcher and the indexing thread; False when the thread is still busy after `timeout`."""
        self._stop.set()
        self._begin.set()
        with self._cond:
            self._cond.notify()
        self.memory.indexer.cancel.set()
        if self._watcher is not None:
            self._watcher.stop(timeout)
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    # -- one pass -------------------------------------------------------------------------------------

    def _sync(self, paths: set[str] | None, *, vectors: bool = True, verify: bool = False) -> bool:
        """One pass over `paths` (None: every file); True when it succeeded."""
        if self._stop.is_set():
            return False
        try:
            report = self.memory.index(
                paths=sorted(paths) if paths is not None else None, vectors=vectors, timeout=5.0, verify=verify
            )
            self.passes += 1
            if report.changed or report.vectors_written:
                log.info("index: %s", report.summary())
                trim()  # what the pass read and freed goes back to the system (see process_memory.py)
            self._failed(None)
            return True
        except LockedError as exc:
            log.info("another process is writing the index; trying again later")
            self._failed(exc, quiet=True)
        except IndexCancelled:
            pass
        except MemoryServerError as exc:
            log.error("indexing failed: %s", exc)
            self._failed(exc)
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # a bug, or a panic in a native library: the worker must go on
            if not self._stop.is_set():
                log.exception("indexing failed")
                self._failed(exc)
        return False

    def _failed(self, exc: BaseException | None, *, quiet: bool = False) -> None:
        """Remember why indexing stopped (memory_status shows it) and back off before the next attempt."""
        if exc is None:
            self.failure = None
            self._retry_seconds = RETRY_SECONDS
            self._retry_at = 0.0
            return
        self._retry_seconds = min(self._retry_seconds * 2, MAX_RETRY_SECONDS)
        self._retry_at = time.monotonic() + self._retry_seconds
        if not quiet:
            self.failure = (
                f"{type(exc).__name__}: {exc}; trying again in {self._retry_seconds:.0f} s (fix the cause, e.g. free "
                "disk space or make .memory/ writable; `memory-server index` shows the full error)"
            )

    # -- the worker -----------------------------------------------------------------------------------

    def _run(self) -> None:
        # Let the MCP handshake finish first: indexing competes with it for the interpreter.
        self._begin.wait(START_DELAY_SECONDS)
        if self._stop.is_set():
            return
        if self.memory.root.read_only:  # served from its existing index; nothing can be updated there
            log.warning(
                "the memory root %s is read-only: searching its existing index, not updating it", self.memory.root.path
            )
            self.keyword_ready.set()
            return
        # At start, trust no size or modification time: a file restored with its old time is caught here
        # (reading every file costs well under a second even at 100k chunks).
        try:
            self._sync(None, vectors=False, verify=True)
        finally:
            self.keyword_ready.set()
        if self.watch and not self._stop.is_set():
            self._watcher = Watcher(
                self.memory.root,
                self._on_change,
                debounce=self.memory.settings.index.watch_debounce_seconds,
            )
            self._watcher.start()
        next_sweep = 0.0  # the first full sync (with vectors) runs at once
        while not self._stop.is_set():
            if time.monotonic() >= next_sweep:
                next_sweep = time.monotonic() + SWEEP_SECONDS
                self._sweep()
            work = self._next_work(next_sweep)
            if work and not self._sync(None if work.full else work.paths):
                self._requeue(work)

    def _sweep(self) -> None:
        """The periodic full comparison, and the sessions the queue still holds; memory the tool calls freed
        since the last sweep goes back to the system (see process_memory.py)."""
        trim()
        with self._cond:
            self._work.full = True
        try:
            resume_pending(self.memory.root)
        except (OSError, MemoryServerError) as exc:
            log.warning("could not start compressing the queued sessions: %s", exc)

    def _next_work(self, deadline: float) -> _Work:
        """Wait until there is work and the back-off is over (or the sweep is due, or stop); take the work."""
        with self._cond:
            while not self._stop.is_set():
                now = time.monotonic()
                if self._work and now >= self._retry_at:
                    work, self._work = self._work, _Work()
                    return work
                wake = min(deadline, self._retry_at if self._work else deadline)
                if now >= deadline:
                    return _Work()
                self._cond.wait(max(0.05, wake - now))
        return _Work()

    def _requeue(self, work: _Work) -> None:
        """A failed pass keeps its work for the next attempt, merged with whatever arrived meanwhile."""
        with self._cond:
            self._work.full = self._work.full or work.full
            self._work.paths |= work.paths

    def _on_change(self, paths: set[str] | None) -> None:
        """The watcher's callback: add the paths (None: everything) to the pending work and wake the worker."""
        with self._cond:
            if paths is None:
                self._work.full = True
            else:
                self._work.paths |= paths
            self._cond.notify()

"""The server's background work: bring the indices up to date at start, then follow file changes.

Keyword index first (a few seconds at most, so search_exact is complete early), then vectors (the model
loads here, never during the MCP handshake). Then the watcher re-indexes changed paths, and a periodic
sweep (sooner when a search finds the vector store gone) catches anything an event missed and repairs
indices that disagree with the files. Another process holding the writer lock is not an error: this
one retries a little later. `stop()` returns within about two seconds.
"""

from __future__ import annotations

import logging
import threading

from memory_server.api import Memory
from memory_server.errors import LockedError, MemoryServerError
from memory_server.index.indexer import IndexCancelled
from memory_server.index.watcher import Watcher

log = logging.getLogger(__name__)

SWEEP_SECONDS = 60.0
INITIAL_RETRY_SECONDS = 2.0
RETRY_SECONDS = 1.0  # after a failed pass, wait this long, doubling while it keeps failing
MAX_RETRY_SECONDS = 60.0
START_DELAY_SECONDS = 0.5


class Background:
    def __init__(self, memory: Memory, *, watch: bool = True) -> None:
        self.memory = memory
        self.watch = watch
        self._stop = threading.Event()
        self._wake = threading.Event()  # a full sync is wanted now (the vector store vanished under a search)
        memory.on_repair_needed = self._wake.set
        self._thread: threading.Thread | None = None
        self._watcher: Watcher | None = None
        self._begin = threading.Event()  # a search is waiting: skip the start delay
        self.keyword_ready = threading.Event()  # the first keyword pass has run (or failed)
        self._retry_seconds = RETRY_SECONDS

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="memory-index", daemon=True)
        self._thread.start()

    def wait_for_keyword_pass(self, timeout: float) -> bool:
        """Start at once if still waiting to start, and wait up to `timeout` for the first keyword pass
        (on a small root it takes a fraction of a second). False when it is not done (or never started)."""
        if self._thread is None:
            return self.keyword_ready.is_set()
        self._begin.set()
        return self.keyword_ready.wait(timeout)

    def stop(self, timeout: float = 1.5) -> bool:
        """Stop the watcher and the indexing thread; False when the thread is still busy after `timeout`."""
        self._stop.set()
        self._begin.set()
        self._wake.set()
        self.memory.indexer.cancel.set()
        if self._watcher is not None:
            self._watcher.stop(timeout)
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    def _sync(self, paths: set[str] | None, *, vectors: bool = True, verify: bool = False) -> bool:
        if self._stop.is_set():
            return False
        try:
            report = self.memory.index(
                paths=sorted(paths) if paths is not None else None, vectors=vectors, timeout=5.0, verify=verify
            )
            if report.changed or report.vectors_written:
                log.info("index: %s", report.summary())
            self._failed(None)
            return True
        except LockedError:
            log.info("another process is writing the index; will retry")
        except IndexCancelled:
            pass
        except MemoryServerError as exc:
            log.error("indexing failed: %s", exc)
            self.memory.vector_error = str(exc)
            self._failed(exc)
        except Exception as exc:
            if not self._stop.is_set():
                log.exception("indexing failed")
                self._failed(exc)
        return False

    def _failed(self, exc: BaseException | None) -> None:
        """Remember why indexing stopped (memory_status shows it) and back off before the next attempt."""
        if exc is None:
            self.memory.index_failure = None
            self._retry_seconds = RETRY_SECONDS
            return
        self._retry_seconds = min(self._retry_seconds * 2, MAX_RETRY_SECONDS)
        self.memory.index_failure = (
            f"{type(exc).__name__}: {exc}; trying again in {self._retry_seconds:.0f} s (fix the cause, e.g. free "
            "disk space or make .memory/ writable; `memory-server index` shows the full error)"
        )

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
        # Until the first full sync succeeds (another process may hold the writer lock), retry soon.
        while not self._sync(None) and not self._stop.wait(max(INITIAL_RETRY_SECONDS, self._retry_seconds)):
            pass
        if self.watch and not self._stop.is_set():
            self._watcher = Watcher(
                self.memory.root,
                self._on_change,
                debounce=self.memory.settings.index.watch_debounce_seconds,
            )
            self._watcher.start()
        while not self._stop.is_set():
            self._wake.wait(SWEEP_SECONDS)
            self._wake.clear()
            if not self._stop.is_set():
                self._sync(None)

    def _on_change(self, paths: set[str] | None) -> None:
        if not self._sync(paths) and not self._stop.is_set():
            # Keep the change for the next attempt (the periodic sweep also catches it), backing off while
            # the failure lasts.
            timer = threading.Timer(self._retry_seconds, self._on_change, args=(paths,))
            timer.daemon = True
            timer.start()

"""One owner per resource: a SQLite connection per thread, closed when its thread ends; one background worker
that keeps failed work pending and backs off, without a timer per retry."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from filelock import FileLock

from memory_server import Memory
from memory_server.background import RETRY_SECONDS
from memory_server.files.locks import INDEX_LOCK
from memory_server.testing import FakeEmbedder


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _in_threads(n: int, work) -> None:
    """Run `work` once in each of `n` short-lived threads, one after the other (as a tool call pool does)."""
    for _ in range(n):
        t = threading.Thread(target=work)
        t.start()
        t.join()


def test_connections_close_when_their_thread_ends(root: Path) -> None:
    memory = Memory(root, embedder=FakeEmbedder())
    try:
        memory.index()
        memory.search_memory("printer")  # this thread's connections and Chroma, opened once
        before = _fds()
        _in_threads(60, lambda: (memory.search_exact("SAVE_CONFIG"), memory.search_memory("belt tuning")))
        time.sleep(0.2)
        assert _fds() <= before + 2, f"{_fds() - before} files left open by 60 finished threads"
        assert memory.fts.open_connections == 1  # this thread's; the 60 others were closed with their threads
    finally:
        memory.close()
    assert memory.fts.open_connections == 0


def test_failed_work_stays_pending_and_backs_off_without_timers(root: Path) -> None:
    memory = Memory(root, keyword_only=True)
    memory.index()
    worker = memory.background(watch=False)
    threads_before = threading.active_count()
    blocker = FileLock(str(root / ".memory" / INDEX_LOCK))
    blocker.acquire()  # another process writes the index: every pass fails with LockedError
    try:
        worker.start()
        worker.wait_for_keyword_pass(10)
        (root / "topics" / "new.md").write_text("# New\n\nzebrafinch notes\n", encoding="utf-8")
        for _ in range(20):  # a burst of changes while the writer lock is held
            worker._on_change({"topics/new.md"})
            time.sleep(0.1)
        time.sleep(2.0)
        assert not [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
        assert threading.active_count() <= threads_before + 1  # the worker, and nothing per retry
        assert worker._retry_seconds > RETRY_SECONDS  # backing off (2 s, 4 s, ...), not retrying at once
    finally:
        blocker.release()
    try:
        deadline = time.monotonic() + 90
        while not memory.search_exact("zebrafinch"):
            assert time.monotonic() < deadline, "the pending change was never indexed"
            time.sleep(0.2)
    finally:
        worker.stop()
        memory.close()

"""One owner per resource: a SQLite connection per thread while it works, handed back when its call is answered
and closed when its thread ends; one background worker
that keeps failed work pending and backs off, without a timer per retry; a server's heap kept to two malloc
arenas, however many threads come and go."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from filelock import FileLock

from memory_server import Memory
from memory_server.background import RETRY_SECONDS
from memory_server.files.locks import INDEX_LOCK
from memory_server.files.sqlite import release_this_thread
from memory_server.index.embed_cache import EmbeddingCache
from memory_server.index.fts import FtsIndex
from memory_server.server import answers
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
        # a leak is two files per thread (120 here); a few come and go with the index's own work
        assert _fds() <= before + 10, f"{_fds() - before} files left open by 60 finished threads"
        assert memory.fts.open_connections == 1  # this thread's; the 60 others were closed with their threads
    finally:
        memory.close()
    assert memory.fts.open_connections == 0


def _index_fds(root: Path) -> int:
    """Open file descriptors of this process on the keyword index's files (the database and its log)."""
    index = str(root / ".memory" / "index.sqlite")
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        count += target.startswith(index)
    return count


def test_an_answered_call_hands_its_connection_to_the_next_thread(root: Path) -> None:
    """Worker threads that stay alive between calls (the SDK keeps idle workers a while) share the connections
    their answered calls hand back: as many as the calls in flight at once, not one per worker ever alive."""
    memory = Memory(root, keyword_only=True)
    memory.index()
    release_this_thread()  # the indexing thread (this one) is done too
    search = answers(lambda: memory.search_exact("SAVE_CONFIG"))
    turn = threading.Lock()  # one call at a time, in a different worker each time
    done = threading.Event()

    def worker() -> None:
        with turn:
            assert search()
        done.wait(30)  # stays alive, as an idle worker does

    workers = [threading.Thread(target=worker) for _ in range(12)]
    try:
        for t in workers:
            t.start()
            time.sleep(0.02)
        for _ in range(100):
            if memory.fts.idle_connections == memory.fts.open_connections == 1:
                break
            time.sleep(0.05)
        assert memory.fts.open_connections == 1, "each worker kept a connection of its own"
        assert _index_fds(root) <= 3  # the database, its write-ahead log and its shared-memory index, once each
    finally:
        done.set()
        for t in workers:
            t.join(10)
        memory.close()
    assert memory.fts.open_connections == 0


def test_a_handed_back_connection_to_a_replaced_index_is_not_reused(root: Path) -> None:
    memory = Memory(root, keyword_only=True)
    memory.index()
    path = memory.fts.path
    had = memory.fts.conn().execute("SELECT count(*) FROM files").fetchone()[0]
    assert had > 0
    release_this_thread()
    for suffix in ("", "-wal", "-shm"):  # another process set the index aside and started a new one
        if Path(f"{path}{suffix}").exists():
            os.replace(f"{path}{suffix}", f"{path}.old{suffix}")
    try:
        assert memory.fts.conn().execute("SELECT count(*) FROM files").fetchone()[0] == 0
    finally:
        memory.close()


def test_a_stale_connection_waiting_under_a_fresh_one_is_closed(root: Path) -> None:
    """Two calls in flight while another process replaces the index: the one that hands back its connection to
    the old file last must not leave it waiting (and the deleted file open) under the fresh one."""
    memory = Memory(root, keyword_only=True)
    memory.index()
    path = memory.fts.path
    holding, hand_back = threading.Event(), threading.Event()

    def other_call() -> None:
        memory.fts.conn()
        holding.set()
        hand_back.wait(10)
        release_this_thread()

    thread = threading.Thread(target=other_call)
    thread.start()
    try:
        assert holding.wait(10)
        for suffix in ("", "-wal", "-shm"):  # another process set the index aside and started a new one
            if Path(f"{path}{suffix}").exists():
                os.replace(f"{path}{suffix}", f"{path}.old{suffix}")
        rebuilt = FtsIndex(path)
        rebuilt.conn()
        rebuilt.close()
        memory.fts.conn()  # this call's connection to the old file is closed; a fresh one is opened
        hand_back.set()
        thread.join(10)  # the other call hands back its connection to the old file
        release_this_thread()  # and this one its fresh one, on top

        def next_call() -> None:
            memory.fts.conn()
            release_this_thread()

        _in_threads(1, next_call)
        assert memory.fts.open_connections == 1 and memory.fts.idle_connections == 1
    finally:
        hand_back.set()
        memory.close()


def test_a_handed_back_connection_to_a_replaced_embedding_cache_is_not_reused(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite3"
    cache = EmbeddingCache(path)
    cache.put_many({"a": np.ones(4, dtype=np.float32), "b": np.ones(4, dtype=np.float32)})
    assert cache.count() == 2
    release_this_thread()  # an answered call: the connection waits for the next thread
    for suffix in ("", "-wal", "-shm"):  # another process set the cache aside and started a new one
        if Path(f"{path}{suffix}").exists():
            os.replace(f"{path}{suffix}", f"{path}.corrupt{suffix}")
    other = EmbeddingCache(path)
    other.put_many({"c": np.ones(4, dtype=np.float32)})
    seen: list[int] = []

    def next_call() -> None:
        seen.append(cache.count())
        release_this_thread()

    _in_threads(3, next_call)
    assert seen == [1, 1, 1]  # the new file, not the one set aside
    cache.close()
    other.close()


def test_a_connection_in_a_transaction_is_not_handed_back(root: Path) -> None:
    memory = Memory(root, keyword_only=True)
    memory.index()
    conn = memory.fts.conn()
    conn.execute("BEGIN")
    release_this_thread()
    try:
        assert memory.fts.conn() is conn and memory.fts.idle_connections == 0
    finally:
        conn.execute("ROLLBACK")
        memory.close()


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


ARENAS_CHILD = """
import ctypes, sys, threading
from memory_server.process_memory import limit_arenas
if sys.argv[1] == "capped":
    assert limit_arenas()
gate = threading.Barrier(8)

def work():  # eight threads allocating at the same moment: glibc would give each an arena of its own
    gate.wait()
    held = [bytearray(2000) for _ in range(2000)]
    gate.wait()
    del held

threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
ctypes.CDLL("libc.so.6").malloc_stats()  # one "Arena n:" block per arena, on stderr
"""


def _arenas(mode: str) -> int:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(ARENAS_CHILD), mode], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return sum(line.startswith("Arena ") for line in proc.stderr.splitlines())


def test_the_server_heap_keeps_to_two_arenas() -> None:
    """What `memory-server serve` does first (process_memory.limit_arenas): threads that come and go share
    two arenas, so freed memory does not pile up in one arena per thread (bench/server_resources.py)."""
    from memory_server.process_memory import _glibc

    if _glibc() is None:
        pytest.skip("malloc arenas are glibc's; this C library has none to cap")
    assert _arenas("capped") == 2
    assert _arenas("uncapped") > 2  # what the cap prevents

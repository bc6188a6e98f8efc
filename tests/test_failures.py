"""Failures end cleanly: a full disk exits 2 with what to do, the real SQLite error is kept, a failed
rebuild leaves the old index, and when background indexing stops, memory_status says why.

The full disk is a real one: a small tmpfs mounted for the test (skipped where mounting is not allowed).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory_server import Memory
from memory_server.files.scaffold import init_root
from memory_server.index.embed_cache import EmbeddingCache

CLI = [sys.executable, "-m", "memory_server"]


@contextlib.contextmanager
def small_disk(tmp_path: Path, size: str = "3m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at a new folder under tmp_path."""
    target = tmp_path / f"disk-{uuid.uuid4().hex[:8]}"
    target.mkdir()
    mount = shutil.which("mount")
    if mount is None:
        pytest.skip("no `mount` command: cannot make a small disk")
    made = subprocess.run(
        [mount, "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)
        with contextlib.suppress(OSError):
            target.rmdir()


def fill(disk: Path) -> None:
    """Use up every free byte of `disk` (a file outside any memory folder)."""
    fd = os.open(disk / "filler.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 20, 65536, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\xff" * size):
                    pass
    finally:
        os.close(fd)


SESSION = """\
---
session_id: a1b2c3d4-0000-4000-8000-000000000000
started: 2026-01-03T09:00:00Z
ended: 2026-01-03T10:30:00Z
---
# Fix the flaky tests

## Errors and fixes

- `ModuleNotFoundError: No module named 'yaml'` when running pytest (line 41) — fixed: ran `.venv/bin/pytest`
- `ModuleNotFoundError: No module named 'yaml'` in CI (line 90) — fixed: `uv sync`
"""


def words_topic(i: int, n: int = 20_000) -> str:
    return f"# Topic {i}\n\n" + " ".join(f"w{i}x{j:06d}" for j in range(n)) + "\n"


def test_the_embedding_cache_reports_the_real_error_when_the_disk_is_full(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite3")
    cache.put_many({"seed": np.ones(4, dtype=np.float32)})
    conn = cache._conn()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages}")  # SQLite answers as it does on a full disk
    with pytest.raises(Exception, match="database or disk is full"):
        cache.put_many({f"k{i}": np.ones(384, dtype=np.float32) for i in range(2000)})
    assert not conn.in_transaction
    cache.close()


def test_index_on_a_full_disk_exits_2_with_what_to_do(tmp_path: Path) -> None:
    with small_disk(tmp_path) as disk:
        root = disk / "memory"
        init_root(root)
        for i in range(3):
            (root / "topics" / f"t{i}.md").write_text(words_topic(i), encoding="utf-8")
        session = root / "sessions" / "compressed" / "2026" / "2026-01-03-a1b2c3d4-fix-tests.md"
        session.parent.mkdir(parents=True)
        session.write_text(SESSION, encoding="utf-8")
        fill(disk)
        for args in (["index"], ["index", "--rebuild"], ["dream", "run"]):
            done = subprocess.run([*CLI, *args, "--root", str(root)], capture_output=True, text=True, timeout=120)
            assert done.returncode == 2, (args, done.stderr[-3000:])
            assert "Traceback" not in done.stderr and "free some space" in done.stderr, (args, done.stderr[-3000:])
        assert not (root / "dreams").exists() or not any((root / "dreams").iterdir())  # no half-made proposal


def test_a_failed_rebuild_leaves_the_old_index_searchable(root: Path) -> None:
    """`index --rebuild` killed half-way (SIGKILL, like an OOM kill) leaves the old index, not an empty one."""
    for i in range(40):
        (root / "topics" / f"probe-{i:02d}.md").write_text(f"# Probe {i}\n\nrebuildprobe{i} text\n", encoding="utf-8")
    m = Memory(root, keyword_only=True)
    m.index()
    m.close()
    env = {**os.environ, "MEMORY_SERVER_CRASH_AT": "index-rebuild-mid-keyword"}
    killed = subprocess.run(
        [*CLI, "index", "--rebuild", "--keyword-only", "--root", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    m = Memory(root, keyword_only=True)
    try:
        assert all(m.search_exact(f"rebuildprobe{i}") for i in range(40))  # before any new index pass
    finally:
        m.close()


def test_memory_status_says_why_background_indexing_stopped(tmp_path: Path) -> None:
    with small_disk(tmp_path, "4m") as disk:
        root = disk / "memory"
        init_root(root)
        (root / "topics" / "first.md").write_text("# First\n\nfirstword here\n", encoding="utf-8")
        m = Memory(root, keyword_only=True)
        worker = m.background(watch=False)
        try:
            m.index()
            assert m.status().indexing.stopped is None
            (root / "topics" / "big.md").write_text(words_topic(1, 60_000), encoding="utf-8")
            fill(disk)
            assert not worker._sync(None)
            stopped = str(m.status().indexing.stopped)
            assert "full" in stopped and "trying again in 2 s" in stopped, stopped
            assert not worker._sync(None)
            assert "trying again in 4 s" in str(m.status().indexing.stopped)  # backing off, not every second
            os.remove(disk / "filler.bin")
            deadline = time.monotonic() + 30
            while not worker._sync(None):
                assert time.monotonic() < deadline, m.status().indexing
            assert m.status().indexing.stopped is None and m.search_exact("w1x000042")
        finally:
            worker.stop()
            m.close()

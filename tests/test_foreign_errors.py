"""Foreign errors are translated in one place each: Chroma's (its Rust core's panics included) and SQLite's.
A damaged store leads to the repair path and status says so; a busy, closed or full database is never taken
for a damaged one; no command prints a traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import run_cli

from memory_server import Memory
from memory_server.errors import MemoryServerError
from memory_server.files.sqlite import is_damage


def _garble(store: Path) -> None:
    """16 KB of 0xFF at offset 40960 of chroma.sqlite3: its Rust core panics reading it."""
    assert store.stat().st_size > 40960 + 16384
    with open(store, "r+b") as fh:
        fh.seek(40960)
        fh.write(b"\xff" * 16384)


def test_a_garbled_chroma_store_is_repaired_by_every_command(root: Path) -> None:
    r = run_cli("index", "--root", str(root), timeout=600)
    assert r.returncode == 0, r.stderr
    _garble(root / ".memory" / "chroma" / "chroma.sqlite3")
    for args in (["search", "belt tuning"], ["index"], ["index", "--rebuild"], ["search", "printer firmware"]):
        r = run_cli(*args, "--root", str(root), timeout=600)
        assert r.returncode == 0, (args, r.stderr)
        assert "Traceback" not in r.stderr, (args, r.stderr)
        if args == ["index"]:
            assert "deleted it and rebuilt it from the files" in r.stderr
    r = run_cli("search", "belt tuning", "--json", "--root", str(root), timeout=600)
    assert r.returncode == 0 and '"mode": "hybrid"' in r.stdout, r.stderr  # the semantic side answers again


def test_a_garbled_store_met_by_a_search_is_repaired_by_the_server_worker(root: Path) -> None:
    from memory_server.testing import FakeEmbedder

    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    m.close()
    _garble(root / ".memory" / "chroma" / "chroma.sqlite3")
    memory = Memory(root, embedder=FakeEmbedder())
    worker = memory.background(watch=False)
    try:
        hits, mode = memory.search_memory("belt tuning")  # answered from keywords, not a panic
        assert hits and mode == "keyword"
        assert "damaged" in str(memory.status().semantic_index.error)
        worker.start()
        import time

        deadline = time.monotonic() + 60
        while memory.search_memory("belt tuning")[1] != "hybrid":
            assert time.monotonic() < deadline, memory.status()
            time.sleep(0.2)
        assert any("deleted it and rebuilt it" in n for n in memory.status().notes)
    finally:
        worker.stop()
        memory.close()


def test_a_closed_connection_is_not_taken_for_damage(memory: Memory, root: Path) -> None:
    index_file = root / ".memory" / "index.sqlite3"
    inode = index_file.stat().st_ino
    memory.fts.conn().close()  # what a search meets when the server closes the memory under it
    with pytest.raises(MemoryServerError, match="closed"):  # IndexUnavailableError: says what happened
        memory.search_exact("SAVE_CONFIG")
    assert index_file.stat().st_ino == inode  # the index was not thrown away and rebuilt
    assert not any("rebuilt" in n for n in memory.indexer.notes)


def test_no_repair_starts_while_the_memory_closes(memory: Memory, root: Path) -> None:
    index_file = root / ".memory" / "index.sqlite3"
    memory.fts.close()
    index_file.write_bytes(b"\0" * 4096)  # damaged...
    memory.indexer.cancel.set()  # ...while the server is stopping
    with pytest.raises(MemoryServerError, match="shutting down"):
        memory.search_exact("SAVE_CONFIG")
    assert index_file.read_bytes() == b"\0" * 4096  # untouched: the next start repairs it


def test_what_counts_as_damage() -> None:
    assert is_damage(sqlite3.DatabaseError("file is not a database"))
    assert is_damage(sqlite3.DatabaseError("database disk image is malformed"))
    assert not is_damage(sqlite3.OperationalError("database is locked"))
    assert not is_damage(sqlite3.OperationalError("database or disk is full"))
    assert not is_damage(sqlite3.OperationalError("unable to open database file"))
    assert not is_damage(sqlite3.ProgrammingError("Cannot operate on a closed database."))
    assert not is_damage(sqlite3.InterfaceError("bad parameter"))


OPEN_MANY = """
import sys, time
from pathlib import Path
from memory_server.files.sqlite import connect
start = float(sys.argv[2])
for i in range(20):
    while time.time() < start + i * 0.25:  # all processes reach each new file at the same moment
        pass
    connect(Path(sys.argv[1]) / f"db{i}.sqlite3", busy_seconds=10.0).close()
"""


def test_processes_opening_one_new_database_at_once_all_get_it(tmp_path: Path) -> None:
    """Switching a new file to WAL is refused at once, without a busy wait, while another process does the
    same: every process must still open it (several servers start on one fresh root)."""
    import os
    import subprocess
    import sys
    import time

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    start = time.time() + 2.0
    procs = [
        subprocess.Popen([sys.executable, "-c", OPEN_MANY, str(tmp_path), str(start)], env=env, stderr=subprocess.PIPE)
        for _ in range(6)
    ]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-300:] for e in errors if e]

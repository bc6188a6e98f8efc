"""The SQLite side of the index: the manifest of files, the chunks, and their FTS5 keyword index.

One database file under `.memory/`. WAL mode, so readers (any thread, any process) never wait for the
single writer. Each thread gets its own connection: the MCP SDK runs plain tools in worker threads, and
a sqlite3 connection must not be shared between threads that use it at the same time.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from memory_server.errors import CorruptIndexError
from memory_server.files.reading import FileText
from memory_server.files.root import Layer
from memory_server.files.sqlite import ThreadConnections, connect, file_identity, is_damage, rollback
from memory_server.parse.markdown import Chunk, Document

log = logging.getLogger(__name__)
T = TypeVar("T")

SCHEMA_VERSION = "4"
FTS_FILE = "index.sqlite3"  # under the root's .memory/

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    path TEXT PRIMARY KEY,
    layer TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    date TEXT,
    status TEXT NOT NULL DEFAULT 'ok',      -- ok | degraded | skipped
    message TEXT NOT NULL DEFAULT '',
    chunks INTEGER NOT NULL DEFAULT 0,
    vectors_sha256 TEXT,                    -- content whose vectors are in Chroma; NULL = not yet
    source TEXT                             -- transcripts only: the real JSONL file
);
CREATE TABLE IF NOT EXISTS chunks(
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    layer TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    title TEXT NOT NULL,
    heading TEXT NOT NULL,
    date TEXT,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path, start_line);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, heading, title, content='chunks', content_rowid='rowid',
    tokenize="porter unicode61 remove_diacritics 2"
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text, heading, title) VALUES (new.rowid, new.text, new.heading, new.title);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading, title)
    VALUES ('delete', old.rowid, old.text, old.heading, old.title);
END;
"""

CHUNK_COLUMNS = "c.id, c.path, c.layer, c.start_line, c.end_line, c.title, c.heading, c.date, c.text"


@dataclass(frozen=True)
class FileRecord:
    path: str
    layer: Layer
    size: int
    mtime_ns: int
    sha256: str
    title: str
    date: str | None
    status: str
    message: str
    chunks: int
    vectors_sha256: str | None
    source: str | None = None

    @classmethod
    def parsed(cls, path: str, layer: Layer, content: FileText, doc: Document, source: str | None = None) -> FileRecord:
        """The record of a file read and parsed whole: degraded when reading or parsing warned."""
        warnings = [*content.warnings, *doc.warnings]
        status = "degraded" if warnings else "ok"
        return cls(
            path, layer, content.size, content.mtime_ns, content.sha256, doc.title, doc.date, status,
            "; ".join(warnings), len(doc.chunks), None, source,
        )  # fmt: skip

    @classmethod
    def skipped(cls, path: str, layer: Layer, size: int, mtime_ns: int, why: str) -> FileRecord:
        """The record of a file left out of the index, with the reason (`status` says so)."""
        return cls(path, layer, size, mtime_ns, "", "", None, "skipped", why, 0, None)


def row_to_chunk(row: Sequence[Any]) -> Chunk:
    return Chunk(*row[:9])


class FtsIndex:
    """The SQLite database of files, chunks and FTS5 postings at `path`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()  # per-thread query cache
        self._connections = ThreadConnections(self._open)

    # -- connections ------------------------------------------------------------------------------

    def conn(self) -> sqlite3.Connection:
        """This thread's connection, opened (and the schema made) on first use, and opened again when the
        file was deleted or replaced since (another process rebuilt a corrupt index). Closed when the
        thread ends or hands it back (files/sqlite.py ThreadConnections)."""
        return self._connections.get(file_id=file_identity(self.path))

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            c = connect(self.path, busy_seconds=30.0)
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise  # a full disk or a lock is not damage: never a reason to remake the index
            raise CorruptIndexError(str(exc)) from exc
        try:
            version = self._schema_version(c)
            if version is None:
                c.executescript("BEGIN;" + SCHEMA + "COMMIT;")
                c.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif version != SCHEMA_VERSION:
                raise CorruptIndexError(f"index schema {version} is not {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            c.close()
            if not is_damage(exc):
                raise
            raise CorruptIndexError(str(exc)) from exc
        except CorruptIndexError:
            c.close()
            raise
        return c

    @staticmethod
    def _schema_version(c: sqlite3.Connection) -> str | None:
        has_meta = c.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            return None
        row = c.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        return row[0] if row else None

    def check(self) -> None:
        """Raise CorruptIndexError unless the database opens and passes a quick integrity check."""
        c = self.conn()
        try:
            ok = c.execute("PRAGMA quick_check").fetchone()
            c.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'a'").fetchone()
            # The FTS5 postings agree with the chunks table (raises SQLITE_CORRUPT_VTAB when they do not).
            c.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            raise CorruptIndexError(str(exc)) from exc
        if not ok or ok[0] != "ok":
            raise CorruptIndexError(f"integrity check failed: {ok}")

    def close(self) -> None:
        self._connections.close()
        self._local = threading.local()

    @property
    def open_connections(self) -> int:
        """Connections open now: held by threads, or handed back for the next."""
        return self._connections.open_count

    @property
    def idle_connections(self) -> int:
        """Connections handed back and waiting for a thread."""
        return self._connections.idle_count

    def destroy(self) -> None:
        """Close every connection and delete the database files (used to recover from corruption)."""
        self.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(str(self.path) + suffix)
            except FileNotFoundError:
                pass

    # -- meta -----------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.conn().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn().execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """A counter the writer bumps after every change, so other processes know to refresh."""
        return int(self.get_meta("generation") or 0)

    def bump_generation(self) -> None:
        self.conn().execute(
            "INSERT INTO meta VALUES ('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )
        self.set_meta("updated_at", str(time.time()))

    # -- manifest -------------------------------------------------------------------------------

    def files(self) -> dict[str, FileRecord]:
        rows = self.conn().execute("SELECT * FROM files").fetchall()
        return {r[0]: FileRecord(*r) for r in rows}

    def file(self, path: str) -> FileRecord | None:
        row = self.conn().execute("SELECT * FROM files WHERE path=?", (path,)).fetchone()
        return FileRecord(*row) if row else None

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        self.conn().execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?", (size, mtime_ns, path))

    def replace_file(self, record: FileRecord, chunks: Iterable[Chunk]) -> None:
        """Replace a file's manifest row and all its chunks (call inside a transaction)."""
        c = self.conn()
        c.execute("DELETE FROM chunks WHERE path=?", (record.path,))
        c.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", tuple(record.__dict__.values()))
        c.executemany(
            "INSERT OR REPLACE INTO chunks(id, path, layer, start_line, end_line, title, heading, date, text) "
            "VALUES (?,?,?,?,?,?,?,?,?)",
            [(k.id, k.path, k.layer, k.start_line, k.end_line, k.title, k.heading, k.date, k.text) for k in chunks],
        )

    def extend_file(self, record: FileRecord, chunks: Iterable[Chunk], from_line: int) -> None:
        """A file that grew: replace its chunks that start at `from_line` or later, and its manifest row (with
        its chunk count, kept and new); call inside a transaction."""
        c = self.conn()
        c.execute("DELETE FROM chunks WHERE path=? AND start_line>=?", (record.path, from_line))
        c.executemany(
            "INSERT OR REPLACE INTO chunks(id, path, layer, start_line, end_line, title, heading, date, text) "
            "VALUES (?,?,?,?,?,?,?,?,?)",
            [(k.id, k.path, k.layer, k.start_line, k.end_line, k.title, k.heading, k.date, k.text) for k in chunks],
        )
        (count,) = c.execute("SELECT count(*) FROM chunks WHERE path=?", (record.path,)).fetchone()
        row = {**record.__dict__, "chunks": int(count)}
        c.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", tuple(row.values()))

    def remove_file(self, path: str) -> None:
        c = self.conn()
        c.execute("DELETE FROM chunks WHERE path=?", (path,))
        c.execute("DELETE FROM files WHERE path=?", (path,))

    def set_vectors_sha(self, path: str, sha: str | None) -> None:
        self.conn().execute("UPDATE files SET vectors_sha256=? WHERE path=?", (sha, path))

    def clear(self) -> None:
        c = self.conn()
        c.execute("DELETE FROM chunks")
        c.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')")
        c.execute("DELETE FROM files")

    # -- reading chunks -----------------------------------------------------------------------------

    def chunks_of(self, path: str) -> list[Chunk]:
        rows = (
            self.conn()
            .execute(f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.path=? ORDER BY c.start_line, c.rowid", (path,))
            .fetchall()
        )
        return [row_to_chunk(r) for r in rows]

    def chunks_by_id(self, ids: Sequence[str]) -> dict[str, Chunk]:
        out: dict[str, Chunk] = {}
        c = self.conn()
        for i in range(0, len(ids), 500):
            part = list(ids[i : i + 500])
            marks = ",".join("?" * len(part))
            for r in c.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.id IN ({marks})", part):
                out[r[0]] = row_to_chunk(r)
        return out

    def neighbours(self, ids: Sequence[str]) -> dict[str, list[Chunk]]:
        """For each chunk id, the chunks just before and after it in its file. A file's chunks are inserted
        together in line order (replace_file), so a neighbour is the next or previous rowid of the same path."""
        c = self.conn()
        rows: dict[str, tuple[int, str]] = {}
        for i in range(0, len(ids), 500):
            id_part = list(ids[i : i + 500])
            marks = ",".join("?" * len(id_part))
            for rowid, cid, path in c.execute(f"SELECT rowid, id, path FROM chunks WHERE id IN ({marks})", id_part):
                rows[cid] = (rowid, path)
        wanted = sorted({r + d for r, _ in rows.values() for d in (-1, 1)})
        found: dict[int, Chunk] = {}
        for i in range(0, len(wanted), 500):
            part = wanted[i : i + 500]
            marks = ",".join("?" * len(part))
            for row in c.execute(f"SELECT c.rowid, {CHUNK_COLUMNS} FROM chunks c WHERE c.rowid IN ({marks})", part):
                found[row[0]] = row_to_chunk(row[1:])
        out: dict[str, list[Chunk]] = {}
        for cid, (rowid, path) in rows.items():
            out[cid] = [found[r] for r in (rowid - 1, rowid + 1) if r in found and found[r].path == path]
        return out

    def _cached(self, key: str, compute: Callable[[], T]) -> T:
        # The generation numbers a database's changes; a rebuilt database starts counting again, so the
        # file's identity is part of the key.
        number = self.generation()
        held = self._connections.current()
        generation = (number, held.file_id if held is not None else None)
        cache: tuple[tuple[int, Any], dict[str, Any]] | None = getattr(self._local, "cache", None)
        if cache is None or cache[0] != generation or len(cache[1]) > 5000:
            cache = (generation, {})
            self._local.cache = cache
        if key not in cache[1]:
            cache[1][key] = compute()
        return cast(T, cache[1][key])

    def layers_present(self) -> set[str]:
        """The layers that have files in the index (cached until the index changes)."""
        sql = "SELECT DISTINCT layer FROM files"
        return self._cached("layers", lambda: {str(r[0]) for r in self.conn().execute(sql)})

    def chunk_count(self) -> int:
        return self._cached("chunks", lambda: int(self.conn().execute("SELECT count(*) FROM chunks").fetchone()[0]))

    def count_matching(self, expression: str) -> int:
        """How many chunks an FTS5 expression matches (cheap: no ranking)."""
        return self._cached(
            "count:" + expression,
            lambda: int(
                self.conn()
                .execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,))
                .fetchone()[0]
            ),
        )

    def iter_chunk_ids(self) -> Iterator[tuple[str, str]]:
        yield from self.conn().execute("SELECT id, path FROM chunks")

    def iter_embedded_chunks(self) -> Iterator[tuple[str, str]]:
        """(chunk id, path) of every chunk that gets a vector (all but transcripts'), a file's in line order
        as `chunks_of` gives them: the order that places them in the vector index's entries."""
        yield from self.conn().execute(
            "SELECT id, path FROM chunks WHERE layer != 'transcript' ORDER BY path, start_line, rowid"
        )

    def file_count(self) -> int:
        """Files in the manifest (cheap: the chunk counts of `counts` scan every chunk)."""
        return int(self.conn().execute("SELECT count(*) FROM files").fetchone()[0])

    def vector_backlog(self) -> tuple[int, int]:
        """(files whose vectors are not stored for their current text, files that get vectors): what the vector
        store still lacks, by the manifest."""
        row = (
            self.conn()
            .execute(
                "SELECT count(*), coalesce(sum(vectors_sha256 IS NULL OR vectors_sha256 != sha256), 0) FROM files "
                "WHERE status != 'skipped' AND layer != 'transcript'"
            )
            .fetchone()
        )
        return int(row[1]), int(row[0])

    def counts(self) -> dict[str, int]:
        c = self.conn()
        out = {"files": 0, "chunks": 0}
        out["files"] = c.execute("SELECT count(*) FROM files").fetchone()[0]
        out["chunks"] = c.execute("SELECT count(*) FROM chunks").fetchone()[0]
        for layer, n in c.execute("SELECT layer, count(*) FROM chunks GROUP BY layer"):
            out[f"chunks_{layer}"] = n
        return out

    # -- transactions ---------------------------------------------------------------------------

    def begin(self) -> None:
        self.conn().execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.conn().execute("COMMIT")

    def rollback(self) -> None:
        rollback(self.conn())  # quietly, if SQLite already rolled back: the caller raises the real error

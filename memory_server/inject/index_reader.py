"""The keyword index as a hook reads it: opened read-only, queried with literal words, never written or made.

A hook runs in a short process of its own, beside the running server (the one writer, which keeps the index
in step with the files). It opens `.memory/index.sqlite3` read-only, loads no model and makes nothing: a
root with no index yet, or an index of another schema, gives no answer rather than an error.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote as url_quote

from memory_server.files.root import STATE_DIR
from memory_server.index.fts import CHUNK_COLUMNS, FTS_FILE, SCHEMA_VERSION, row_to_chunk
from memory_server.parse.markdown import Chunk
from memory_server.search.exact import BM25_WEIGHTS, quote

log = logging.getLogger(__name__)

BUSY_SECONDS = 1.0  # a hook waits at most this long for a writer's lock


class KeywordIndex:
    """A read-only connection to a root's keyword index (close it, or use it as a context manager)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, root: Path) -> KeywordIndex | None:
        """The root's keyword index, or None when there is none (or it cannot be read: said on stderr)."""
        path = root / STATE_DIR / FTS_FILE
        if not path.is_file():
            return None
        uri = f"file:{url_quote(str(path.resolve()))}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_SECONDS, isolation_level=None)
        except sqlite3.Error as exc:
            log.warning("cannot open the keyword index %s: %s", path, exc)
            return None
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.Error as exc:
            log.warning("cannot read the keyword index %s: %s", path, exc)
            row = None
        if row is None or row[0] != SCHEMA_VERSION:
            conn.close()
            return None
        return cls(conn)

    def __enter__(self) -> KeywordIndex:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    def document_frequency(self, word: str) -> int:
        """How many chunks hold `word` (as FTS5 tokenizes and stems it)."""
        row = self.conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (quote(word),)).fetchone()
        return int(row[0])

    def chunk_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def any_of(self, words: Sequence[str], limit: int, where: str = "", args: Sequence[str] = ()) -> list[Chunk]:
        """Chunks holding any of `words`, best BM25 first, restricted by an SQL condition on `c`."""
        return [chunk for chunk, _ in self.ranked(" OR ".join(quote(w) for w in words), limit, where, args)]

    def ranked(
        self, expression: str, limit: int, where: str = "", args: Sequence[str] = ()
    ) -> list[tuple[Chunk, float]]:
        """(chunk, BM25 higher-is-better) for an FTS5 expression built from quoted words."""
        if not expression:
            return []
        weights = ", ".join(str(x) for x in BM25_WEIGHTS)
        sql = (
            f"SELECT {CHUNK_COLUMNS}, bm25(chunks_fts, {weights}) AS rank FROM chunks_fts "
            f"JOIN chunks c ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ? {where} ORDER BY rank LIMIT ?"
        )
        try:
            rows = self.conn.execute(sql, [expression, *args, limit]).fetchall()
        except sqlite3.Error as exc:  # busy past the wait, or damaged: the server repairs it; the hook says nothing
            log.warning("keyword index not readable now: %s", exc)
            return []
        return [(row_to_chunk(r), -float(r[9])) for r in rows]

"""The recall log: which searches were asked, and what they found, so /dream can weigh what matters.

Every `search_memory` / `search_exact` call appends one event to `.memory/recall.sqlite3`: the time, the
tool, the query as typed, a normalised query key (so "Deploy to staging?" and "staging deploy" count as
one question), and the hits (path, lines, layer, score, and the literal tier for exact search) plus the
share of the query's content words the best hit holds ("coverage", for spotting knowledge gaps).

Bounded: only the latest `max_events` events are kept (older ones roll off on insert). SQLite in WAL
mode with a busy timeout, so several servers on one root append at once without losing events.
Recording is best effort: a failure is logged and never breaks the search that triggered it.

    log = RecallLog(root.ensure_state_dir())
    log.record("search_exact", "SAVE_CONFIG", hits)
    for event in log.events(since=time.time() - 86400): ...
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_server.files.sqlite import connect, is_damage, quarantine, rollback
from memory_server.parse.text import STOP_WORDS
from memory_server.search.exact import TOKEN  # the same tokens FTS5's unicode61 tokenizer makes
from memory_server.sessions.redact import redact_for_report

log = logging.getLogger(__name__)

RECALL_DB = "recall.sqlite3"
DEFAULT_MAX_EVENTS = 5000

SCHEMA = """
CREATE TABLE IF NOT EXISTS events(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    tool TEXT NOT NULL,
    query TEXT NOT NULL,
    key TEXT NOT NULL,
    coverage REAL NOT NULL DEFAULT 0,
    hits TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_ts ON events(ts);
"""


def content_words(text: str) -> list[str]:
    """Casefolded word tokens without stop words (all tokens when every one is a stop word)."""
    words = [w.casefold() for w in TOKEN.findall(unicodedata.normalize("NFKC", text))]
    content = [w for w in words if w not in STOP_WORDS]
    return content or words


def query_key(query: str) -> str:
    """A normalised key for a query: casefolded, punctuation stripped, unique content words sorted."""
    return " ".join(sorted(set(content_words(query))))


@dataclass(frozen=True)
class RecallEvent:
    id: int
    time: float
    tool: str
    query: str
    key: str
    coverage: float  # share of the query's content words the best-covering hit holds (0..1)
    hits: tuple[dict[str, Any], ...]  # path, start_line, end_line, layer, score (+ match for exact search)


def _hit_fields(hit: Any) -> tuple[dict[str, Any], str]:
    get = hit.get if isinstance(hit, Mapping) else (lambda name, default=None: getattr(hit, name, default))
    out: dict[str, Any] = {
        "path": str(get("path", "")),
        "start_line": int(get("start_line", 0) or 0),
        "end_line": int(get("end_line", 0) or 0),
        "layer": str(get("layer", "") or ""),
        "score": round(float(get("score", 0.0) or 0.0), 6),
    }
    if get("match", None):
        out["match"] = str(get("match"))
    return out, str(get("text", "") or "")


def coverage(query: str, texts: Iterable[str]) -> float:
    """The largest share of the query's content words that one of `texts` holds."""
    wanted = set(content_words(query))
    if not wanted:
        return 0.0
    best = 0.0
    for text in texts:
        have = set(content_words(text)) if text else set()
        best = max(best, len(wanted & have) / len(wanted))
    return best


class RecallLog:
    """Append-only, bounded log of searches under a root's `.memory/` folder. Safe across threads and processes."""

    def __init__(self, state_dir: str | os.PathLike[str], *, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        self.path = Path(state_dir) / RECALL_DB
        self.max_events = max(1, int(max_events))
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = connect(self.path, busy_seconds=10.0)
            conn.executescript(SCHEMA)
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def record(self, tool: str, query: str, hits: Iterable[Any], when: float | None = None) -> bool:
        """Append one search. `hits` are Hit objects or dicts with path/start_line/end_line/layer/score.

        Returns False (and logs why) when the event could not be written; never raises for that.
        """
        try:
            fields = [_hit_fields(h) for h in hits]
            query = redact_for_report(str(query))  # a searched secret must not land in the log or a report
            row = (
                float(time.time() if when is None else when),
                str(tool),
                str(query),
                query_key(str(query)),
                round(coverage(str(query), (text for _, text in fields)), 4),
                json.dumps([f for f, _ in fields], ensure_ascii=False, separators=(",", ":")),
            )
            with self._lock:
                conn = self._connect()
                conn.execute("BEGIN IMMEDIATE")
                try:
                    cur = conn.execute(
                        "INSERT INTO events(ts, tool, query, key, coverage, hits) VALUES (?,?,?,?,?,?)", row
                    )
                    conn.execute("DELETE FROM events WHERE id <= ?", (int(cur.lastrowid or 0) - self.max_events,))
                    conn.execute("COMMIT")
                except BaseException:
                    rollback(conn)  # SQLite may have rolled back already (a full disk): keep the real error
                    raise
            return True
        except (sqlite3.Error, OSError, TypeError, ValueError) as exc:
            log.warning("could not record the search in the recall log %s: %s", self.path, exc)
            self._recover(exc)
            return False

    def _recover(self, exc: BaseException) -> None:
        """A damaged log is set aside so the next search starts a fresh one (the searches recorded in it
        are lost, nothing else: memory files never depend on it)."""
        if not is_damage(exc):
            return
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                except sqlite3.Error:
                    pass
                self._conn = None
            aside = quarantine(self.path)
        log.warning("the recall log %s was damaged; moved it to %s and started a new one", self.path, aside)

    def events(self, since: float | None = None) -> list[RecallEvent]:
        """Events in the order they were recorded (optionally only those at or after `since`)."""
        if not self.path.exists():
            return []
        sql = "SELECT id, ts, tool, query, key, coverage, hits FROM events"
        args: tuple[Any, ...] = ()
        if since is not None:
            sql += " WHERE ts >= ?"
            args = (float(since),)
        try:
            with self._lock:
                rows = self._connect().execute(sql + " ORDER BY id", args).fetchall()
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            self._recover(exc)
            return []
        return [RecallEvent(r[0], r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6]))) for r in rows]

    def count(self) -> int:
        if not self.path.exists():
            return 0
        try:
            with self._lock:
                return int(self._connect().execute("SELECT COUNT(*) FROM events").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            self._recover(exc)
            return 0


__all__ = ["RecallLog", "RecallEvent", "query_key", "content_words", "coverage"]

"""SQLite files under `.memory/`: the one way to open them, and setting aside a damaged one.

Every database here is derived state shared by several threads and processes: opened in autocommit mode
(callers BEGIN what must be atomic), with a busy timeout and the write-ahead log. On a read-only root the
database is opened read-only, so searches still work from an index built earlier.

A truncated or overwritten database raises `sqlite3.DatabaseError` ("file is not a database", "database
disk image is malformed"); a busy one raises `OperationalError` ("database is locked"), which is not
damage and must never cause a reset.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

log = logging.getLogger(__name__)

SUFFIXES = ("", "-wal", "-shm", "-journal")


def is_writable(path: Path) -> bool:
    """Whether the database at `path` (and its folder, for the WAL files) can be written."""
    folder_ok = os.access(path.parent, os.W_OK)
    return folder_ok and (not path.exists() or os.access(path, os.W_OK))


def connect(path: Path, *, busy_seconds: float = 30.0, synchronous: bool = True) -> sqlite3.Connection:
    """Open the database at `path`: shared across threads, autocommit, busy timeout, WAL (and
    synchronous=NORMAL unless `synchronous` is False). Read-only when the file or folder cannot be written."""
    path = Path(path)
    if not is_writable(path) and path.exists():
        return _connect_read_only(path, busy_seconds)
    c = sqlite3.connect(path, timeout=busy_seconds, isolation_level=None, check_same_thread=False)
    try:
        c.execute(f"PRAGMA busy_timeout={int(busy_seconds * 1000)}")
        c.execute("PRAGMA journal_mode=WAL")
        if synchronous:
            c.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        c.close()
        raise
    return c


def _connect_read_only(path: Path, busy_seconds: float) -> sqlite3.Connection:
    # Without write access to the folder SQLite cannot make the WAL index (-shm); a read-only root does not
    # change under us, so `immutable` lets it read the file as it is.
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    c = sqlite3.connect(uri, uri=True, timeout=busy_seconds, isolation_level=None, check_same_thread=False)
    try:
        c.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return c
    except sqlite3.OperationalError:
        c.close()
    log.info("opening %s as an immutable read-only database", path)
    return sqlite3.connect(
        uri + "&immutable=1", uri=True, timeout=busy_seconds, isolation_level=None, check_same_thread=False
    )


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already (it rolls back by itself on some errors,
    a full disk among them): a second ROLLBACK would raise and hide the error that caused it."""
    if not conn.in_transaction:
        return
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        log.debug("rollback after an error failed too: %s", exc)


def is_damage(exc: BaseException) -> bool:
    """True when `exc` says the database file itself is unusable (not merely busy or misused)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    text = str(exc).lower()
    if isinstance(exc, sqlite3.OperationalError):
        return "malformed" in text or "not a database" in text or "no such table" in text
    return True


def quarantine(path: Path) -> Path:
    """Move a damaged database (and its WAL files) to `<name>.corrupt` for a person to inspect; return
    where it went. The caller then opens `path` anew, empty."""
    path = Path(path)
    aside = path.with_name(path.name + ".corrupt")
    for suffix in SUFFIXES:
        src = Path(str(path) + suffix)
        try:
            os.replace(src, Path(str(aside) + suffix))
        except FileNotFoundError:
            pass
        except OSError as exc:  # pragma: no cover - e.g. a read-only folder
            log.warning("could not move %s aside: %s", src, exc)
    return aside

"""SQLite files under `.memory/`: the one way to open them, and setting aside a damaged one.

Every database here is derived state shared by several threads and processes: opened in autocommit mode
(callers BEGIN what must be atomic), with a busy timeout and the write-ahead log. On a read-only root the
database is opened read-only, so searches still work from an index built earlier.

`ThreadConnections` owns the connections of one database: one per thread while the thread uses it, each
closed when its thread ends, and all of them by `close()`. A thread that is done for now (a tool call
answered: `release_this_thread`) hands its connection back, and the next thread to ask takes it instead of
opening one. The MCP SDK runs tools in a pool of worker threads that come and go; without the hand-back a
server would hold a connection per live worker, and SQLite keeps the file descriptor of a connection closed
while another holds a lock, so the count crept up with the largest number of workers ever alive. With it,
the connections are as many as the calls that were ever in flight at once.

A truncated or overwritten database raises `sqlite3.DatabaseError` ("file is not a database", "database
disk image is malformed"); a busy one raises `OperationalError` ("database is locked"), which is not
damage and must never cause a reset. `is_damage` tells them apart by SQLite's own error code; a closed
connection or a misuse (`ProgrammingError`, `InterfaceError`) is never damage.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
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
        _enter_wal(c, busy_seconds)
        if synchronous:
            c.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        c.close()
        raise
    return c


def _enter_wal(c: sqlite3.Connection, busy_seconds: float) -> None:
    # Switching a new file to WAL needs an exclusive lock, and SQLite answers "database is locked" at once,
    # without its busy handler, when another process opens the same new file at that moment: wait here instead.
    deadline = time.monotonic() + busy_seconds
    pause = 0.005
    while True:
        try:
            c.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


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


# SQLite's primary result codes that mean the file's content is wrong (the extended codes keep them in the low byte).
SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26
_DAMAGE_TEXT = ("malformed", "not a database", "no such table", "corrupt")


def is_damage(exc: BaseException) -> bool:
    """True when `exc` says the database file itself is unusable: SQLite reports it corrupt or not a database
    (or a table of the schema is missing). Busy, locked, full, read-only, a closed connection or a misuse are
    not damage, and must never start a repair."""
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(exc, sqlite3.ProgrammingError | sqlite3.InterfaceError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return True
    text = str(exc).lower()
    return any(word in text for word in _DAMAGE_TEXT)


def unavailable_reason(exc: BaseException) -> str:
    """What a SQLite error that is not damage means, and what to do (for IndexUnavailableError/LockedError)."""
    text = str(exc)
    low = text.lower()
    if isinstance(exc, sqlite3.ProgrammingError) and "closed" in low:
        return f"the index was closed ({text}): the memory is shutting down"
    if "locked" in low or "busy" in low:
        return f"the keyword index is busy ({text}); try again in a moment"
    if "full" in low:
        return f"the disk is full ({text}); free some space"
    if "readonly" in low or "read-only" in low:
        return f"the index cannot be written ({text}): its folder is read-only"
    if "unable to open" in low:
        return f"the index file cannot be opened ({text}): too many open files, or its folder is gone"
    return f"the keyword index failed ({text}); try again, or run `memory-server index`"


class _Held:
    """A thread's connection (and what the owner remembers with it); when the thread ends this object is
    freed with the thread's locals, and its finalizer closes the connection."""

    __slots__ = ("__weakref__", "conn", "file_id")

    def __init__(self, conn: sqlite3.Connection, file_id: object) -> None:
        self.conn = conn
        self.file_id = file_id


def _close_quietly(conn: sqlite3.Connection) -> None:
    try:
        conn.close()
    except sqlite3.Error:
        pass


class ThreadConnections:
    """One connection per thread to one database, made by `open_connection` on a thread's first use or taken
    from those handed back (`release`); closed when the thread ends holding it, when `forget()` is called in
    that thread, or all at once by `close()`."""

    def __init__(self, open_connection: Callable[[], sqlite3.Connection], *, keep_idle: int = 8) -> None:
        self._open = open_connection
        self._local = threading.local()
        self._live: weakref.WeakSet[_Held] = weakref.WeakSet()
        self._idle: list[_Held] = []
        self._keep_idle = keep_idle
        self._lock = threading.Lock()

    def current(self) -> _Held | None:
        """This thread's connection and what was stored with it, if it has one."""
        return getattr(self._local, "held", None)

    def get(self, file_id: object = None) -> sqlite3.Connection:
        """This thread's connection to the file `file_id` names (`file_identity`): the one it holds, one handed
        back earlier for the same file, else a new one. A connection to a file since replaced (another process
        set a damaged database aside and made a new one) is closed, unless a transaction is open on it."""
        held = self.current()
        if held is not None and held.file_id != file_id and not held.conn.in_transaction:
            self.forget()
            held = None
        if held is None:
            held = self._take_idle(file_id) or self._new(file_id)
            self._local.held = held
            _holding(self)
        return held.conn

    def _take_idle(self, file_id: object) -> _Held | None:
        with self._lock:
            # a connection to a file replaced since (a rebuilt index) reads the old one: all such are closed
            stale = [h for h in self._idle if h.file_id != file_id]
            self._idle = [h for h in self._idle if h.file_id == file_id]
            found = self._idle.pop() if self._idle else None
            for held in stale:
                self._live.discard(held)
        for held in stale:
            _close_quietly(held.conn)
        return found

    def _new(self, file_id: object) -> _Held:
        conn = self._open()
        held = _Held(conn, file_id)
        weakref.finalize(held, _close_quietly, conn)
        with self._lock:
            self._live.add(held)
        return held

    def release(self) -> bool:
        """This thread is done for now: hand its connection back for the next thread that asks (closed when
        enough are idle already). False when it keeps it: a transaction is open."""
        held = self.current()
        if held is None:
            return True
        if held.conn.in_transaction:
            return False
        self._local.held = None
        with self._lock:
            keep = held in self._live and len(self._idle) < self._keep_idle
            if keep:
                self._idle.append(held)
            else:
                self._live.discard(held)
        if not keep:
            _close_quietly(held.conn)
        return True

    def forget(self) -> None:
        """Close this thread's connection (the next `get` opens a new one)."""
        held = self.current()
        self._local.held = None
        if held is not None:
            with self._lock:
                self._live.discard(held)
            _close_quietly(held.conn)

    def close(self) -> None:
        """Close every connection, in use or handed back; threads that use the database again open new ones."""
        with self._lock:
            live = list(self._live)
            self._live.clear()
            self._idle.clear()
            self._local = threading.local()
        for held in live:
            _close_quietly(held.conn)

    @property
    def open_count(self) -> int:
        """Connections open now: held by threads, or handed back and waiting for the next."""
        with self._lock:
            return len(self._live)

    @property
    def idle_count(self) -> int:
        """Connections handed back and not yet taken again."""
        with self._lock:
            return len(self._idle)


_holdings = threading.local()


def _holding(owner: ThreadConnections) -> None:
    owned: weakref.WeakSet[ThreadConnections] | None = getattr(_holdings, "owners", None)
    if owned is None:
        owned = _holdings.owners = weakref.WeakSet()
    owned.add(owner)


def release_this_thread() -> None:
    """Hand back every connection this thread holds, of every database (a tool call has been answered)."""
    owned: weakref.WeakSet[ThreadConnections] | None = getattr(_holdings, "owners", None)
    if owned is None:
        return
    for owner in list(owned):
        if owner.release():
            owned.discard(owner)


def file_identity(path: Path) -> tuple[int, int] | None:
    """The identity of the file at `path` (device, inode), or None when there is none: what tells a database
    from the one another process put in its place."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


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

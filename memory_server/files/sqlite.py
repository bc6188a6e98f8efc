"""SQLite files under `.memory/` are derived state: when one is damaged, set it aside and start afresh.

A truncated or overwritten database raises `sqlite3.DatabaseError` ("file is not a database", "database
disk image is malformed"); a busy one raises `OperationalError` ("database is locked"), which is not
damage and must never cause a reset.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

log = logging.getLogger(__name__)

SUFFIXES = ("", "-wal", "-shm", "-journal")


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

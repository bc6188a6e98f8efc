"""Sessions waiting to be compressed: a queue on disk, so that no session end is ever lost.

A session end (or PreCompact) puts its transcript here first, then starts the background job that drains
the queue. A transcript leaves the queue only once it is compressed (or found to need nothing). When another
compression holds the lock for longer than the job waits (a 200 MB transcript takes over a minute), the
entry stays, saying why, and the next hook, the server's background worker or `memory-server compress
--pending` compresses it. A transcript that cannot be read is marked failed with the reason; the automatic
drains try it MAX_AUTOMATIC_ATTEMPTS times, `compress --pending` always. `memory_status` lists what waits.

One JSON file per transcript under `.memory/compress-queue/` (written atomically; two hooks of one session
make one entry). Entries name transcripts outside the root (Claude Code keeps them under ~/.claude); each
is read only through `compress_transcript`, which confines it to the transcript folder when asked to.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memory_server.errors import LockedError, MemoryServerError
from memory_server.files.root import STATE_DIR, MemoryRoot
from memory_server.files.writing import atomic_write

log = logging.getLogger(__name__)

QUEUE_DIR = "compress-queue"
MAX_AUTOMATIC_ATTEMPTS = 3
QueueState = Literal["waiting", "failed"]
WAITING: QueueState = "waiting"
FAILED: QueueState = "failed"


@dataclass(frozen=True)
class Pending:
    """A transcript in the queue: why it waits (or failed), since when, and how often it was tried."""

    transcript: str
    state: QueueState
    reason: str
    queued: str  # ISO time it was first queued
    attempts: int
    token: str  # changes whenever a hook queues the transcript again
    entry: Path

    def to_dict(self) -> dict[str, str | int]:
        return {
            "transcript": self.transcript,
            "state": self.state,
            "reason": self.reason,
            "queued": self.queued,
            "attempts": self.attempts,
        }


@dataclass
class DrainReport:
    written: list[Path] = field(default_factory=list)
    compressed: list[str] = field(default_factory=list)
    waiting: list[Pending] = field(default_factory=list)
    failed: list[Pending] = field(default_factory=list)


def queue_dir(root: MemoryRoot) -> Path:
    return root.ensure_state_dir() / QUEUE_DIR


def _entry_path(root: MemoryRoot, transcript: str) -> Path:
    key = hashlib.sha256(transcript.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return queue_dir(root) / f"{key}.json"


def enqueue(root: MemoryRoot, transcript: str | os.PathLike[str], reason: str) -> Path:
    """Put a transcript in the queue (or queue it again: its new lines wait too); return the entry."""
    path = str(Path(transcript).expanduser().absolute())
    entry = _entry_path(root, path)
    entry.parent.mkdir(parents=True, exist_ok=True)
    old = _read(entry)
    record = {
        "transcript": path,
        "state": WAITING,
        "reason": reason,
        "queued": old.queued if old else _now(),
        "attempts": old.attempts if old and old.state == WAITING else 0,
        "token": os.urandom(8).hex(),
    }
    atomic_write(entry, json.dumps(record, ensure_ascii=False) + "\n")
    return entry


def queued(root: MemoryRoot) -> list[Pending]:
    """Every queued transcript, oldest first (an unreadable entry is skipped and logged)."""
    folder = root.path / STATE_DIR / QUEUE_DIR  # read without making .memory/ (status on a read-only root)
    if not folder.is_dir():
        return []
    found = [p for p in (_read(entry) for entry in sorted(folder.glob("*.json"))) if p is not None]
    return sorted(found, key=lambda p: (p.queued, p.transcript))


def drain(
    root: MemoryRoot,
    *,
    lock_timeout: float,
    automatic: bool = False,
    transcript_root: str | os.PathLike[str] | None = None,
) -> DrainReport:
    """Compress every queued transcript. Another compression holding the lock past `lock_timeout` stops the
    drain (what is left keeps waiting, with the reason); an unreadable transcript is marked failed.
    `automatic` (hooks and the server) skips transcripts that failed MAX_AUTOMATIC_ATTEMPTS times."""
    from memory_server.sessions.compress import compress_transcript  # here: a hook that only queues stays quick

    report = DrainReport()
    for item in queued(root):
        if automatic and item.state == FAILED and item.attempts >= MAX_AUTOMATIC_ATTEMPTS:
            report.failed.append(item)
            continue
        try:
            report.written.extend(
                compress_transcript(item.transcript, root, lock_timeout=lock_timeout, transcript_root=transcript_root)
            )
        except LockedError as exc:
            report.waiting.append(_mark(item, WAITING, f"{exc} (tried {_now()})"))
            report.waiting.extend(p for p in queued(root) if p.entry != item.entry and p.state == WAITING)
            return report
        except MemoryServerError as exc:
            report.failed.append(_mark(item, FAILED, str(exc)))
            continue
        _done(item)
        report.compressed.append(item.transcript)
    return report


def _mark(item: Pending, state: QueueState, reason: str) -> Pending:
    current = _read(item.entry)
    if current is not None and current.token != item.token:
        return current  # queued again meanwhile: that entry stands
    record = {**item.to_dict(), "state": state, "reason": reason, "attempts": item.attempts + 1, "token": item.token}
    try:
        atomic_write(item.entry, json.dumps(record, ensure_ascii=False) + "\n")
    except OSError as exc:
        log.warning("could not update the queue entry %s: %s", item.entry, exc)
    return _read(item.entry) or item


def _done(item: Pending) -> None:
    """Take a compressed transcript out of the queue, unless a hook queued it again meanwhile (its new lines
    wait for the next drain)."""
    current = _read(item.entry)
    if current is None or current.token != item.token:
        return
    try:
        item.entry.unlink()
    except FileNotFoundError:
        pass


def _read(entry: Path) -> Pending | None:
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
        return Pending(
            transcript=str(data["transcript"]),
            state=FAILED if data.get("state") == FAILED else WAITING,
            reason=str(data.get("reason", "")),
            queued=str(data.get("queued", "")),
            attempts=int(data.get("attempts", 0)),
            token=str(data.get("token", "")),
            entry=entry,
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ignored the unreadable queue entry %s: %s", entry, exc)
        return None


def _now() -> str:
    return dt.datetime.fromtimestamp(time.time(), dt.UTC).isoformat(timespec="seconds")

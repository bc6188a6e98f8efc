"""What `memory-server compress` does, as one call: named transcripts, a whole project folder, and the queue.

A transcript that waits too long for another compression's lock is queued (`pending.py`), never lost; one
that fails does not stop the others. The report says what was written, queued, still waiting and failed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memory_server.errors import LockedError, MemoryServerError
from memory_server.files.root import MemoryRoot
from memory_server.sessions.compress import LOCK_TIMEOUT, compress_all, compress_transcript
from memory_server.sessions.pending import Pending, drain, enqueue


@dataclass
class CompressReport:
    written: list[Path] = field(default_factory=list)  # the compressed session files made
    queued: list[tuple[str, str]] = field(default_factory=list)  # (transcript, why): compressed later
    errors: list[str] = field(default_factory=list)  # one message per named transcript that failed
    waiting: list[Pending] = field(default_factory=list)  # still in the queue: another compression holds the lock
    failed: list[Pending] = field(default_factory=list)  # in the queue, and cannot be read

    @property
    def ok(self) -> bool:
        return not self.errors and not self.failed


def compress_sessions(
    root: MemoryRoot,
    transcripts: Sequence[str | os.PathLike[str]] = (),
    *,
    all_in: str | os.PathLike[str] | None = None,
    pending: bool = False,
    automatic: bool = False,
    transcript_root: str | os.PathLike[str] | None = None,
    lock_timeout: float = LOCK_TIMEOUT,
    progress: Callable[[int, int], None] | None = None,
) -> CompressReport:
    """Compress every transcript under `all_in`, then each of `transcripts`, then (`pending`) the queue."""
    report = CompressReport()
    if all_in is not None:
        report.written.extend(compress_all(Path(all_in).expanduser(), root, progress=progress))
    for transcript in transcripts:  # one bad transcript does not stop the others
        try:
            report.written.extend(
                compress_transcript(transcript, root, transcript_root=transcript_root, lock_timeout=lock_timeout)
            )
        except LockedError as exc:
            enqueue(root, transcript, str(exc))
            report.queued.append((str(transcript), str(exc)))
        except MemoryServerError as exc:
            report.errors.append(str(exc))
    if pending:
        drained = drain(root, lock_timeout=lock_timeout, automatic=automatic, transcript_root=transcript_root)
        report.written.extend(drained.written)
        report.waiting.extend(drained.waiting)
        report.failed.extend(drained.failed)
    return report

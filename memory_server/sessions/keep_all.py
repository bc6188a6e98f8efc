"""`memory-server keep` (`Memory.keep_transcripts`): keep every transcript a compressed session names that is not
kept to its end yet, before Claude Code's clean-up deletes it.

Compression keeps each transcript as it goes (`compress.py`); this catches the rest: sessions compressed before
kept copies existed, with `transcripts.keep: false` at the time, or whose transcript grew after (a resumed
session). A transcript is read only from the folders the transcript layer allows (`transcript_layer.confine`),
under the compression lock, and only when it has lines its kept copy lacks.
"""

from __future__ import annotations

import logging
from pathlib import Path

from memory_server.errors import MemoryServerError, NotFoundError
from memory_server.files.root import MemoryRoot
from memory_server.sessions.compress import LOCK_TIMEOUT, compression_lock
from memory_server.sessions.keep import Keeper, KeepReport, KeepResult
from memory_server.sessions.kept import ensure_gitignore, find_kept, kept_dir
from memory_server.sessions.parser import transcript_id
from memory_server.sessions.reader import parse_transcript
from memory_server.sessions.transcript_layer import confine, named_transcripts
from memory_server.settings import Settings

log = logging.getLogger(__name__)


def line_count(path: Path) -> int:
    """Lines of a transcript as the parser counts them at most (an unterminated last line included)."""
    count = 0
    last = b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (0 if last == b"\n" else 1)


def keep_transcripts(root: MemoryRoot, settings: Settings, *, lock_timeout: float = LOCK_TIMEOUT) -> KeepReport:
    """Bring the kept copy of every transcript the compressed sessions name up to the transcript's end."""
    report = KeepReport()
    if kept_dir(root).is_dir():  # transcripts.keep_commit applies now, not only at the next copy
        ensure_gitignore(root, settings.transcripts.keep_commit)
    seen: set[str] = set()
    for named in named_transcripts(root):
        if str(named.transcript) in seen:
            continue
        seen.add(str(named.transcript))
        try:
            real = confine(named.transcript, settings)
        except NotFoundError:
            if find_kept(root, transcript_id(named.transcript)) is None:
                report.gone.append(str(named.transcript))
            else:
                report.up_to_date += 1  # kept before Claude Code deleted it
            continue
        except MemoryServerError as exc:
            report.failed.append(KeepResult(str(named.transcript), note=f"not kept: {exc}"))
            continue
        _keep_one(root, real, settings, lock_timeout, report)
    return report


def _keep_one(root: MemoryRoot, transcript: Path, settings: Settings, lock_timeout: float, report: KeepReport) -> None:
    try:
        if Keeper(root, transcript, settings.transcripts).kept_lines >= line_count(transcript):
            report.up_to_date += 1
            return
        with compression_lock(root, lock_timeout):
            keeper = Keeper(root, transcript, settings.transcripts)  # again: another process may have kept it
            parsed = parse_transcript(transcript, on_record=keeper.take)
            result = keeper.commit(parsed.started)
    except (MemoryServerError, OSError) as exc:
        report.failed.append(KeepResult(str(transcript), note=f"not kept: {exc}"))
        return
    if result.lines_added:
        report.kept.append(result)
    elif result.note:
        report.failed.append(result)
    else:
        report.up_to_date += 1

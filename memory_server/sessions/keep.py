"""Writing kept copies (see kept.py for where they live and how they read).

    keeper = Keeper.open(root, transcript, settings.transcripts)   # None when keeping is off
    parse_transcript(transcript, on_record=keeper.take)             # the parse compression runs anyway
    keeper.commit(started)                                          # under the compression lock

The lines come from the parser's `on_record`, after redaction and the parser's own cuts: the same `<private>`
and secret handling as the summaries, by the same code, in the same pass (keeping costs no second read of the
transcript). Only the lines past those already kept are written, as one new gzip member in `.memory/keep/`;
`commit` fits it to what is left of the session's byte budget (`kept_budget.py`), then puts the kept copy's old
bytes and the member into a temp file beside it and renames it into place. Compression does this for every
session it writes (`compress.py`); `keep_transcripts` (`memory-server keep`) does it for every transcript a
compressed session names that is not kept to its end yet.
"""

from __future__ import annotations

import datetime as dt
import gzip
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from memory_server.errors import MemoryServerError
from memory_server.files.root import MemoryRoot
from memory_server.files.writing import commit_staged, file_mode, fsync_dir, remove_stale_temps, unlink_quietly
from memory_server.sessions.kept import (
    NOT_KEPT_LINE,
    count_lines,
    ensure_gitignore,
    find_kept,
    first_line,
    line_identity,
    placement,
    safe_id,
)
from memory_server.sessions.kept_budget import GZIP_LEVEL, LEVELS, dumps, fit, without_bulk
from memory_server.sessions.parser import BLANK, transcript_id
from memory_server.settings import TranscriptSettings

log = logging.getLogger(__name__)

WORK_DIR = "keep"  # under .memory/: members being written


@dataclass
class KeepResult:
    """What keeping one transcript did."""

    transcript: str
    kept: str | None = None  # the kept copy, relative to the root
    lines_added: int = 0
    lines: int = 0  # lines the kept copy holds now
    bytes: int = 0  # its size now
    level: int = 0  # 0: whole; n: tool output and file contents cut to kept_budget.LEVELS[n] characters
    over_budget: bool = False
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


class Keeper:
    """One transcript's clean lines during a parse, and the append of the new ones to its kept copy."""

    def __init__(self, root: MemoryRoot, transcript: Path, settings: TranscriptSettings) -> None:
        self.root = root
        self.transcript = transcript
        self.settings = settings
        self.id = transcript_id(transcript)
        self.existing = find_kept(root, self.id)
        self.kept_lines = 0
        self.refused = ""
        if not safe_id(self.id):
            self.refused = f"its name {self.id[:80]!r} cannot name a kept copy"
        elif self.existing is not None:
            self.kept_lines, damaged = count_lines(self.existing)
            if damaged:
                self.refused = (
                    f"its kept copy {root.relpath(self.existing)} is damaged past line {self.kept_lines}; it is "
                    "left as it is (move it aside to keep the transcript again)"
                )
        first = first_line(self.existing) if self.existing is not None and not self.refused else None
        self._first = line_identity(first) if first else None  # checked against the transcript's line 1
        self.added = 0
        self.last_line = 0
        self._work: Path | None = None
        self._raw: IO[bytes] | None = None
        self._gz: gzip.GzipFile | None = None

    @classmethod
    def open(cls, root: MemoryRoot, transcript: Path, settings: TranscriptSettings) -> Keeper | None:
        """A keeper for `transcript`, or None when keeping is off (`transcripts.keep: false`)."""
        return cls(root, transcript, settings) if settings.keep else None

    def take(self, n: int, rec: object) -> None:
        """The parser's `on_record`: line `n`, clean; written when it is past what the kept copy holds."""
        self.last_line = n
        if self.refused or (n <= self.kept_lines and not (n == 1 and self._first is not None)):
            return
        slim = without_bulk(rec) if isinstance(rec, dict) else None
        line = b"\n" if rec is BLANK else dumps(slim) if isinstance(slim, dict) else NOT_KEPT_LINE
        if n == 1 and self._first is not None and line_identity(line) != self._first:
            self.refused = (
                f"its kept copy {self.root.relpath(self.existing or self.root.path)} holds another transcript of the "
                "same name (its first line differs); it is left as it is"
            )
            return
        if n <= self.kept_lines:
            return
        if self._gz is None:
            self._start()
        assert self._gz is not None
        self._gz.write(line)
        self.added += 1

    def _start(self) -> None:
        work = self.root.ensure_state_dir() / WORK_DIR
        work.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(work)
        fd, name = tempfile.mkstemp(prefix=f".{self.id[:40]}.", suffix=".tmp", dir=work)
        self._work = Path(name)
        self._raw = os.fdopen(fd, "wb")
        self._gz = gzip.GzipFile(filename="", fileobj=self._raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0)

    def discard(self) -> None:
        """Drop what was taken (the session is not recorded after all)."""
        self._close()
        if self._work is not None:
            for path in (self._work, *self._work.parent.glob(self._work.name + ".*")):
                unlink_quietly(path)

    def _close(self) -> None:
        if self._gz is not None:
            self._gz.close()
        if self._raw is not None:
            self._raw.close()
        self._gz = self._raw = None

    def commit(self, started: dt.datetime | None) -> KeepResult:
        """Append the new lines to the kept copy (created in the folder of the year `started`); never raises
        for a copy it cannot write (the result says why), so compression goes on."""
        result = KeepResult(str(self.transcript), lines=self.kept_lines)
        if self.existing is not None:
            result.kept, result.bytes = self.root.relpath(self.existing), self.existing.stat().st_size
        try:
            if self.refused:
                result.note = f"not kept: {self.refused}"
                return result
            if self.last_line < self.kept_lines:
                result.note = f"not kept: the transcript has {self.last_line} lines, fewer than its kept copy"
                return result
            self._close()
            if self._work is None:
                return result
            self._append(result, started)
        except (OSError, MemoryServerError) as exc:
            result.note = f"not kept: {exc}"
            log.warning("could not keep %s: %s", self.transcript, exc)
        finally:
            self.discard()
        return result

    def _append(self, result: KeepResult, started: dt.datetime | None) -> None:
        assert self._work is not None
        before = self.existing.stat() if self.existing is not None else None
        room = self.settings.keep_budget_bytes - (before.st_size if before is not None else 0)
        member, level = fit(self._work, max(room, 0), self._work)
        dest = self.existing or placement(self.root, self.id, _year(started, self.transcript))
        dest.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(dest.parent)  # litter from a keeping killed before its rename
        fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
        staged = Path(name)
        try:
            os.fchmod(fd, file_mode(dest))  # mkstemp makes the file 0600
            with os.fdopen(fd, "wb") as out:
                if self.existing is not None:
                    with open(self.existing, "rb") as old:
                        shutil.copyfileobj(old, out)
                with open(member, "rb") as new:
                    shutil.copyfileobj(new, out)
                out.flush()
                os.fsync(out.fileno())
            now = self.existing.stat() if self.existing is not None else None
            if before is not None and now is not None and (now.st_ino, now.st_size) != (before.st_ino, before.st_size):
                raise OSError(f"{dest} changed while its new lines were being written; run `memory-server keep` again")
            commit_staged(staged, dest, exclusive=self.existing is None)
        finally:
            unlink_quietly(staged)
        fsync_dir(dest.parent)
        ensure_gitignore(self.root, self.settings.keep_commit)
        size = dest.stat().st_size
        result.kept, result.lines_added, result.lines = (
            self.root.relpath(dest),
            self.added,
            self.kept_lines + self.added,
        )
        result.bytes, result.level = size, level
        result.over_budget = size > self.settings.keep_budget_bytes
        if level:
            result.note = f"tool output and file contents cut to {LEVELS[level]} characters to fit the budget"
        if result.over_budget:
            result.note = (
                f"{size} bytes, over the {self.settings.keep_budget_bytes}-byte budget even with tool output cut "
                f"to {LEVELS[-1]} characters (raise transcripts.keep_budget_bytes to keep more of the next lines)"
            )


def _year(started: dt.datetime | None, transcript: Path) -> str:
    if started is not None:
        return started.strftime("%Y")
    try:
        return dt.datetime.fromtimestamp(transcript.stat().st_mtime, dt.UTC).strftime("%Y")
    except OSError:
        return dt.datetime.now(dt.UTC).strftime("%Y")


@dataclass
class KeepReport:
    """What `memory-server keep` did: every transcript a compressed session names, kept to its end."""

    kept: list[KeepResult] = field(default_factory=list)  # lines added
    up_to_date: int = 0
    gone: list[str] = field(default_factory=list)  # transcripts deleted before they were kept
    failed: list[KeepResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "kept": [r.to_dict() for r in self.kept],
            "up_to_date": self.up_to_date,
            "gone": list(self.gone),
            "failed": [r.to_dict() for r in self.failed],
        }

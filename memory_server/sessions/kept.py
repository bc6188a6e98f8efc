"""Kept copies of Claude Code's transcripts: where they live in the memory root, and how they are read.

Claude Code deletes a transcript `cleanupPeriodDays` (30 by default) after its last change, and the raw layer
(`read_memory("transcript:...")`, `search_exact` over transcripts, /dream's checks) reads those files. So when a
session is compressed its transcript is also kept, redacted and gzip-compressed, at

    sessions/transcripts/YYYY/<id>.jsonl.gz        (YYYY: the year the session started; <id>: the file's name)

inside the memory root, beside `sessions/compressed/`, because it is the evidence those summaries cite: it
moves, is backed up and is shared with the root, and is not in `.memory/` (derived state, deleted at will: a
kept copy cannot be made again once Claude Code has deleted its transcript). `sessions/transcripts/.gitignore`
keeps the copies out of git unless `transcripts.keep_commit` is set (they hold tool output and file contents,
redacted but bulky).

A kept copy has one line for each line of the transcript (the same record, redacted and cut exactly as the
parser reads it; a blank line stays blank, a line that is not a JSON object becomes NOT_KEPT_LINE), so a
reference `transcript:<id>:LINE` means the same line in both. It is append-only: a transcript that grew gets
its new lines as one more gzip member (gzip reads concatenated members as one stream); the file is replaced
whole by a rename, its old bytes first, so no reader ever sees half a member. Reading stops quietly at a
damaged member (a copy cut short by something else), keeping the lines before it.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path

from memory_server.errors import NotFoundError, PathRefusedError
from memory_server.files.paths import HardLinks, is_inside
from memory_server.files.root import MemoryRoot
from memory_server.files.writing import atomic_write

log = logging.getLogger(__name__)

KEPT_DIR = "sessions/transcripts"
SUFFIX = ".jsonl.gz"
NOT_KEPT_LINE = b"# not kept: this line of the transcript was not a JSON record\n"
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
_YEAR = re.compile(r"^\d{4}$")

GITIGNORE_IGNORED = """\
# Kept copies of Claude Code's transcripts (memory-server), redacted and compressed. They stay out of git;
# set `transcripts.keep_commit: true` in memory.yaml to commit them.
*
!.gitignore
"""
GITIGNORE_COMMITTED = """\
# Kept copies of Claude Code's transcripts (memory-server), redacted and compressed. They are committed
# (`transcripts.keep_commit: true` in memory.yaml).
"""


def kept_dir(root: MemoryRoot) -> Path:
    return root.path / KEPT_DIR


def is_kept_copy(path: Path | str) -> bool:
    return str(path).endswith(SUFFIX)


def safe_id(transcript_id: str) -> bool:
    """Whether a transcript's id can name a kept copy (Claude Code's are UUIDs; anything odd is not kept)."""
    return bool(SAFE_ID.match(transcript_id)) and ".." not in transcript_id


def find_kept(root: MemoryRoot, transcript_id: str) -> Path | None:
    """The kept copy of a transcript, or None (none kept, or an id that cannot name one)."""
    if not safe_id(transcript_id):
        return None
    base = kept_dir(root)
    try:
        years = sorted((e.name for e in os.scandir(base) if _YEAR.match(e.name)), reverse=True)
    except OSError:
        return None
    for year in years:
        path = base / year / (transcript_id + SUFFIX)
        if path.is_file():
            return path
    return None


def all_kept(root: MemoryRoot) -> dict[str, Path]:
    """transcript id -> kept copy, for every kept copy in the root."""
    out: dict[str, Path] = {}
    base = kept_dir(root)
    try:
        years = sorted(e.name for e in os.scandir(base) if _YEAR.match(e.name) and e.is_dir(follow_symlinks=False))
    except OSError:
        return out
    for year in years:
        try:
            names = sorted(os.listdir(base / year))
        except OSError:
            continue
        for name in names:
            tid = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else ""
            if tid and safe_id(tid):
                out.setdefault(tid, base / year / name)
    return out


def placement(root: MemoryRoot, transcript_id: str, year: str) -> Path:
    """Where a new kept copy goes: sessions/transcripts/<year>/<id>.jsonl.gz."""
    if not safe_id(transcript_id) or not _YEAR.match(year):
        raise PathRefusedError(f"transcript id {transcript_id[:80]!r} cannot name a kept copy")
    return kept_dir(root) / year / (transcript_id + SUFFIX)


def confine_kept(root: MemoryRoot, path: Path) -> Path:
    """A kept copy's real path, when it is a regular `*.jsonl.gz` file under sessions/transcripts/ of this root
    whose every name is there too (no symlink or hard link from elsewhere); else PathRefusedError."""
    base = kept_dir(root).resolve()
    real = Path(os.path.realpath(path))
    if not is_kept_copy(real) or not is_inside(real, base):
        raise PathRefusedError(f"{path} is not a kept copy under {KEPT_DIR}/ of the memory root")
    try:
        st = os.stat(real)
    except FileNotFoundError as exc:
        raise NotFoundError(f"the kept copy {path} no longer exists") from exc
    if not stat.S_ISREG(st.st_mode) or not HardLinks(base).all_inside(st):
        raise PathRefusedError(f"{path} is not a plain file of the memory root; it is not read")
    return real


def kept_lines(path: Path) -> Iterator[bytes]:
    """The lines of a kept copy, each ending in "\\n"; stops at a damaged or cut member with a warning.
    Raises OSError when the file cannot be opened."""
    with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as fh:
        try:
            yield from fh
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            log.warning("kept copy %s is damaged past this point (%s); read up to it", path, exc)


def first_line(path: Path) -> bytes | None:
    """The first line of a kept copy, or None when it cannot be read."""
    try:
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as fh:
            return fh.readline(1 << 20)
    except (OSError, EOFError, zlib.error):
        return None


def line_identity(line: bytes) -> str:
    """What says which transcript a kept line came from, whatever redaction did to its text: the record's ids
    and time (never redacted), else the line itself."""
    try:
        rec = json.loads(line)
    except ValueError:
        rec = None
    if isinstance(rec, dict):
        keys = ("type", "uuid", "leafUuid", "sessionId", "timestamp")
        found = [f"{k}={rec[k]}" for k in keys if isinstance(rec.get(k), str)]
        if len(found) > 1:
            return "|".join(found)
    return line.decode("utf-8", "replace")


def count_lines(path: Path) -> tuple[int, bool]:
    """(lines, damaged) of a kept copy: damaged when it does not read to its end."""
    count = 0
    try:
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as fh:
            while block := fh.read1(1 << 16):  # read1: a damaged member must not take the lines before it
                count += block.count(b"\n")
    except (EOFError, zlib.error, gzip.BadGzipFile):
        return count, True
    return count, False


def ensure_gitignore(root: MemoryRoot, commit: bool) -> None:
    """sessions/transcripts/.gitignore as `transcripts.keep_commit` says: ignore everything but itself, or not."""
    wanted = GITIGNORE_COMMITTED if commit else GITIGNORE_IGNORED
    path = kept_dir(root) / ".gitignore"
    try:
        if path.read_text(encoding="utf-8") == wanted:
            return
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write(path, wanted)

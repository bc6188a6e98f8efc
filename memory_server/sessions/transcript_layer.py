"""Raw Claude Code transcripts as the arbitration layer: which ones, and their messages as chunks.

Transcripts live outside the memory root, so they get virtual paths, `transcript:<session-id>`, and their
line numbers are JSONL lines. They are keyword-indexed only (never embedded) and searched only when a
query asks for layer "transcript". Only transcripts inside the allowed folders are read: the
`transcripts.dir` setting, else Claude Code's own `~/.claude/projects` (or `$CLAUDE_CONFIG_DIR/projects`).
Which ones: every `*.jsonl` directly in `transcripts.dir` when set, plus the transcript each compressed
session names in its front matter; when Claude Code's file is gone (deleted by its clean-up) or cannot be
read, the kept copy in the root (`sessions/transcripts/YYYY/<id>.jsonl.gz`, kept.py) takes its place, under
the same virtual path with the same line numbers, and every answer from it says so (`source_note`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_server.errors import MemoryServerError, NotFoundError, PathRefusedError
from memory_server.files.root import MemoryRoot
from memory_server.parse.frontmatter import read_front_matter
from memory_server.parse.markdown import Chunk
from memory_server.sessions.kept import all_kept, confine_kept, find_kept, is_kept_copy, kept_lines
from memory_server.sessions.parser import transcript_id
from memory_server.settings import Settings

PREFIX = "transcript:"
KEPT_NOTE = "the kept copy (Claude Code's transcript is gone)"


def allowed_dirs(settings: Settings) -> list[Path]:
    if settings.transcripts.dir:
        return [Path(settings.transcripts.dir).expanduser().resolve()]
    config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()
    return [(config / "projects").resolve()]


def confine(path: Path, settings: Settings) -> Path:
    """The transcript's real path, if it is a .jsonl file inside an allowed folder; else PathRefusedError."""
    real = Path(path).expanduser().resolve()
    if real.suffix != ".jsonl":
        raise PathRefusedError(f"{path} is not a .jsonl transcript")
    for base in allowed_dirs(settings):
        if base in real.parents:
            if not real.is_file():
                raise NotFoundError(f"transcript {real} no longer exists")
            return real
    raise PathRefusedError(
        f"transcript {real} is outside the transcript folder ({', '.join(map(str, allowed_dirs(settings)))}); "
        "set transcripts.dir in your user config (~/.config/memory-server/config.yaml) or MEMORY_TRANSCRIPTS_DIR"
    )


@dataclass(frozen=True)
class Named:
    """A transcript a compressed session names in its front matter."""

    session: str  # the compressed file, relative to the root
    transcript: Path


def named_transcripts(root: MemoryRoot) -> list[Named]:
    """Every (session, transcript) the compressed sessions name, in path order."""
    found: list[Named] = []
    if not root.sessions_dir.is_dir():
        return found
    for dirpath, dirs, files in os.walk(root.sessions_dir):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".md") and not name.startswith("."):
                value = read_front_matter(Path(dirpath, name)).get("transcript")
                if isinstance(value, str) and value.strip() and "\x00" not in value:
                    found.append(Named(root.relpath(Path(dirpath, name)), Path(value.strip())))
    return found


def _named_by_sessions(root: MemoryRoot) -> list[Path]:
    return [n.transcript for n in named_transcripts(root)]


def confine_source(source: Path, root: MemoryRoot, settings: Settings) -> Path:
    """The real path of a transcript layer's source: Claude Code's transcript (inside the allowed folders) or a
    kept copy (inside the root's sessions/transcripts/); PathRefusedError or NotFoundError otherwise."""
    return confine_kept(root, source) if is_kept_copy(source) else confine(source, settings)


def readable_source(virtual: str, recorded: Path | None, root: MemoryRoot, settings: Settings) -> Path:
    """What to read for a transcript path: the recorded source while it can be read, else the kept copy of the
    same transcript; NotFoundError when neither is there."""
    problem: MemoryServerError | None = None
    if recorded is not None:
        try:
            return confine_source(recorded, root, settings)
        except (NotFoundError, PathRefusedError) as exc:
            problem = exc
    kept = find_kept(root, virtual[len(PREFIX) :])
    if kept is not None:
        return confine_kept(root, kept)
    raise problem or NotFoundError(
        f"no indexed transcript {virtual!r}: use a path from a search_exact hit with layers=['transcript']"
    )


def source_note(source: Path, root: MemoryRoot) -> str:
    """Which file an answer was read from, in words: Claude Code's transcript, or the root's kept copy."""
    if is_kept_copy(source):
        try:
            shown = root.relpath(Path(source))
        except ValueError:
            shown = str(source)
        return f"{KEPT_NOTE}: {shown}"
    return f"Claude Code's transcript: {source}"


def transcript_sources(root: MemoryRoot, settings: Settings) -> dict[str, Path]:
    """Virtual path -> real transcript file, for every transcript the arbitration layer may search."""
    candidates: list[Path] = []
    if settings.transcripts.dir:
        folder = Path(settings.transcripts.dir).expanduser()
        if folder.is_dir():
            candidates.extend(sorted(folder.glob("*.jsonl")))
    candidates.extend(_named_by_sessions(root))
    out: dict[str, Path] = {}
    for candidate in candidates:
        try:
            real = confine(candidate, settings)
        except (PathRefusedError, NotFoundError, OSError):
            continue
        out.setdefault(PREFIX + transcript_id(real), real)
    for tid, kept in all_kept(root).items():  # Claude Code's copy is gone (or out of reach): the kept one
        if PREFIX + tid not in out:
            try:
                out[PREFIX + tid] = confine_kept(root, kept)
            except (PathRefusedError, NotFoundError, OSError):
                continue
    return out


def _title(virtual: str, source: Path | None = None) -> str:
    kept = " (kept copy: Claude Code's transcript is gone)" if source is not None and is_kept_copy(source) else ""
    return f"transcript {virtual[len(PREFIX) :]}{kept}"


def _chunks(virtual: str, messages: list[Any], title: str, date: str | None) -> list[Chunk]:
    chunks = []
    for m in messages:
        text = m.search_text
        if not text:
            continue
        digest = hashlib.sha1(f"{virtual}\0{m.line}\0{m.end_line}\0{text}".encode("utf-8", "surrogatepass"))
        when = m.timestamp.date().isoformat() if m.timestamp else date
        chunks.append(
            Chunk(digest.hexdigest()[:20], virtual, "transcript", m.line, m.end_line, title, m.role, when, text)
        )
    return chunks


@dataclass
class Increment:
    """What a follower read: chunks for the messages from `from_line` on (they replace the chunks there)."""

    chunks: list[Chunk]
    from_line: int
    title: str
    date: str | None
    bytes_read: int


class TranscriptFollower:
    """One growing transcript, read from where the last read stopped (Claude Code appends to a session's
    transcript while it runs; reading 60 MB again each minute cost a quarter of a core).

    Keeps the parse's state (`TranscriptParser`: split messages, pending tool calls, `<private>` spans and what
    they taught) and the last message, which a later record may still extend; each read returns the chunks of
    that message and of the new ones. A transcript replaced or cut shorter is read again whole (`read` gives
    None: make a new follower). An unterminated last line waits until its line break is written."""

    def __init__(self, virtual: str, source: Path) -> None:
        from memory_server.sessions.parser import TranscriptParser

        self.virtual = virtual
        self.source = source
        self._parser = TranscriptParser(source, complete_only=True)
        self._identity: tuple[int, int] | None = None

    @property
    def offset(self) -> int:
        """Bytes of the transcript read so far (whole lines)."""
        return self._parser.bytes_read

    def read(self) -> Increment | None:
        """The new part since the last read, or None when the file is not the one read before."""
        st = self.source.stat()
        identity = (st.st_dev, st.st_ino)
        if self._identity is not None and (identity != self._identity or st.st_size < self.offset):
            return None
        self._identity = identity
        messages = self._parser.t.messages
        from_line = messages[-1].line if messages else 1
        before = self.offset
        if is_kept_copy(self.source):  # compressed: read whole (a kept copy changes only when a session ends)
            if before:
                return None
            self._parser.feed(kept_lines(self.source))
        else:
            with open(self.source, "rb") as fh:
                fh.seek(before)
                self._parser.feed(fh)
        t = self._parser.t
        title = _title(self.virtual, self.source)
        date = t.started.date().isoformat() if t.started else None
        chunks = _chunks(self.virtual, [m for m in t.messages if m.line >= from_line], title, date)
        self._parser.drop_done_messages()
        return Increment(chunks, from_line, title, date, self.offset - before)


# The last transcript read_memory parsed: a reader pages through one transcript window by window, and each
# window needs the whole file parsed (a <private> span opened early hides text later on).
_LAST_PARSED: dict[tuple[str, int, int], list[Any]] = {}


def _messages(source: Path) -> list[Any]:
    from memory_server.sessions.reader import parse_transcript

    st = source.stat()
    key = (str(source), st.st_size, st.st_mtime_ns)
    messages = _LAST_PARSED.get(key)
    if messages is None:
        messages = parse_transcript(source).messages
        _LAST_PARSED.clear()
        _LAST_PARSED[key] = messages
    return messages


def read_transcript(source: Path, start_line: int | None, end_line: int | None) -> list[str]:
    """The messages overlapping JSONL lines start..end, one block per message, for read_memory."""
    start = start_line or 1
    end = end_line or 10**9
    lines: list[str] = []
    for m in [m for m in _messages(source) if m.end_line >= start and m.line <= end]:
        stamp = m.timestamp.isoformat() if m.timestamp else ""
        lines.append(f"[lines {m.line}-{m.end_line}] {m.role} {stamp}".rstrip())
        lines.extend(m.search_text.splitlines() or [""])
        lines.append("")
    return lines

"""Compress a Claude Code transcript into an append-only Markdown session summary, deterministically.

`compress_transcript(path, root)` writes `sessions/compressed/YYYY/<date>-<short-id>-<slug>.md`: YAML front
matter (format, session_id, part, started, ended, cwd, branch, claude_code_version, transcript,
transcript_sha256, lines, counts) and what the next session needs: the goal, everything the person said,
their corrections and answers, decisions, real errors and their fixes, commits, files, commands, Claude
Code's own summary and what was left open (see `render.py` for the format). Thinking, tool output and
slash-command noise stay out; `<private>` text is dropped and secrets are redacted before anything is
trimmed.

Append-only: a compressed file is never rewritten. What is already covered is read back from the front
matter of existing files (session_id, transcript file name, lines), so no state file is needed and deleting
`.memory/` loses nothing. A transcript that grew gets a continuation (`…-part2.md`, part 3, …) covering only
the new JSONL lines; an unchanged one gives nothing, and so does one without a single real request. Replies
Claude Code wrote in the agent's place ("Not logged in", an API error) are not the agent's and are left out.
`transcript_sha256` hashes the transcript's bytes from its start through the last line the file covers
(for a finished single-part session: the whole file). The transcript is read line by line and hashed as it
is read, never held whole, and a huge tool output keeps only its head and tail (see `bounds.py`).

Each session compressed also keeps its transcript: a redacted, gzip-compressed copy in
`sessions/transcripts/YYYY/<id>.jsonl.gz`, written from the same read (`keep.py`, `kept.py`), so the raw layer
outlives Claude Code's clean-up of its transcripts. `transcripts.keep: false` turns it off.

Same input, same bytes out: no clock is read. Writing holds `.memory/compress.lock`, so two compressions
of one transcript (SessionEnd racing PreCompact, two terminals) produce one file set.

Crash-safe: each file is written to a dot-file beside it (`.<name>.<random>.tmp`, never indexed) and
hard-linked into place, so a compression killed at any moment leaves either no file or the whole file, and
the next run writes what is missing. Before writing into a folder, temp files older than a few minutes there
(left by a killed run) are removed.

`compress_all(folder, root)` backfills every `*.jsonl` under a folder, sorted. Subagent transcripts (files
under a `subagents/` folder, or named `agent-*.jsonl`) are skipped: the parent session already shows their
work through its Task calls (and, in Claude Code 1.x, through inline sidechain records, which are included).

`memory-server compress --root DIR TRANSCRIPT...` (memory_server/cli.py) is the detached job the SessionEnd and
PreCompact hooks start; it logs to stderr.

This module is the orchestration: what was covered already, locking and file placement.
`digest.py` reads a transcript into what the file says and `render.py` writes it as Markdown.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memory_server.errors import ConfigError, MemoryServerError, PathRefusedError, RootError, TranscriptError
from memory_server.files.crashpoints import crash_point
from memory_server.files.locks import COMPRESS_LOCK, FileLock
from memory_server.files.root import MemoryRoot, not_set_up_message
from memory_server.files.writing import remove_stale_temps
from memory_server.parse.frontmatter import read_front_matter
from memory_server.parse.text import SLUG_FILLER
from memory_server.sessions.digest import Digest
from memory_server.sessions.keep import Keeper
from memory_server.sessions.reader import Transcript, parse_transcript
from memory_server.sessions.render import render
from memory_server.settings import TranscriptSettings, load_settings

log = logging.getLogger(__name__)

LOCK_NAME = COMPRESS_LOCK
LOCK_TIMEOUT = 60.0

_PART_SUFFIX = re.compile(r"-part\d+$")


# -- public entry points ---------------------------------------------------------------------------------


def compress_transcript(
    transcript_path: str | os.PathLike[str],
    root: MemoryRoot,
    *,
    transcript_root: str | os.PathLike[str] | None = None,
    lock_timeout: float = LOCK_TIMEOUT,
) -> list[Path]:
    """Write the compressed session file(s) for what is new in a transcript; return the files written.

    Returns [] when the transcript is unchanged since the last compression, or holds no real request.
    With `transcript_root`, a transcript outside that folder is refused (PathRefusedError). Raises
    TranscriptError when the transcript cannot be read and LockedError when another compression holds
    the lock for longer than `lock_timeout` seconds.
    """
    path = Path(transcript_path).expanduser()
    if transcript_root is not None:
        base = Path(transcript_root).expanduser().resolve()
        real = path.resolve()
        if real != base and base not in real.parents:
            raise PathRefusedError(
                f"transcript {path} is outside the transcript folder {base}: give a transcript from that folder"
            )
    path = path.absolute()
    with compression_lock(root, lock_timeout):
        keeper = Keeper.open(root, path, keep_settings(root))
        # Read line by line, never whole (a transcript can run to hundreds of megabytes); the kept copy is
        # written from the same read (`keep.py`).
        full = parse_transcript(path, on_record=keeper.take if keeper is not None else None)
        parts = existing_parts(root, full.session_id, path.name)
        written = _write_new_part(root, path, full, parts)
        if keeper is not None and (parts or written):
            result = keeper.commit(full.started)
            if result.note:
                log.info("kept copy of %s: %s", path, result.note)
        elif keeper is not None:
            keeper.discard()  # no session recorded from it: nothing to keep
        return written


def _write_new_part(root: MemoryRoot, path: Path, full: Transcript, parts: list[Part]) -> list[Path]:
    """Write the compressed file for what is new in the transcript since `parts`; [] when there is nothing."""
    # A second read for a continuation stops where the first did, even if the session wrote more lines meanwhile.
    start = max((p.last for p in parts), default=0) + 1
    if start > full.line_count:
        return []
    t = full if start == 1 else parse_transcript(path, first_line=start, last_line=full.line_count)
    digest = Digest.of(t, full)
    # A first part needs a real request; a continuation needs anything new (not just summary records).
    if not (digest.has_activity if parts else digest.requests):
        return []
    number = max((p.part for p in parts), default=0) + 1
    previous = parts[-1].path.name if parts else None
    text = render(digest, number, start, full.sha256, previous)
    folder, stem = _placement(root, full, parts, digest.goal)
    remove_stale_temps(folder)  # litter from a compression killed before its rename
    suffix = "" if number == 1 else f"-part{number}"
    for attempt in range(1, 10):  # a foreign file with our name (never ours: we checked the parts)
        name = f"{stem}{suffix}{'' if attempt == 1 else f'-{attempt}'}.md"
        try:
            written = root.write_new(root.relpath(folder / name), text)
        except FileExistsError:
            continue
        log.info("compressed %s lines %d-%d into %s", path, start, full.line_count, written)
        return [written]
    log.warning("could not find a free file name for %s in %s; nothing written", stem, folder)
    return []


def keep_settings(root: MemoryRoot) -> TranscriptSettings:
    """The root's settings for kept copies; the defaults (with a warning) when memory.yaml cannot be read."""
    try:
        return load_settings(root.path).transcripts
    except ConfigError as exc:
        log.warning("%s; keeping transcripts with the default settings", exc)
        return TranscriptSettings()


def compress_all(
    directory: str | os.PathLike[str],
    root: MemoryRoot,
    progress: Callable[[int, int], None] | None = None,
) -> list[Path]:
    """Backfill: compress every `*.jsonl` under `directory` (sorted, subagent files skipped); return new files.

    A transcript that cannot be read is logged and skipped. `progress(done, total)` is called after each.
    """
    if not root.is_set_up:  # one message, not one per transcript
        raise RootError(not_set_up_message(root.path))
    folder = Path(directory).expanduser()
    if not folder.is_dir():
        raise TranscriptError(f"transcript folder {folder} does not exist: point at ~/.claude/projects/<project>")
    files = sorted(p for p in folder.rglob("*.jsonl") if p.is_file() and not is_subagent_transcript(p, folder))
    written: list[Path] = []
    for done, f in enumerate(files, start=1):
        if done > 1:
            crash_point("compress-between-files")
        try:
            written.extend(compress_transcript(f, root))
        except MemoryServerError as exc:
            log.warning("skipped %s: %s", f, exc)
        if progress is not None:
            progress(done, len(files))
    return written


def is_subagent_transcript(path: Path, base: Path | None = None) -> bool:
    """True for a subagent's transcript: under a `subagents/` folder, or an `agent-*.jsonl` file."""
    parts = path.relative_to(base).parts if base is not None and base in path.parents else path.parts
    return "subagents" in parts[:-1] or path.name.startswith("agent-")


@contextlib.contextmanager
def compression_lock(root: MemoryRoot, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the root's compression lock (`.memory/compress.lock`), or raise LockedError after `timeout` s."""
    lock = FileLock(
        root.ensure_state_dir() / LOCK_NAME,
        "another compression has held {path} for over {timeout} s; let it finish and run "
        "`memory-server compress` again (nothing was written)",
    )
    with lock.held(timeout):
        yield


# -- what was compressed already -------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """An existing compressed file of one transcript: which part it is and the JSONL lines it covers."""

    path: Path
    part: int
    first: int
    last: int


def existing_parts(root: MemoryRoot, session_id: str, transcript_name: str) -> list[Part]:
    """The compressed files of this session's transcript, read from their front matter, by part number."""
    found: list[Part] = []
    if not root.sessions_dir.is_dir():
        return found
    short = short_id(session_id)
    for p in sorted(root.sessions_dir.rglob("*.md")):
        if short not in p.name or p.name.startswith("."):
            continue  # the short id is in every name we write: skip unrelated files without opening them
        meta = read_front_matter(p)
        if str(meta.get("session_id", "")) != session_id:
            continue
        transcript = meta.get("transcript")
        if isinstance(transcript, str) and Path(transcript).name != transcript_name:
            continue  # the same session id from another file (an old subagent log, a resumed copy)
        lines = meta.get("lines")
        if not (isinstance(lines, list) and len(lines) == 2 and all(isinstance(x, int) for x in lines)):
            log.warning("%s has no valid `lines: [first, last]` in its front matter; ignored", p)
            continue
        number = meta.get("part")
        part = number if isinstance(number, int) else 1
        found.append(Part(p, part, lines[0], lines[1]))
    return sorted(found, key=lambda x: (x.part, x.last))


def _placement(root: MemoryRoot, full: Transcript, parts: list[Part], goal: str) -> tuple[Path, str]:
    """The folder and base file name: beside part 1 for a continuation, else from the session start date."""
    if parts:
        return parts[0].path.parent, _PART_SUFFIX.sub("", parts[0].path.stem)
    started = full.started or dt.datetime.fromtimestamp(full.path.stat().st_mtime, dt.UTC)
    date = started.strftime("%Y-%m-%d")
    return root.sessions_dir / date[:4], f"{date}-{short_id(full.session_id)}-{slugify(goal)}"


def short_id(session_id: str) -> str:
    """The first 8 characters of a session id, safe in a file name."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", session_id)[:8] or "session"


def slugify(text: str, words: int = 6) -> str:
    """An ASCII slug of at most `words` words from a request, without filler words ("ok", "please")."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    tokens = [w for w in re.split(r"[^a-z0-9]+", ascii_text) if w]
    kept = [w for w in tokens if w not in SLUG_FILLER] or tokens
    return "-".join(kept[:words])[:60].strip("-") or "session"

"""What one session offers a dream as evidence: its items, each with a stable reference, date and text.

A dream reads the compressed sessions no dream has read. For each, the evidence comes from its transcript
when the transcript still exists (and lies in an allowed transcript folder), else from the compressed file:

- from a transcript (`sessions/events.py`): the person's requests, corrections (tool-rejection feedback)
  and answers to the agent's questions, commit messages, the agent's closing replies, Claude Code's own
  compaction summaries, and each failure with its error line and the fix steps up to the next success in
  the same session. References are `transcript:<file stem>:LINE` (the JSONL line);
- from a compressed file: every list item under its sections, and each "Errors and fixes" item split into
  error and fix. References are `sessions/...md:LINE`.

Every text is redacted (`sessions/redact.py`) before it is kept. Reading transcripts is the slow part, so a
session's evidence is cached in `.memory/dream-evidence/` keyed by the transcript's path, size and mtime.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_server.errors import MemoryServerError
from memory_server.files.root import MemoryRoot
from memory_server.parse.frontmatter import read_front_matter, split_front_matter
from memory_server.parse.markdown import iso_date
from memory_server.sessions.redact import redact_for_report
from memory_server.settings import Settings

log = logging.getLogger(__name__)

CACHE_DIR = "dream-evidence"
CACHE_VERSION = 1
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?(.*\S)\s*$")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
FIX_SPLIT = re.compile(
    r"\s+(?:→|->|=>|—)\s+(?:fixed(?: by| with|:)?\s*)?|\s*[—;,.]?\s*\bfixed(?: by| with)?:?\s+", re.I
)
SECTION_KINDS = {
    "requests": "request",
    "corrections": "correction",
    "questions": "answer",
    "answers": "answer",
    "commits": "commit",
    "decisions": "statement",
    "goal": "request",
    "open at the end": "statement",
}


@dataclass(frozen=True)
class Item:
    """One quotable thing a session says, at `ref`."""

    ref: str
    line: int
    date: str | None
    ts: float
    kind: str  # request | correction | answer | commit | closing | summary | failure | fix | statement
    speaker: str
    text: str


@dataclass(frozen=True)
class FailureItem:
    """A failure with its error line, what it normalises to, and the fix steps of the same session."""

    ref: str
    line: int
    date: str | None
    ts: float
    error: str
    normalised: str
    target: str
    fix: tuple[Item, ...] = ()


@dataclass
class SessionEvidence:
    path: str  # the compressed file (the unit a dream processes)
    source: str  # "transcript" or "compressed"
    ref_base: str  # "transcript:<stem>" or the compressed file's path
    date: str | None
    ts: float
    items: list[Item] = field(default_factory=list)
    failures: list[FailureItem] = field(default_factory=list)

    def kinds_at(self, line: int) -> set[str]:
        """The kinds of what this session has at one line ("failure" and "fix" included)."""
        out = {i.kind for i in self.items if i.line == line}
        for f in self.failures:
            out |= {"failure"} if f.line == line else set()
            out |= {"fix" for s in f.fix if s.line == line}
        return out

    def texts_at(self, line: int) -> list[str]:
        """Every text this session has at one line (items, failures' errors and fix steps)."""
        out = [i.text for i in self.items if i.line == line]
        for f in self.failures:
            out += [f.error] if f.line == line else []
            out += [s.text for s in f.fix if s.line == line]
        return out


def normalise_error(error: str) -> str:
    """An error line without what differs between occurrences: file positions, hashes, numbers, paths."""
    text = re.sub(r"^\s*(?:[\w./-]+\.\w+:\d+(?::\d+)?:\s*)+", "", error)  # go/python style file:line:col:
    text = re.sub(r"(?<![\w/])(?:/[\w.@+-]+){2,}/?", "<path>", text)
    text = re.sub(r"\b[0-9a-f]{7,64}\b", "<hash>", text)
    text = re.sub(r"\d+(?:\.\d+)?", "<n>", text)
    return " ".join(text.casefold().split()).strip(" .:;")[:200]


def _ts(value: dt.datetime | None) -> float:
    return value.timestamp() if value is not None else 0.0


def _date(value: dt.datetime | None) -> str | None:
    return value.date().isoformat() if value is not None else None


def _clean(text: str) -> str:
    return redact_for_report(text).strip()


def from_transcript(rel: str, transcript: Path) -> SessionEvidence:
    """The evidence of a session read from its transcript (redacted by the events reader, and again here)."""
    from memory_server.sessions.events import read_session_events

    ev = read_session_events(transcript)
    base = f"transcript:{transcript.stem}"
    out = SessionEvidence(rel, "transcript", base, _date(ev.started), _ts(ev.started))
    kinds: list[tuple[str, Any]] = [
        ("request", ev.user_messages),
        ("correction", ev.corrections),
        ("answer", ev.questions),
        ("commit", ev.commits),
        ("closing", ev.closing_replies),
        ("summary", ev.summaries),
    ]
    for kind, events in kinds:
        for e in events:
            if kind == "commit" and not e.succeeded:
                continue
            text = _clean(e.text)
            if text:
                out.items.append(
                    Item(
                        f"{base}:{e.line}",
                        e.line,
                        _date(e.timestamp) or out.date,
                        _ts(e.timestamp),
                        kind,
                        e.speaker,
                        text,
                    )
                )
    for f in ev.failures:
        steps = tuple(
            Item(
                f"{base}:{s.line}",
                s.line,
                _date(s.timestamp) or out.date,
                _ts(s.timestamp),
                "fix",
                "assistant",
                _clean(s.text),
            )
            for s in f.fix
        )
        error = _clean(f.error)
        out.failures.append(
            FailureItem(
                f"{base}:{f.line}",
                f.line,
                _date(f.timestamp) or out.date,
                _ts(f.timestamp),
                error,
                normalise_error(error),
                _clean(f.target),
                steps,
            )
        )
    out.items.sort(key=lambda i: (i.line, i.kind))
    return out


def from_compressed(root: MemoryRoot, rel: str, text: str) -> SessionEvidence:
    """The evidence of a session whose transcript is gone: the list items of its compressed file."""
    lines = text.splitlines()
    meta, body_start, _ = split_front_matter(lines)
    date = iso_date(meta.get("started")) or iso_date(rel.rsplit("/", 1)[-1])
    ts = float(dt.datetime.fromisoformat(date).replace(tzinfo=dt.UTC).timestamp()) if date else 0.0
    out = SessionEvidence(rel, "compressed", rel, date, ts)
    section = ""
    for n in range(body_start, len(lines)):
        h = HEADING.match(lines[n])
        if h:
            section = h.group(2).strip().casefold()
            continue
        m = LIST_ITEM.match(lines[n])
        if not m or section in ("files", "commands"):
            continue
        ref, body = f"{rel}:{n + 1}", _clean(m.group(1))
        if section.startswith("errors"):
            parts = FIX_SPLIT.split(body, maxsplit=1)
            error, fix = parts[0].strip(), (parts[1].strip() if len(parts) > 1 else "")
            steps = (Item(ref, n + 1, date, ts, "fix", "assistant", fix),) if fix else ()
            out.failures.append(FailureItem(ref, n + 1, date, ts, error, normalise_error(error), "", steps))
        else:
            out.items.append(Item(ref, n + 1, date, ts, SECTION_KINDS.get(section, "statement"), "session", body))
    return out


@functools.lru_cache(maxsize=1)
def _reader_code() -> str:
    """A hash of the code that reads transcripts (all of sessions/): an upgrade that reads them differently
    misses the cache."""
    import memory_server.sessions as sessions

    digest = hashlib.sha256()
    for path in sorted(Path(str(sessions.__file__)).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\x00" + path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_path(root: MemoryRoot, transcript: Path) -> tuple[Path, str]:
    st = transcript.stat()
    key = f"{CACHE_VERSION}\x00{_reader_code()}\x00{transcript}\x00{st.st_size}\x00{st.st_mtime_ns}"
    name = hashlib.sha256(str(transcript).encode()).hexdigest()[:24] + ".json"
    return root.state_dir / CACHE_DIR / name, hashlib.sha256(key.encode()).hexdigest()


def _to_json(ev: SessionEvidence) -> dict[str, Any]:
    return dataclasses.asdict(ev)


def _from_json(data: dict[str, Any]) -> SessionEvidence:
    items = [Item(**i) for i in data["items"]]
    failures = [FailureItem(**{**f, "fix": tuple(Item(**s) for s in f["fix"])}) for f in data["failures"]]
    return SessionEvidence(data["path"], data["source"], data["ref_base"], data["date"], data["ts"], items, failures)


def load_session(root: MemoryRoot, rel: str, settings: Settings) -> SessionEvidence:
    """The evidence of one compressed session: from its transcript when it can be read, else from the file."""
    from memory_server.sessions.transcript_layer import confine

    named = read_front_matter(root.path / rel).get("transcript")
    if isinstance(named, str) and named.strip():
        try:
            transcript = confine(Path(named.strip()), settings)
            cache, key = _cache_path(root, transcript)
            try:
                cached = json.loads(cache.read_text(encoding="utf-8"))
                if cached.get("key") == key:
                    return dataclasses.replace(_from_json(cached["evidence"]), path=rel)
            except (OSError, ValueError, KeyError, TypeError):
                pass
            ev = from_transcript(rel, transcript)
            _save_cache(root, cache, key, ev)
            return ev
        except (MemoryServerError, OSError) as exc:
            log.info("dream: reading %s from its compressed file (%s)", rel, exc)
    text = root.read_text(rel, max_bytes=settings.index.max_file_bytes).text
    return from_compressed(root, rel, text)


def _save_cache(root: MemoryRoot, cache: Path, key: str, ev: SessionEvidence) -> None:
    from memory_server.files.writing import atomic_write

    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(cache, json.dumps({"key": key, "evidence": _to_json(ev)}, ensure_ascii=False))
    except OSError as exc:
        log.warning("dream: could not cache the evidence of %s: %s", ev.path, exc)


def iter_sessions(
    root: MemoryRoot, paths: list[str], settings: Settings
) -> Iterator[tuple[str, SessionEvidence | None]]:
    """(path, its evidence) for each of `paths` in order, read one at a time; None for a path with nothing
    new: unreadable, or a later part of a transcript already read."""
    seen: set[str] = set()
    for rel in paths:
        try:
            ev = load_session(root, rel, settings)
        except (MemoryServerError, OSError) as exc:
            log.warning("dream: %s cannot be read (%s); left out", rel, exc)
            yield rel, None
            continue
        if ev.ref_base in seen:
            yield rel, None
            continue
        seen.add(ev.ref_base)
        yield rel, ev


def load_sessions(root: MemoryRoot, paths: list[str], settings: Settings) -> list[SessionEvidence]:
    """Evidence for `paths`, oldest first; one transcript named by several parts is read once."""
    out = [ev for _rel, ev in iter_sessions(root, paths, settings) if ev is not None]
    return sorted(out, key=lambda e: (e.ts, e.path))

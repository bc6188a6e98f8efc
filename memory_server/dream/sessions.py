"""Read compressed sessions for /dream: their decisions and their errors, with dates and line numbers.

A session written by `compress` has the sections Goal, Requests, Files, Commands, Errors and fixes,
Decisions, Open at the end. From those: every item under Decisions is a decision; items elsewhere count
only when they use strong rule language ("from now on", "always", "never", "instead of", "switched from").
Every item under Errors and fixes is an error, split into the error and what fixed it.

A hand-written session (none of those headings) is scanned whole: any list item or sentence with decision
language is a decision, any with an error signature (`SomethingError`, "error:", "failed", a traceback) is
an error. Reading is tolerant: a file that cannot be read or parsed gives an empty digest.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass, field

from memory_server.dream.recall import content_words
from memory_server.files.store import FileSkipped, MemoryRoot
from memory_server.parse.markdown import iso_date, parse_document

KNOWN_SECTIONS = {"goal", "requests", "files", "commands", "errors and fixes", "errors", "decisions", "open at the end"}
DECISION_SECTIONS = {"decisions"}
ERROR_SECTIONS = {"errors and fixes", "errors"}
SKIP_SECTIONS = {"files", "commands"}  # paths and command lines: never statements

DECISION_WORDS = re.compile(
    r"\b(decided|decide to|decision|switch(?:ed|ing)? (?:from|to|over)|from now on|going forward|always|never|"
    r"instead of|rather than|migrat(?:ed|e|ing) (?:from|to)|moved (?:from|to)|replac(?:ed|e|ing) \S.* with|"
    r"(?:we|the project) (?:now )?uses?)\b",
    re.IGNORECASE,
)
STRONG_WORDS = re.compile(
    r"\b(decided|from now on|going forward|always|never|instead of|switched from|migrated from|moved from)\b",
    re.IGNORECASE,
)
ERROR_WORDS = re.compile(
    r"\b\w*(?:Error|Exception)\b|\berror\b|\bTraceback\b|\bfailed\b|\bfailure\b|exit (?:code|status) [1-9]",
)
FIX_SPLIT = re.compile(
    r"\s*(?:→|->|=>|—|–|:|;|,|\.)?\s*\b(?:fixed by|fixed with|fix(?:ed)?:|the fix was|fix was|solved by|"
    r"resolved by|solution:|workaround:)\s*",
    re.IGNORECASE,
)
ARROW = re.compile(r"\s+(?:→|->|=>)\s+")
LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])")
LINE_REF = re.compile(r"\s*\(line \d+(?:, \d+×)?\)")  # compress cites the transcript line: "(line 12, 2×)"
BACKTICKED = re.compile(r"`([^`]+)`")
EXCEPTION_NAME = re.compile(r"\b([A-Za-z_][\w.]*(?:Error|Exception))\b")


@dataclass(frozen=True)
class Statement:
    """A decision-like statement in a session, with where it stands."""

    session: str
    date: str | None
    ts: float
    start_line: int
    end_line: int
    text: str
    section: str


@dataclass(frozen=True)
class ErrorItem:
    session: str
    date: str | None
    ts: float
    start_line: int
    end_line: int
    error: str
    fix: str

    @property
    def signature(self) -> frozenset[str]:
        return error_signature(self.error)

    @property
    def exception(self) -> str | None:
        m = EXCEPTION_NAME.search(self.error)
        return m.group(1).rsplit(".", 1)[-1].casefold() if m else None


@dataclass
class SessionDigest:
    path: str
    session_id: str
    title: str
    date: str | None
    ts: float
    words: frozenset[str] = frozenset()
    lines: list[str] = field(default_factory=list)
    decisions: list[Statement] = field(default_factory=list)
    errors: list[ErrorItem] = field(default_factory=list)
    structured: bool = False


def error_signature(error: str) -> frozenset[str]:
    """Content words of an error's core (its backticked part, if any), without numbers and hashes."""
    core = next((m for m in BACKTICKED.findall(error) if ERROR_WORDS.search(m)), None) or error
    return frozenset(w for w in content_words(core) if not w.isdigit() and not re.fullmatch(r"[0-9a-f]{7,}", w))


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _timestamp(meta: dict, date: str | None) -> float:
    for key in ("ended", "started"):
        value = meta.get(key)
        if isinstance(value, str):
            try:
                value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                value = None
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.UTC)
            return value.timestamp()
    if date:
        return float(calendar.timegm(dt.date.fromisoformat(date).timetuple()))
    return 0.0


def clean(text: str) -> str:
    """One line of plain statement: no list marker, no bold markers, no `(line N)` transcript reference."""
    text = LIST_MARKER.sub("", text.strip())
    text = LINE_REF.sub("", re.sub(r"\*\*|__", "", text))
    return re.sub(r"\s+", " ", text).strip()


def _pieces(text: str, start_line: int):
    """(start_line, end_line, sentence) for each sentence of a block; list items stay whole unless long."""
    if len(text) <= 300 or not SENTENCE_END.search(text):
        yield start_line, start_line + text.count("\n"), text
        return
    pos = 0
    for sentence in SENTENCE_END.split(text):
        at = text.find(sentence, pos)
        pos = at + len(sentence)
        first = start_line + text[:at].count("\n")
        yield first, first + sentence.count("\n"), sentence


def split_error(text: str) -> tuple[str, str]:
    """(error, fix) from one "Errors and fixes" item, e.g. "`X` failed → fixed by running Y"."""
    lines = [clean(line) for line in text.splitlines() if line.strip()]
    if len(lines) > 1:  # nested "- fix: ..." under the error
        nested = [ln for ln in lines[1:] if FIX_SPLIT.match(" " + ln) or ln.lower().startswith("fix")]
        if nested:
            fix = FIX_SPLIT.sub("", " " + nested[0], count=1).strip()
            return lines[0], fix
    flat = clean(text)
    for pattern in (FIX_SPLIT, ARROW):
        parts = pattern.split(flat, maxsplit=1)
        if len(parts) == 2 and parts[0].strip():
            return parts[0].strip(" .;,"), parts[1].strip()
    return flat, ""


def read_session(root: MemoryRoot, rel: str, max_bytes: int) -> SessionDigest:
    try:
        text = root.read_text(rel, max_bytes=max_bytes).text
    except (FileSkipped, OSError):
        return SessionDigest(rel, "", rel, None, 0.0)
    doc = parse_document(rel, "session", text, max_chunk_chars=10**9)
    date = doc.date or iso_date(rel.rsplit("/", 1)[-1])
    ts = _timestamp(doc.meta, date)
    sid = str(doc.meta.get("session_id") or "")
    digest = SessionDigest(rel, sid, doc.title, date, ts, frozenset(content_words(text)), text.splitlines())
    sections = {(c.heading.split(" > ")[-1] if c.heading else "").strip().casefold() for c in doc.chunks}
    digest.structured = bool(sections & KNOWN_SECTIONS)
    for chunk in doc.chunks:
        section = (chunk.heading.split(" > ")[-1] if chunk.heading else "").strip().casefold()
        if digest.structured and section in SKIP_SECTIONS:
            continue
        if chunk.text.lstrip().startswith(("```", "~~~", "|")):
            continue
        if section in ERROR_SECTIONS or (not digest.structured and ERROR_WORDS.search(chunk.text)):
            error, fix = split_error(chunk.text)
            if error and (section in ERROR_SECTIONS or ERROR_WORDS.search(error)):
                digest.errors.append(ErrorItem(rel, date, ts, chunk.start_line, chunk.end_line, error, fix))
            continue
        for first, last, piece in _pieces(chunk.text, chunk.start_line):
            statement = clean(piece)
            if not statement or len(statement) > 400:
                continue
            wanted = (
                section in DECISION_SECTIONS
                or (digest.structured and STRONG_WORDS.search(statement))
                or (not digest.structured and DECISION_WORDS.search(statement))
            )
            if wanted:
                digest.decisions.append(Statement(rel, date, ts, first, last, statement, section))
    return digest


def read_sessions(root: MemoryRoot, paths: list[str], max_bytes: int) -> list[SessionDigest]:
    """Digests for `paths`, oldest first (then by path), so every later step sees them in one order."""
    digests = [read_session(root, rel, max_bytes) for rel in paths]
    return sorted(digests, key=lambda d: (d.ts, d.path))

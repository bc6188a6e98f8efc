"""The session-start brief: what the records say the agent should know before the person's first words.

At most `hooks.brief_chars` characters (1,200 by default), in this order, each line quoted as data with its
file and line (`quote.py`), and nothing at all when the records hold none of it:

1. Where the last session stopped: its title, its unfinished todos and its last reply ("Open at the end" of
   the newest compressed session that is not this one).
2. The person's decisions of the last `hooks.brief_days` days ("Decisions" of those sessions: what the person
   stated, agreed to or declined), newest first.
3. Lessons touched recently: entries of topics/lessons.md that a dream applied in those days, or whose "Seen
   in" cites a session of those days.
4. Topics that may be stale: a topic `dream.stale_min_days` older than the newest session, whose subject the
   person's words of `dream.stale_min_sessions` sessions since mention (as `dream run` reports them).

Only the newest sessions are read (`RECENT`), so the hook's time does not grow with the root.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memory_server.dream.gate import DreamGate
from memory_server.dream.lesson_text import lesson_heading
from memory_server.dream.recall import content_words
from memory_server.dream.start_hook import session_start
from memory_server.files.root import LESSONS_TOPIC, TOPICS_DIR, MemoryRoot
from memory_server.inject.answer import HookInput, lenient_settings, memory_root
from memory_server.inject.quote import Quote, block, file_lines, fit, quoted
from memory_server.inject.session_files import SessionFile, days_before, name_date, newest_sessions
from memory_server.parse.frontmatter import split_front_matter
from memory_server.parse.markdown import iso_date
from memory_server.parse.text import as_data
from memory_server.settings import Settings

RECENT = 20  # newest session files read (by name: the date they started)
ITEM_CHARS = 200  # one quoted line at most
MAX_OPEN, MAX_DECISIONS, MAX_LESSONS, MAX_STALE = 3, 4, 3, 3
TRANSCRIPT_REF = re.compile(r"\s*\((?:last reply, )?line \d+[^)]{0,200}\)$")  # "(line 12)": a transcript line
PERSON = re.compile(r"^- User(?: [a-z]+)?: ")
PERSON_SECTIONS = ("Goal", "What the user said", "Corrections", "Questions and answers", "Decisions")
SEEN_IN = re.compile(r"^- Seen in: (.*)$")


@dataclass(frozen=True)
class BriefInput:
    """What the brief is read from: the root, its settings, the time (seconds since the epoch) and the
    session starting (its own files are not "the last session")."""

    root: MemoryRoot
    settings: Settings
    now: float
    session_id: str | None = None


def session_brief(given: BriefInput) -> str:
    """The brief's text (a `<memory-brief>` block), or "" when the records hold nothing for it."""
    budget = given.settings.hooks.brief_chars
    if budget <= 0:
        return ""
    sessions = newest_sessions(given.root, RECENT, skip_session=given.session_id)
    today = dt.datetime.fromtimestamp(given.now, dt.UTC).date().isoformat()
    days = given.settings.hooks.brief_days
    recent = [s for s in sessions if days_before(today, s.date) <= days]
    sections = [
        last_session(sessions[0]) if sessions else [],
        _titled("Decisions of the last days:", decisions(recent)),
        _titled("Lessons touched recently:", lessons_touched(given, today, days)),
        _stale_lines(stale_topics(given.root, given.settings, sessions)),
    ]
    lines = [line for section in sections for line in section]
    if not lines:
        return ""
    intro = "What this project's memory says before you start."
    room = budget - len(block("brief", intro, []))
    kept = fit(_without_orphan_titles(lines), room)
    return block("brief", intro, _without_orphan_titles(kept)) if any(ln.startswith("- ") for ln in kept) else ""


def _titled(title: str, quotes: list[Quote]) -> list[str]:
    return [title, *(q.render(ITEM_CHARS) for q in quotes)] if quotes else []


def _without_orphan_titles(lines: list[str]) -> list[str]:
    """Section titles followed by at least one of their items."""
    follows = [*lines[1:], ""]
    return [ln for ln, nxt in zip(lines, follows, strict=True) if ln.startswith("- ") or nxt.startswith("- ")]


def _text(item: str) -> str:
    return TRANSCRIPT_REF.sub("", item.removeprefix("- "))


def last_session(s: SessionFile) -> list[str]:
    """Where the last session stopped: its open todos and its last reply."""
    items = s.sections.get("Open at the end", [])
    todos = [Quote(s.path, n, _text(t), "open") for n, t in items if t.startswith("- [ ]")][:MAX_OPEN]
    reply = [Quote(s.path, n, _text(t), "stopped") for n, t in items if t.startswith("Assistant:")][-1:]
    if not todos and not reply:
        return []
    title = f"The last session, {s.date} ({as_data(s.path)}): {quoted(s.title or s.session_id, 120)}"
    return [title, *(q.render(ITEM_CHARS, path_shown=False) for q in [*todos, *reply])]


def decisions(recent: list[SessionFile]) -> list[Quote]:
    """The person's decisions in the recent sessions, newest session first."""
    found = [
        Quote(s.path, n, _text(item))
        for s in recent
        for n, item in reversed(s.sections.get("Decisions", []))
        if PERSON.match(item)
    ]
    return found[:MAX_DECISIONS]


def lessons_touched(given: BriefInput, today: str, days: float) -> list[Quote]:
    """Entries of the lessons topic applied by a dream, or seen in a session, within the last `days` days."""
    lines = file_lines(given.root, LESSONS_TOPIC)
    if not lines:
        return []
    since = given.now - days * 86400.0
    applied = DreamGate(given.root, given.settings).load_state().get("applied", {})
    statements = [
        str(rec.get("statement") or "")
        for rec in applied.values()
        if str(rec.get("target") or "") == LESSONS_TOPIC and float(rec.get("at") or 0) >= since
    ]
    statements += [lesson_heading(s)[0] for s in statements]  # a long lesson is headed by its first part
    found: dict[int, str] = {}
    heading = (0, "")
    for n, line in enumerate(lines, 1):
        if line.startswith("## "):
            heading = (n, line[3:].strip())
        if any(s and s in line for s in statements):
            found.setdefault(n, line.strip().lstrip("#- ").strip())
        seen = SEEN_IN.match(line.strip())
        if seen and heading[0] and any(days_before(today, name_date(p)) <= days for p in seen.group(1).split(",")):
            found.setdefault(heading[0], heading[1])
    return [Quote(LESSONS_TOPIC, n, text) for n, text in sorted(found.items())][-MAX_LESSONS:]


def _stale_lines(stale: list[tuple[str, str, int]]) -> list[str]:
    lines = [f"- {as_data(rel)}: updated {day}; {n} sessions since mention its subject" for rel, day, n in stale]
    return ["Topics that may be stale (worth a review):", *lines] if lines else []


def stale_topics(root: MemoryRoot, settings: Settings, sessions: list[SessionFile]) -> list[tuple[str, str, int]]:
    """Topics much older than the newest session whose subject the person's words keep bringing up since."""
    if not sessions or not root.topics_dir.is_dir():
        return []
    newest = max(s.date for s in sessions)
    spoken = {s.path: set(content_words(_person_words(s))) for s in sessions}
    out: list[tuple[str, str, int]] = []
    for path in sorted(root.topics_dir.glob("*.md")):
        rel = f"{TOPICS_DIR}/{path.name}"
        lines = [] if rel == LESSONS_TOPIC or path.is_symlink() else file_lines(root, rel)
        meta, _, _ = split_front_matter(lines)
        updated = iso_date(meta.get("updated"))
        subject = set(content_words(str(meta.get("title") or ""))) | {str(t).casefold() for t in meta.get("tags") or []}
        if not updated or not subject or days_before(newest, updated) < settings.dream.stale_min_days:
            continue
        since = [s for s in sessions if s.date > updated and subject & spoken[s.path]]
        if len(since) >= settings.dream.stale_min_sessions:
            out.append((rel, updated, len(since)))
    return out[:MAX_STALE]


def _person_words(s: SessionFile) -> str:
    items = [item for heading in PERSON_SECTIONS for _, item in s.sections.get(heading, [])]
    return " ".join(item for item in items if item.startswith(("User", "- User")))


def session_start_context(hook: HookInput, root: Path, *, clock: Callable[[], float] = time.time) -> str:
    """What the SessionStart hook adds: the brief, then the line saying a dream is due (each only when there is
    something to say). Outside a memory root: nothing (and one line on stderr, from the dream's check)."""
    due = session_start({"hook_event_name": hook.event}, root, clock=clock)
    memory = memory_root(root)
    if memory is None or hook.event != "SessionStart":
        return due
    given = BriefInput(memory, lenient_settings(root), clock(), hook.session_id or None)
    return "\n\n".join(part for part in (session_brief(given), due) if part)

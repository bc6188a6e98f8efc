"""The earlier fix when a command fails: the same error in the lessons or an earlier session, with its fix.

Claude Code runs the PostToolUseFailure hook when a tool call fails (a command exits non-zero, a tool raises);
its input holds `tool_name`, `tool_input`, `error` (the text the model sees) and `is_interrupt`. The error's
informative line (`sessions/failures.error_line`, as compression records it) is normalised
(`normalise_error`: paths, numbers, hashes and file positions out) and looked up in the keyword index:

- topics/lessons.md: an entry quoting the same error (a dream's `Mistake:` line), or a hand-written entry
  holding every content word of it;
- earlier sessions: an "Errors and fixes" line with the same normalised error that records a fix ("passed at
  line N after: <edits and commands>"). The session's own files are left out.

Only a match adds text (at most `hooks.fix_chars`, 600 by default): the lesson, then the newest session's line,
each quoted as data with its path and line. A new error, a bare exit code, an interruption or Claude Code's
own tool errors (a file not read yet, a rejected call) add nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from memory_server.files.root import LESSONS_TOPIC, MemoryRoot
from memory_server.inject.answer import HookInput, lenient_settings, memory_root
from memory_server.inject.index_reader import KeywordIndex
from memory_server.inject.quote import Quote, block, lines_of
from memory_server.inject.session_files import of_session
from memory_server.parse.markdown import Chunk
from memory_server.parse.text import STOP_WORDS, one_line
from memory_server.search.exact import TOKEN
from memory_server.sessions.failures import error_line, harness_error, normalise_error
from memory_server.sessions.redact import clean

ERROR_CHARS = 200  # as compressed sessions record an error line (sessions/render.py)
CANDIDATES = 40  # chunks read from the index per lookup
MIN_WORDS = 2  # an error with fewer content words ("exit code 1", "failed") is too vague to look up
MAX_QUERY_WORDS = 12
PREFIX_CHARS = 60  # an error line cut short still names its error when this much of it is left
PLACEHOLDERS = frozenset({"n", "path", "hash"})
# "- <who>: <error> (line 12, 2×) — passed at line 40 after: <fix>", as sessions/render.py writes it
ERROR_ITEM = re.compile(r"^- (?P<who>User pasted|\S+(?: `[^`]*`| ``[^`]*``)?): (?P<rest>.*)$", re.DOTALL)
FIXED = re.compile(r" \((?:line \d+[^)]{0,40})\) — passed at line \d+ after: (?P<fix>.+)$", re.DOTALL)
LESSON_REF = re.compile(r" \(`[^`\n]{1,300}:\d+`\)")  # a lesson's "(`sessions/...md:12`)"
QUOTED_ERROR_CHARS = 100  # of a session's error line, in the quote (the fix matters more)
MISTAKE = re.compile(r"Mistake: (`+)\s?(?P<error>.+?)\s?\1")


@dataclass(frozen=True)
class ToolFailure:
    """A failed tool call as the hook sees it: the tool, its informative error line, and that line normalised."""

    tool: str
    error: str
    normalised: str

    @property
    def words(self) -> frozenset[str]:
        return error_words(self.normalised)


def error_words(normalised: str) -> frozenset[str]:
    return frozenset(
        w.casefold()
        for w in TOKEN.findall(normalised)
        if len(w) > 1 and w.casefold() not in STOP_WORDS and w.casefold() not in PLACEHOLDERS
    )


def failure_of(hook: HookInput) -> ToolFailure | None:
    """The failure a PostToolUseFailure input reports, or None when there is nothing to look up."""
    if hook.is_interrupt or not hook.error.strip():
        return None
    text = clean(hook.error[:50_000])
    if harness_error(text):
        return None
    line = one_line(error_line(text), ERROR_CHARS).rstrip("…")
    normalised = normalise_error(line)
    if not normalised or normalised.startswith("exit code") or len(error_words(normalised)) < MIN_WORDS:
        return None
    return ToolFailure(hook.tool_name, line, normalised)


def same_error(a: str, b: str) -> bool:
    """Whether two normalised error lines are the same error: equal, or one cut short where the other goes on.
    Nothing looser: "No module named 'billing'" and "No module named 'billing.tax'" are two mistakes."""
    return a == b or (min(len(a), len(b)) >= PREFIX_CHARS and (a.startswith(b) or b.startswith(a)))


@dataclass(frozen=True)
class EarlierFix:
    """Where the same error was met and fixed before: a lesson or a session's "Errors and fixes" line."""

    quote: Quote
    lesson: bool
    date: str


def lookup(
    root: MemoryRoot, index: KeywordIndex, failure: ToolFailure, *, session_id: str | None = None
) -> list[EarlierFix]:
    """The lesson, then the newest session, that record the same error and its fix (at most one of each)."""
    words = sorted(failure.words, key=len, reverse=True)[:MAX_QUERY_WORDS]
    where = "AND ((c.layer = 'session' AND c.heading = 'Errors and fixes') OR c.path = ?)"
    lessons: list[EarlierFix] = []
    sessions: list[EarlierFix] = []
    for chunk in index.any_of(words, CANDIDATES, where, [LESSONS_TOPIC]):
        if chunk.path == LESSONS_TOPIC:
            if _lesson_matches(chunk.text, failure):
                lessons.append(EarlierFix(_quote(root, chunk, lesson=True), True, ""))
        elif not of_session(chunk.path, session_id) and _session_fix(chunk.text, failure):
            sessions.append(EarlierFix(_quote(root, chunk, lesson=False), False, chunk.path))
    sessions.sort(key=lambda f: f.date, reverse=True)
    return [f for f in (*lessons[:1], *sessions[:1]) if f.quote.text]


def _session_fix(text: str, failure: ToolFailure) -> bool:
    """Whether a session's error line records the same error, with a fix."""
    item = ERROR_ITEM.match(text.strip())
    fixed = FIXED.search(item.group("rest")) if item else None
    if item is None or fixed is None:
        return False
    error = item.group("rest")[: fixed.start()].rstrip("…")
    return same_error(normalise_error(error), failure.normalised)


def _lesson_matches(text: str, failure: ToolFailure) -> bool:
    """A dream's lesson quoting the same error as a mistake, or a hand-written one holding all its words."""
    quoted = [m.group("error") for m in MISTAKE.finditer(text)]
    if quoted:
        return any(same_error(normalise_error(q.rstrip("…")), failure.normalised) for q in quoted)
    words = error_words(normalise_error(text))
    return len(failure.words) >= 3 and failure.words <= words


def _quote(root: MemoryRoot, chunk: Chunk, *, lesson: bool) -> Quote:
    """The chunk's lines read again from its file, redacted, and said short: a lesson without the references
    its quotes carry, a session's line as its error and its fix (the transcript's line numbers left out)."""
    text = " ".join(lines_of(root, chunk.path, chunk.start_line, chunk.end_line).split())
    if lesson:
        return Quote(chunk.path, chunk.start_line, LESSON_REF.sub(" (…)", text.removeprefix("- ")))
    item = ERROR_ITEM.match(text)
    fixed = FIXED.search(item.group("rest")) if item else None
    if item is None or fixed is None:
        return Quote(chunk.path, chunk.start_line, "")  # the file changed since it was indexed
    error = one_line(item.group("rest")[: fixed.start()], QUOTED_ERROR_CHARS)
    return Quote(chunk.path, chunk.start_line, f"{fixed.group('fix')} [the error then: {error}]", "fixed by")


def failure_context(hook: HookInput, root: Path) -> str:
    """What the PostToolUseFailure hook adds: the earlier fix of the same error, or "" (also outside a root)."""
    memory = memory_root(root)
    failure = failure_of(hook) if memory is not None else None
    if memory is None or failure is None:
        return ""
    return earlier_fix_context(memory, failure, lenient_settings(root).hooks.fix_chars, hook.session_id or None)


def earlier_fix_context(root: MemoryRoot, failure: ToolFailure, budget: int, session_id: str | None = None) -> str:
    """The text added for this failure: the earlier fixes the keyword index holds, or ""."""
    if budget <= 0:
        return ""
    index = KeywordIndex.open(root.path)
    if index is None:
        return ""
    with index:
        fixes = lookup(root, index, failure, session_id=session_id)
    return render(failure, fixes, budget)


def render(failure: ToolFailure, fixes: list[EarlierFix], budget: int) -> str:
    """The fixes in one quoted block of at most `budget` characters (each quote cut to its share of the room
    the earlier ones left)."""
    intro = "This error was met before; how it was fixed (check it still applies)."
    room = budget - len(block("earlier-fix", intro, []))
    lines: list[str] = []
    for i, f in enumerate(fixes):
        share = room // (len(fixes) - i) - 1
        line = f.quote.render(share - len(replace(f.quote, text="").render(10)) - 8)
        if len(line) <= share:
            lines.append(line)
            room -= len(line) + 1
    return block("earlier-fix", intro, lines) if lines else ""

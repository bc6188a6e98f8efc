"""Lessons: the same mistake in two sessions or more, each with its failure and its fix.

The agent groups failures by meaning (the same mistake often fails with different errors); the program checks
each cited session: a quote at a recorded failure (a failed command, a tool's error, an error the person
pasted, or the person's feedback when they rejected a tool call), and a quote at a fix step of that failure
(an edit, a file written or a command of the agent) after it and no later than the next success of the same
command (after a rejected call: before the person's next message; when it never succeeds again, as after a
merge conflict resolved by a commit, any later step of the session). A fix taken back later (a revert that
names its file) is no fix. Roles the item gives its quotes are not trusted: the record says which quote is the
failure and which the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_server.dream.locate import Located
from memory_server.dream.record import (
    AGENT,
    FIX_KINDS,
    PERSON,
    TOOL,
    FailureRecord,
    SessionRecord,
    Turn,
)
from memory_server.dream.stance import REVERSAL
from memory_server.sessions.failures import changes_things, looks_like_error, normalise_error

PATH_IN_LABEL = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class LessonCase:
    """One session's share of a lesson: where it failed and where it was fixed."""

    session: str  # the session file
    failure: str  # its reference
    fix: str
    error: str
    fix_text: str  # the whole fix step (what the report shows and the checks read)
    fix_quote: str = ""  # the part of it the item cited
    gone: tuple[str, ...] = ()  # files the error names that today's tree does not have (set by the verifier)

    @property
    def fix_shown(self) -> str:
        """The fix as the topic shows it: the lines of the step that hold the cited part, not a whole edit that
        runs on into the next statement (the whole step when the part is not found as written)."""
        return quoted_lines(self.fix_text, self.fix_quote)


# A file an error names: "cmd/app/x_test.go:24:68: ...", "FAILED tests/it/test_x.py::test_y" (a path with an
# extension, then a line number or a test's name).
ERROR_FILE = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z]{1,5})(?=:\d|::\w)")


def files_named(error: str) -> list[str]:
    """The files an error line points at, in order, once each."""
    return list(dict.fromkeys(ERROR_FILE.findall(error)))


def quoted_lines(text: str, quote: str) -> str:
    """The whole lines of `text` that hold `quote` (spacing aside), else all of `text`."""
    words = quote.split()
    if not words:
        return text
    found = re.search(r"\s+".join(map(re.escape, words)), text)
    if found is None:
        return text
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.end())
    return text[start : end if end >= 0 else len(text)].strip()


def _failure(quotes: list[Located]) -> tuple[Located, FailureRecord] | None:
    """The first quote at a line the record holds a failure at (the failed call, its output, a pasted error),
    else a quote of a tool's output that shows an error its exit code hid (`lint | head` exits 0)."""
    for x in quotes:
        f = x.session.failure_at(x.turn.line)
        if f is not None:
            return x, f
    for x in quotes:
        shown = looks_like_error(x.turn.text) if x.turn.speaker == TOOL else ""
        if shown:
            t = x.turn
            f = FailureRecord(t.ref, t.line, t.date, t.ts, shown, normalise_error(shown), t.tool, t.line, None)
            return x, f
    return next(((x, _caught(x)) for x in quotes if x.turn.speaker == PERSON and x.turn.kind == "correction"), None)


def _caught(x: Located) -> FailureRecord:
    """A mistake the person caught by rejecting the tool call, with their feedback: its fix is a step the
    agent took before the person's next message."""
    t = x.turn
    answered = next((n.line for n in x.session.turns if n.line > t.line and n.speaker == PERSON), None)
    end = answered - 1 if answered is not None else max(n.line for n in x.session.turns)
    return FailureRecord(t.ref, t.line, t.date, t.ts, t.text, normalise_error(t.text), t.tool, t.line, end)


def _is_step(t: Turn) -> bool:
    """A fix step: an edit, a file written, or a command that changes things (not `grep` or `git status`)."""
    return t.speaker == AGENT and (t.kind in ("edit", "write") or (t.kind == "command" and changes_things(t.text)))


def _fix(quotes: list[Located], f: FailureRecord, session: SessionRecord) -> Located | None:
    """A quote of the fix: a fix step (edit, file written, command) of the agent after the failure and no later
    than the next success of the same command, or the agent's words there when a fix step follows them. A
    quoted step comes first: the lesson shows what was done, not what the agent said it would do."""
    end = f.fixed_line or 10**9
    steps = [t.line for t in session.turns if _is_step(t) and f.line < t.line <= end]
    for x in sorted(quotes, key=lambda q: not _is_step(q.turn)):
        if session.source == "compressed" and x.turn.line == f.line and x.turn.kind in FIX_KINDS:
            return x  # a compressed file holds a failure and its fix on one line
        if not (f.line < x.turn.line <= end) or x.turn.speaker != AGENT:
            continue
        if _is_step(x.turn) or (x.turn.kind == "reply" and any(n >= x.turn.line for n in steps)):
            return x
    return None


def _case(session: SessionRecord, quotes: list[Located]) -> LessonCase | str:
    found = _failure(quotes)
    refs = ", ".join(x.quote.ref for x in quotes)
    if found is None:
        return f"no failure is recorded at {refs} (cite the failure: a failed command, a tool's error, a pasted error)"
    error, f = found
    fix = _fix([x for x in quotes if x is not error], f, session)
    if fix is None:
        window = (
            "the failure's own line (a session file holds a failure and its fix on one line)"
            if session.source == "compressed"
            else f"lines {f.line + 1}-{f.fixed_line}"
            if f.fixed_line
            else f"the lines after {f.line}"
        )
        return (
            f"no fix of the failure at {f.ref} is quoted: cite an edit, a file written or a command of the agent "
            f"in {window} (before the same command next succeeded)"
        )
    return LessonCase(session.path, f.ref, fix.quote.ref, f.error, fix.turn.text, fix.quote.quote)


def _reverted(case: LessonCase, fix: Located, sessions: list[SessionRecord]) -> str | None:
    """A later turn that reverts the fix's file ("revert the change to setup.go")."""
    label = PATH_IN_LABEL.search(fix.turn.tool)  # a command's fix: the command as its label quotes it
    subject = fix.turn.path or (label.group(1) if label else "")
    if not subject:
        return None
    name = subject.rsplit("/", 1)[-1]
    seen = False
    for s in sessions:
        for t in s.turns:
            seen = seen or (s.path == case.session and t.line >= fix.turn.line)
            if not seen or t.speaker not in (AGENT, PERSON) or t.kind in ("edit", "write", "call", "command"):
                continue
            if name in t.text and any(REVERSAL.search(p) and name in p for p in re.split(r"(?<=[.!?])\s+", t.text)):
                return f"the fix at {case.fix} was taken back later at {t.ref}: {t.text[:160]!r}"
    return None


def lesson_cases(
    located: list[Located], sessions: list[SessionRecord], min_sessions: int
) -> tuple[list[LessonCase], str | None]:
    """(each cited session's failure and fix, why the lesson is refused or None)."""
    by_session: dict[str, list[Located]] = {}
    for x in located:
        by_session.setdefault(x.session.path, []).append(x)
    cases: list[LessonCase] = []
    for path, quotes in by_session.items():
        case = _case(quotes[0].session, quotes)
        if isinstance(case, str):
            return cases, f"in {path}: {case}"
        fix = next(x for x in quotes if x.quote.ref == case.fix)
        reverted = _reverted(case, fix, sessions)
        if reverted:
            return cases, reverted
        cases.append(case)
    if len(cases) < min_sessions:
        return cases, (
            f"a lesson is a mistake made in {min_sessions} sessions or more, each with its failure and fix quoted; "
            f"this one cites {len(cases)}"
        )
    return cases, None

"""The events of a session, as data types (what `sessions/events.py` reads out of a transcript).

Every event has `line` (1-based JSONL line of the record it comes from, citable as `transcript:<id>:LINE`),
`timestamp` (aware UTC datetime or None), `speaker` ("user", "assistant", "tool" for command output,
"claude-code" for Claude Code's own records), `kind` and `text`. The fields are described in
`sessions/events.py`; the shape is stable: fields may be added, none renamed or removed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class UserMessage:
    line: int
    timestamp: dt.datetime | None
    text: str
    command: str | None = None
    speaker: str = "user"
    kind: str = "user_message"


@dataclass(frozen=True)
class Correction:
    line: int
    timestamp: dt.datetime | None
    text: str
    rejected: str = ""
    speaker: str = "user"
    kind: str = "correction"


@dataclass(frozen=True)
class QuestionAnswer:
    line: int
    timestamp: dt.datetime | None
    question: str
    answer: str
    question_line: int
    speaker: str = "user"
    kind: str = "answer"

    @property
    def text(self) -> str:
        return f"{self.question} -> {self.answer or '(no answer)'}"


@dataclass(frozen=True)
class Commit:
    line: int
    timestamp: dt.datetime | None
    message: str
    succeeded: bool = True
    speaker: str = "assistant"
    kind: str = "commit"

    @property
    def text(self) -> str:
        return self.message


@dataclass(frozen=True)
class CompactionSummary:
    line: int
    timestamp: dt.datetime | None
    text: str
    source: str = "compaction"
    speaker: str = "claude-code"
    kind: str = "compaction_summary"


@dataclass(frozen=True)
class ClosingReply:
    line: int
    timestamp: dt.datetime | None
    text: str
    final: bool = False
    speaker: str = "assistant"
    kind: str = "closing_reply"


@dataclass(frozen=True)
class FixStep:
    line: int
    timestamp: dt.datetime | None
    action: str  # "edit" or "command"
    text: str


@dataclass(frozen=True)
class Failure:
    line: int
    timestamp: dt.datetime | None
    error: str
    target: str
    key: str
    fix: tuple[FixStep, ...] = ()
    fixed_line: int | None = None
    speaker: str = "tool"
    kind: str = "failure"
    result_line: int | None = None  # the line of the output that reports it (`line` is the call's)

    @property
    def text(self) -> str:
        return f"{self.target}: {self.error}"


Event = UserMessage | Correction | QuestionAnswer | Commit | CompactionSummary | ClosingReply | Failure


@dataclass(frozen=True)
class SessionEvents:
    session_id: str
    transcript: Path
    cwd: str | None
    started: dt.datetime | None
    ended: dt.datetime | None
    user_messages: tuple[UserMessage, ...] = ()
    corrections: tuple[Correction, ...] = ()
    questions: tuple[QuestionAnswer, ...] = ()
    commits: tuple[Commit, ...] = ()
    summaries: tuple[CompactionSummary, ...] = ()
    closing_replies: tuple[ClosingReply, ...] = ()
    failures: tuple[Failure, ...] = ()

    def all(self) -> list[Event]:
        """Every event, ordered by line (then by kind, for events of one record)."""
        items: list[Event] = [
            *self.user_messages,
            *self.corrections,
            *self.questions,
            *self.commits,
            *self.summaries,
            *self.closing_replies,
            *self.failures,
        ]
        return sorted(items, key=lambda e: (e.line, e.kind))

"""A session as the record a dream checks items against: every turn, who spoke it, where and when.

    record = load_record(root, "sessions/compressed/2026/....md", settings)
    for turn in record.turns:
        turn.ref, turn.speaker, turn.kind, turn.text, turn.asked

The program decides who said a line, never an item. Speakers:

- `person`: what the person typed (`request`), their answers (`answer`: to an AskUserQuestion, a plan they
  approved, or a bare "yes" / "no" / "ok" right after the agent's text; `asked` then holds what it answers),
  and the feedback they gave when rejecting a tool call (`correction`);
- `agent`: the agent's text (`reply`; `closing` when it is the last before the person spoke again or the
  session ended), its commands (`command`), edits (`edit`), files it wrote (`write`), commit messages
  (`commit`) and other tool calls (`call`);
- `tool`: what a command or tool printed (`output`; `error` when it failed);
- `file`: a file's content as the agent read it (`file`);
- `claude-code`: Claude Code's own text: compaction summaries and session titles (`summary`), and its
  canned notices: rejections, interruptions, skill bodies, reminders, local command output (`canned`).

From a transcript, references are `transcript:<stem>:LINE` (the JSONL line the text was written on). When Claude
Code has deleted the transcript, its kept copy (`sessions/transcripts/YYYY/<stem>.jsonl.gz`) is read instead:
the same lines, so the same references (`SessionRecord.kept` names the copy read). When neither is there, the
record is read from the compressed file (`sessions/...md:LINE`), whose labels say
who spoke ("User:", "User answered:", "Assistant:", "Claude Code:"). Every text is redacted before it is kept.
Failures come with their fix window (the edits and commands up to the next success of the same command).

Reading a long transcript is the slow part, so a record is cached in `.memory/dream-record/`, keyed by the
transcript's path, size and mtime and a hash of the code that reads it.
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
from memory_server.sessions.event_types import Failure
from memory_server.sessions.events import (
    SHELL_TOOLS,
    clarify_notes,
    clarifying,
    failed,
    session_events,
    tool_label,
    tool_path,
)
from memory_server.sessions.failures import commit_messages, normalise_error
from memory_server.sessions.reader import (
    Message,
    ToolResult,
    ToolUse,
    Transcript,
    parse_transcript,
    request_text,
    transcript_id,
)
from memory_server.sessions.redact import redact_for_report
from memory_server.settings import Settings

log = logging.getLogger(__name__)

CACHE_DIR = "dream-record"
CACHE_VERSION = 1
MAX_TURN_CHARS = 100_000  # what the parser keeps of a record's text (sessions/bounds.py)
PERSON, AGENT, TOOL, FILE, CLAUDE_CODE = "person", "agent", "tool", "file", "claude-code"
OUTSIDE = "outside"
AUTO_MEMORY = "auto-memory"  # Claude Code's auto memory: notes the model wrote (dream/auto_memory.py)
SPEAKER_WORDS = {
    PERSON: "the person",
    AGENT: "the agent",
    TOOL: "a tool's output",
    FILE: "a file's content",
    CLAUDE_CODE: "Claude Code's own text",
    OUTSIDE: "an outside source (a web page, an issue or pull request, an API)",
    AUTO_MEMORY: "Claude Code's auto memory (written by the model)",
}
# Tools and commands that bring in text someone outside the session wrote: never evidence about the project.
OUTSIDE_TOOLS = frozenset({"webfetch", "websearch", "web_fetch", "web_search"})
OUTSIDE_COMMAND = re.compile(
    r"^\s*(?:curl|wget|http|lynx|gh\s+(?:issue|pr|api|release|search|gist|discussion)|glab\s+(?:issue|mr|api))\b"
)
EDIT_TOOLS = frozenset({"edit", "multiedit", "notebookedit"})
WRITE_TOOLS = frozenset({"write"})
READ_TOOLS = frozenset({"read", "notebookread"})
FIX_KINDS = ("edit", "write", "command")

_REJECTION = re.compile(r"^(?:Error: )?The user doesn't want to (?:proceed|take this action)")
_FEEDBACK = re.compile(r"(?s)the user said:\s*\n?(.*)$")
_ANSWER_TEXT = re.compile(r'"([^"]+)"="([^"]*)"')
_PLAN_APPROVED = re.compile(r"^User has approved your plan", re.I)
_PLAN_HANDOFF = re.compile(r"^\s*Implement the following plan:\s*", re.I)
# Claude Code's closing note on a plan it starts: where the planning transcript is (a path, not the plan).
_PLAN_FOOTER = re.compile(r"\s*If you need specific details from before exiting plan mode\b[^\n]*\Z", re.I)
APPROVED_PLAN = "approved this plan"  # the person's answer when they approved a whole plan
REMOVED_ONLY = "(text removed)"  # the text of an edit that only deletes
_DROPPED_BLOCKS = re.compile(
    r"(?is)<(system-reminder|user-prompt-submit-hook|ide_[a-z_]+|ide-[a-z-]+)\b[^>]*>.*?(?:</\1\s*>|\Z)"
)
_COMPACT_PREFIX = re.compile(
    r"^This session is being continued from a previous conversation.*?(?:conversation\.|below\.)\s*", re.DOTALL
)
# A person's message that only agrees or declines: it means what it answers.
_ANSWER_WORDS = re.compile(
    r"(?i)^\W*(?:yes|yeah|yep|yup|sure|ok(?:ay)?|alright|right|correct|exactly|agreed|fine|perfect|great|good|"
    r"lgtm|approved?|no|nope|nah|not now|go ahead|go for it|do it|do that|ship it|sounds good|please do|"
    r"let'?s do (?:it|that)|makes sense|that works|works for me|option \w+|\(?[a-d1-9]\)?)\b"
)
_FILLER = frozenset(
    "yes yeah yep yup sure ok okay alright right correct exactly agreed fine perfect great good lgtm approve "
    "approved no nope nah not now go ahead for it do that ship sounds please let's lets makes sense works "
    "me that this thanks thank you i we the a and then".split()
)


@dataclass(frozen=True)
class Turn:
    """One thing a session says at one reference: who said it, what kind of thing it is, and its text."""

    ref: str
    line: int
    date: str | None
    ts: float
    speaker: str
    kind: str
    text: str
    asked: str = ""  # for a person's answer: what it answers (the question, or the agent's text before it)
    asked_ref: str = ""
    closing: bool = False  # the agent's last text before the person spoke again, or the session ended
    tool: str = ""  # the tool of a call, command, edit or output ("Bash `go test ./...`")
    removed: str = ""  # for an edit: the text it replaced
    path: str = ""  # for an edit or a write: the file, relative to the session's working folder when inside it

    @property
    def who(self) -> str:
        return SPEAKER_WORDS.get(self.speaker, self.speaker)

    @property
    def bare_answer(self) -> bool:
        """A person's answer that carries no content of its own ("yes", "ok, go ahead")."""
        return self.speaker == PERSON and bool(self.asked) and is_bare_answer(self.text)


@dataclass(frozen=True)
class FailureRecord:
    """A failure (a failed command, a tool's error, an error the person pasted), with its fix window."""

    ref: str
    line: int
    date: str | None
    ts: float
    error: str
    normalised: str
    target: str
    result_line: int | None = None  # the line of the output that reports it
    fixed_line: int | None = None  # the next success of the same command (None: never fixed in the session)
    fix: tuple[Turn, ...] = ()

    def lines(self) -> set[int]:
        return {self.line} | ({self.result_line} if self.result_line else set())


@dataclass
class SessionRecord:
    path: str  # the compressed file (the unit a dream processes)
    source: str  # "transcript" or "compressed"
    ref_base: str  # "transcript:<stem>" or the compressed file's path
    date: str | None
    ts: float
    turns: list[Turn] = field(default_factory=list)
    failures: list[FailureRecord] = field(default_factory=list)
    kept: str = ""  # read from this kept copy (relative to the root): Claude Code's transcript is gone

    def at(self, line: int) -> list[Turn]:
        """Every turn this session has at one line."""
        return [t for t in self.turns if t.line == line]

    def failure_at(self, line: int) -> FailureRecord | None:
        return next((f for f in self.failures if line in f.lines()), None)


def is_bare_answer(text: str) -> bool:
    """Whether a message only agrees or declines ("Yes, do it.", "no", "ok go ahead"): at most two words of
    its own after the words of agreeing."""
    if not _ANSWER_WORDS.match(text) or len(text) > 80:
        return False
    words = re.findall(r"[a-z0-9']+", text.casefold())
    return sum(1 for w in words if w not in _FILLER) <= 2


def _clean(text: str) -> str:
    return redact_for_report(text).strip()[:MAX_TURN_CHARS]


def _date(value: dt.datetime | None) -> str | None:
    return value.date().isoformat() if value is not None else None


def _ts(value: dt.datetime | None) -> float:
    return value.timestamp() if value is not None else 0.0


def ask_of(text: str, limit: int = 700) -> str:
    """What an agent's text asks or proposes: its last paragraph (and the one before it when that is short),
    at most `limit` characters, kept whole at the end."""
    paras = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    if not paras:
        return ""
    tail = paras[-1]
    if len(paras) > 1 and len(paras[-2]) + len(tail) < limit // 2:
        tail = paras[-2] + "\n\n" + tail
    return tail if len(tail) <= limit else "… " + tail[-(limit - 2) :]


_QUOTED_LINES = re.compile(r"\A((?:[ \t]*>[^\n]*(?:\n|\Z))+)\s*(\S[\s\S]*)\Z")


def quoted_reply(text: str, agent_text: str) -> tuple[str, str]:
    """A message that opens by quoting the agent's words ("> moving them to Git LFS") and answers them below:
    (the quoted words, the person's own). The quoted words are what the answer answers, not the person's
    statement. ("", text) when it does not open with a quote of the agent's text."""
    m = _QUOTED_LINES.match(text)
    if not m or not agent_text:
        return "", text
    quoted = " ".join(line.strip().lstrip(">").strip() for line in m.group(1).splitlines()).strip()
    folded = " ".join(agent_text.casefold().split())
    if not quoted or " ".join(quoted.casefold().split()) not in folded:
        return "", text
    return quoted, m.group(2).strip()


class _TranscriptTurns:
    """Builds the turns of one transcript in order (main thread only: a subagent's records are its own)."""

    def __init__(self, t: Transcript) -> None:
        self.t = t
        self.base = f"transcript:{transcript_id(t.path)}"
        self.turns: list[Turn] = []
        self.calls: dict[str, ToolUse] = {}
        self.last_agent: Turn | None = None

    def turn(self, line: int, m: Message, speaker: str, kind: str, text: str, **extra: Any) -> Turn | None:
        text = _clean(text)
        if not text:
            return None
        t = Turn(f"{self.base}:{line}", line, _date(m.timestamp), _ts(m.timestamp), speaker, kind, text, **extra)
        self.turns.append(t)
        return t

    def read(self) -> list[Turn]:
        for m in self.t.messages:
            if m.is_sidechain:
                continue
            if m.role == "summary":
                if not m.leaf_uuid or m.leaf_uuid in self.t.uuids:  # a title of this session, not of another
                    self.turn(m.line, m, CLAUDE_CODE, "summary", m.text)
            elif m.role == "system":
                self.turn(m.line, m, CLAUDE_CODE, "canned", m.text)
            elif m.role == "assistant":
                self._assistant(m)
            elif m.role == "user":
                self._user(m)
        self._mark_closing()
        return self.turns

    def _assistant(self, m: Message) -> None:
        for line, text in m.text_lines or ([(m.line, m.text)] if m.text else []):
            made = self.turn(line, m, AGENT, "reply", text)
            self.last_agent = made or self.last_agent
        for use in m.tool_uses:
            self.calls[use.id] = use
            self._call(m, use)

    def _call(self, m: Message, use: ToolUse) -> None:
        tool, line = use.name.lower(), use.line or m.line
        label = tool_label(use, self.t.cwd)
        command = use.input.get("command")
        if tool in SHELL_TOOLS and isinstance(command, str):
            self.turn(line, m, AGENT, "command", command, tool=label)
            for message in commit_messages(command):
                if not failed(self.t.result_of(use)):
                    self.turn(line, m, AGENT, "commit", message, tool=label)
        elif tool in EDIT_TOOLS:
            listed = use.input.get("edits")
            edits: list[Any] = listed if isinstance(listed, list) else [use.input]
            news = [str(e["new_string"]) for e in edits if isinstance(e, dict) and isinstance(e.get("new_string"), str)]
            olds = [str(e["old_string"]) for e in edits if isinstance(e, dict) and isinstance(e.get("old_string"), str)]
            text = "\n".join(news).strip() or REMOVED_ONLY  # an edit that only deletes is an edit too
            removed = _clean("\n".join(olds))
            self.turn(line, m, AGENT, "edit", text, tool=label, removed=removed, path=tool_path(use, self.t.cwd))
        elif tool in WRITE_TOOLS and isinstance(use.input.get("content"), str):
            self.turn(line, m, AGENT, "write", use.input["content"], tool=label, path=tool_path(use, self.t.cwd))
        elif use.name == "ExitPlanMode" and isinstance(use.input.get("plan"), str):
            self.last_agent = self.turn(line, m, AGENT, "reply", use.input["plan"], tool=label) or self.last_agent
        elif use.input and use.name != "AskUserQuestion":
            self.turn(line, m, AGENT, "call", json.dumps(use.input, ensure_ascii=False, sort_keys=True), tool=label)

    def _user(self, m: Message) -> None:
        if m.is_compact_summary:
            self.turn(m.line, m, CLAUDE_CODE, "summary", _COMPACT_PREFIX.sub("", m.text))
            return
        for res in m.tool_results:
            self._result(m, res)
        if m.is_meta:
            self.turn(m.line, m, CLAUDE_CODE, "canned", m.text)
            return
        req = request_text(m)
        if req is None:
            if m.text.strip() and not m.tool_results:
                self.turn(m.line, m, CLAUDE_CODE, "canned", m.text)
            return
        if _PLAN_HANDOFF.match(req[0]):  # Claude Code starts the approved plan: the plan is the agent's
            plan = _PLAN_FOOTER.sub("", _PLAN_HANDOFF.sub("", req[0]))
            self.turn(m.line, m, AGENT, "plan", plan)
            self.turn(m.line, m, PERSON, "answer", APPROVED_PLAN, asked=plan, asked_ref=f"{self.base}:{m.line}")
            self.last_agent = None
            return
        dropped = "\n".join(x.group(0) for x in _DROPPED_BLOCKS.finditer(m.text))
        if dropped:
            self.turn(m.line, m, CLAUDE_CODE, "canned", dropped)
        quoted, own = quoted_reply(req[0], self.last_agent.text if self.last_agent is not None else "")
        asked = self.last_agent if self.last_agent is not None and _ANSWER_WORDS.match(own) else None
        kind = "answer" if asked is not None and is_bare_answer(own) else "request"
        self.turn(
            m.line,
            m,
            PERSON,
            kind,
            own,
            asked=(quoted or ask_of(asked.text)) if asked else "",
            asked_ref=asked.ref if asked else "",
        )
        self.last_agent = None

    def _result(self, m: Message, res: ToolResult) -> None:
        use = self.calls.get(res.tool_use_id)
        text = res.text.strip()
        if _REJECTION.match(text):
            self._rejection(m, use, text)
            return
        if use is not None and use.name == "AskUserQuestion":
            self._answers(m, use, res)
            return
        if use is not None and use.name == "ExitPlanMode" and _PLAN_APPROVED.match(text):
            self.turn(m.line, m, CLAUDE_CODE, "canned", text)
            plan = use.input.get("plan")
            self.turn(
                m.line, m, PERSON, "answer", APPROVED_PLAN, asked=plan if isinstance(plan, str) else "",
                asked_ref=f"{self.base}:{use.line}",
            )  # fmt: skip
            return
        label = tool_label(use, self.t.cwd) if use is not None else ""
        if use is not None and use.name.lower() in READ_TOOLS:
            self.turn(m.line, m, FILE, "file", text, tool=label)
        elif use is not None and _outside(use):
            self.turn(m.line, m, OUTSIDE, "output", text, tool=label)
        else:
            self.turn(m.line, m, TOOL, "error" if res.is_error else "output", text, tool=label)

    def _rejection(self, m: Message, use: ToolUse | None, text: str) -> None:
        """A rejected tool call: Claude Code's notice, and the person's feedback when they gave any. When they
        chose to discuss an AskUserQuestion instead, Claude Code writes the feedback itself ("The user wants to
        clarify these questions ... Answer: X"): only their notes in it are theirs."""
        said = _FEEDBACK.search(text)
        feedback = said.group(1).strip() if said else ""
        label = tool_label(use, self.t.cwd) if use else ""
        if clarifying(feedback):
            self.turn(m.line, m, CLAUDE_CODE, "canned", text)
            notes = clarify_notes(feedback)
        else:
            self.turn(m.line, m, CLAUDE_CODE, "canned", text[: said.start(1)] if said else text)
            notes = [feedback] if feedback else []
        for note in notes:
            self.turn(m.line, m, PERSON, "correction", note, tool=label)
        if notes:
            self.last_agent = None
        if use is not None:  # the call never ran: its edit or command is not something that happened
            self.turns = [
                dataclasses.replace(t, kind="rejected") if t.line == use.line and t.speaker == AGENT and t.tool == label
                and t.kind in ("edit", "write", "command", "commit", "call") else t
                for t in self.turns
            ]  # fmt: skip

    def _answers(self, m: Message, use: ToolUse, res: ToolResult) -> None:
        questions = [q.get("question") for q in use.input.get("questions") or [] if isinstance(q, dict)]
        answers: dict[str, str] = {}
        if isinstance(res.data, dict) and isinstance(res.data.get("answers"), dict):
            answers = {str(k): str(v) for k, v in res.data["answers"].items()}
        else:
            answers = dict(_ANSWER_TEXT.findall(res.text))
        self.turn(m.line, m, CLAUDE_CODE, "canned", res.text)
        for q in questions:
            if isinstance(q, str) and answers.get(q, "").strip():
                self.turn(m.line, m, PERSON, "answer", answers[q], asked=q, asked_ref=f"{self.base}:{use.line}")
        self.last_agent = None

    def _mark_closing(self) -> None:
        """The agent's last text before each of the person's turns, and at the end of the session."""
        last: int | None = None
        for i, turn in enumerate(self.turns):
            if turn.speaker == AGENT and turn.kind == "reply":
                last = i
            elif turn.speaker == PERSON and last is not None:
                self.turns[last] = dataclasses.replace(self.turns[last], closing=True)
                last = None
        if last is not None:
            self.turns[last] = dataclasses.replace(self.turns[last], closing=True)


def _outside(use: ToolUse) -> bool:
    command = use.input.get("command")
    if use.name.lower() in OUTSIDE_TOOLS or use.name.startswith("mcp__"):
        return use.name.lower() in OUTSIDE_TOOLS or "fetch" in use.name.lower() or "search" in use.name.lower()
    return use.name.lower() in SHELL_TOOLS and isinstance(command, str) and bool(OUTSIDE_COMMAND.match(command))


def _failure(base: str, f: Failure, date: str | None, turns: list[Turn]) -> FailureRecord:
    error = _clean(f.error)
    fix_lines = {s.line for s in f.fix}
    fix = tuple(t for t in turns if t.line in fix_lines and t.speaker == AGENT and t.kind in FIX_KINDS)
    stamp = f.timestamp
    return FailureRecord(
        f"{base}:{f.result_line or f.line}",  # cited where the error shows (the output), not the call
        f.line,
        _date(stamp) or date,
        _ts(stamp),
        error,
        normalise_error(error),
        _clean(f.target),
        f.result_line,
        f.fixed_line,
        fix,
    )


def from_transcript(rel: str, transcript: Path) -> SessionRecord:
    """The record of a session read from its transcript."""
    t = parse_transcript(transcript)
    turns = _TranscriptTurns(t).read()
    base = f"transcript:{transcript_id(transcript)}"
    out = SessionRecord(rel, "transcript", base, _date(t.started), _ts(t.started), turns)
    out.failures = [_failure(out.ref_base, f, out.date, turns) for f in session_events(t).failures]
    # The failure as the program reads it (its informative error line), citable at the failed call's line.
    out.turns += [  # the failure as the program reads it (its error line), citable at the call too
        Turn(f"{out.ref_base}:{f.line}", f.line, f.date, f.ts, TOOL, "failure", f.error, tool=f.target)
        for f in out.failures
        if not any(t.speaker == PERSON for t in out.at(f.line))
    ]
    out.turns.sort(key=lambda t: t.line)
    return out


# -- from a compressed file (the transcript is gone) ----------------------------------------------------

LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?(.*\S)\s*$")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
LABEL = re.compile(r"^(User|Assistant|Claude Code)(?: ([a-z]+))?: ")
TRAILING_LINE = re.compile(r"\s*\((?:[^()]*?, )?(?:last reply, )?line \d+(?:[^()]*)\)\s*$")
FIX_SPLIT = re.compile(r"\s+(?:—|->|→)\s+(?:passed at line \d+(?: after:)?|fixed(?: by| with|:)?)\s*", re.I)
SECTION_SPEAKERS = {
    "goal": (PERSON, "request"),
    "what the user said": (PERSON, "request"),
    "requests": (PERSON, "request"),
    "corrections": (PERSON, "correction"),
    "questions and answers": (PERSON, "answer"),
    "questions": (PERSON, "answer"),
    "answers": (PERSON, "answer"),
    "decisions": (PERSON, "request"),
    "commits": (AGENT, "commit"),
    "claude code's own summary": (CLAUDE_CODE, "summary"),
    "open at the end": (AGENT, "reply"),
}
LABEL_SPEAKERS = {
    ("User", ""): (PERSON, "request"),
    ("User", "answered"): (PERSON, "answer"),
    ("User", "agreed"): (PERSON, "answer"),
    ("User", "declined"): (PERSON, "answer"),
    ("User", "pasted"): (PERSON, "request"),
    ("Assistant", "asked"): (AGENT, "reply"),
    ("Assistant", ""): (AGENT, "reply"),
    ("Claude Code", ""): (CLAUDE_CODE, "summary"),
}


def _compressed_turn(section: str, body: str) -> tuple[str, str, str] | None:
    """(speaker, kind, text) of one line of a compressed file's body, or None when it is no one's words."""
    label = LABEL.match(body)
    if label:
        speaker, kind = LABEL_SPEAKERS.get((label.group(1), label.group(2) or ""), (AGENT, "reply"))
        return speaker, kind, TRAILING_LINE.sub("", body[label.end() :])
    if section in ("files", "commands", "actions in other tools") or section.startswith("errors"):
        return None
    speaker, kind = SECTION_SPEAKERS.get(section, (AGENT, "reply"))
    return speaker, kind, TRAILING_LINE.sub("", body)


def from_compressed(rel: str, text: str) -> SessionRecord:
    """The record of a session whose transcript is gone: the labelled lines of its compressed file."""
    lines = text.splitlines()
    meta, body_start, _ = split_front_matter(lines)
    date = iso_date(meta.get("started")) or iso_date(rel.rsplit("/", 1)[-1])
    ts = float(dt.datetime.fromisoformat(date).replace(tzinfo=dt.UTC).timestamp()) if date else 0.0
    out = SessionRecord(rel, "compressed", rel, date, ts)
    section = ""
    asked: Turn | None = None
    for n in range(body_start, len(lines)):
        h = HEADING.match(lines[n])
        if h:
            section = h.group(2).strip().casefold()
            continue
        m = LIST_ITEM.match(lines[n])
        body = _clean(m.group(1) if m else lines[n].strip())
        if not body:
            continue
        ref = f"{rel}:{n + 1}"
        if section.startswith("errors"):
            failure = _compressed_failure(ref, n + 1, date, ts, body)
            out.failures.append(failure)
            out.turns += [Turn(ref, n + 1, date, ts, TOOL, "failure", failure.error), *failure.fix]
            continue
        found = _compressed_turn(section, body)
        if found is None:
            continue
        speaker, kind, said = found
        turn = Turn(ref, n + 1, date, ts, speaker, kind, said)
        if speaker == PERSON and kind == "answer" and asked is not None:
            turn = dataclasses.replace(turn, asked=asked.text, asked_ref=asked.ref)
        asked = turn if speaker == AGENT else None
        out.turns.append(turn)
    return out


def _compressed_failure(ref: str, line: int, date: str | None, ts: float, body: str) -> FailureRecord:
    body = re.sub(r"^(?:[^:`]{0,40}`[^`]*`[^:`]{0,20}|User pasted): ", "", body, count=1)  # "Bash `x`: error"
    parts = FIX_SPLIT.split(body, maxsplit=1)
    error = TRAILING_LINE.sub("", parts[0]).strip()
    fix = TRAILING_LINE.sub("", parts[1]).strip() if len(parts) > 1 else ""
    steps = (Turn(ref, line, date, ts, AGENT, "edit", fix),) if fix else ()
    return FailureRecord(ref, line, date, ts, error, normalise_error(error), "", None, line if fix else None, steps)


# -- loading, with a cache ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _reader_code() -> str:
    """A hash of the code that reads transcripts (sessions/ and this module): an upgrade misses the cache."""
    import memory_server.sessions as sessions

    digest = hashlib.sha256(Path(__file__).read_bytes())
    for path in sorted(Path(str(sessions.__file__)).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\x00" + path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_path(root: MemoryRoot, transcript: Path) -> tuple[Path, str]:
    st = transcript.stat()
    key = f"{CACHE_VERSION}\x00{_reader_code()}\x00{transcript}\x00{st.st_size}\x00{st.st_mtime_ns}"
    name = hashlib.sha256(str(transcript).encode()).hexdigest()[:24] + ".json"
    return root.path / ".memory" / CACHE_DIR / name, hashlib.sha256(key.encode()).hexdigest()


def _from_json(data: dict[str, Any]) -> SessionRecord:
    turns = [Turn(**t) for t in data["turns"]]
    failures = [FailureRecord(**{**f, "fix": tuple(Turn(**s) for s in f["fix"])}) for f in data["failures"]]
    return SessionRecord(
        data["path"], data["source"], data["ref_base"], data["date"], data["ts"], turns, failures, data.get("kept", "")
    )


def _save_cache(cache: Path, key: str, record: SessionRecord) -> None:
    from memory_server.files.writing import atomic_write

    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(cache, json.dumps({"key": key, "record": dataclasses.asdict(record)}, ensure_ascii=False))
    except OSError as exc:
        log.warning("dream: could not cache the record of %s: %s", record.path, exc)


def named_transcript(root: MemoryRoot, rel: str) -> str | None:
    """The transcript path a compressed session's front matter names, as written (it may be gone)."""
    named = read_front_matter(root.path / rel).get("transcript")
    return named.strip() if isinstance(named, str) and named.strip() else None


def transcript_of(root: MemoryRoot, rel: str, settings: Settings) -> Path | None:
    """The transcript a compressed session names, when it can still be read (inside an allowed folder), else
    its kept copy in the root; None when neither is there."""
    from memory_server.sessions.kept import confine_kept, find_kept
    from memory_server.sessions.transcript_layer import confine

    named = named_transcript(root, rel)
    if named is None:
        return None
    try:
        path = confine(Path(named), settings)
        if path.is_file():
            return path
    except (MemoryServerError, OSError) as exc:
        log.info("dream: the transcript of %s cannot be read (%s); looking for its kept copy", rel, exc)
    kept = find_kept(root, transcript_id(Path(named)))
    if kept is None:
        return None
    try:
        return confine_kept(root, kept)
    except MemoryServerError as exc:
        log.info("dream: reading %s from its compressed file (%s)", rel, exc)
        return None


def load_record(root: MemoryRoot, rel: str, settings: Settings) -> SessionRecord:
    """The record of one compressed session: from its transcript (or the kept copy of it) when it can be read,
    else from the file."""
    from memory_server.sessions.kept import is_kept_copy

    transcript = transcript_of(root, rel, settings)
    if transcript is not None:
        kept = root.relpath(transcript) if is_kept_copy(transcript) else ""
        try:
            cache, key = _cache_path(root, transcript)
            try:
                cached = json.loads(cache.read_text(encoding="utf-8"))
                if cached.get("key") == key:
                    return dataclasses.replace(_from_json(cached["record"]), path=rel, kept=kept)
            except (OSError, ValueError, KeyError, TypeError):
                pass
            record = dataclasses.replace(from_transcript(rel, transcript), kept=kept)
            _save_cache(cache, key, record)
            return record
        except (MemoryServerError, OSError) as exc:
            log.info("dream: reading %s from its compressed file (%s)", rel, exc)
    text = root.read_text(rel, max_bytes=settings.index.max_file_bytes).text
    return from_compressed(rel, text)


def iter_records(root: MemoryRoot, paths: list[str], settings: Settings) -> Iterator[tuple[str, SessionRecord | None]]:
    """(path, its record) for each of `paths` in order, read one at a time; None for a path with nothing new:
    unreadable, or a later part of a transcript already read."""
    seen: set[str] = set()
    for rel in paths:
        try:
            record = load_record(root, rel, settings)
        except (MemoryServerError, OSError) as exc:
            log.warning("dream: %s cannot be read (%s); left out", rel, exc)
            yield rel, None
            continue
        if record.ref_base in seen:
            yield rel, None
            continue
        seen.add(record.ref_base)
        yield rel, record


def load_records(root: MemoryRoot, paths: list[str], settings: Settings) -> list[SessionRecord]:
    """Records of `paths`, oldest first; one transcript named by several parts is read once."""
    out = [r for _rel, r in iter_records(root, paths, settings) if r is not None]
    return sorted(out, key=lambda r: (r.ts, r.path))

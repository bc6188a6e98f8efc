"""What happened in a session, as data: the events a summary or a /dream evidence pack is built from.

    from memory_server.sessions.events import read_session_events, session_events
    ev = read_session_events("~/.claude/projects/p/<id>.jsonl")     # or session_events(parsed_transcript)
    for item in ev.all():                                           # every event, in transcript order
        print(item.line, item.timestamp, item.speaker, item.kind, item.text)

Every event has `line` (1-based JSONL line of the record it comes from, citable as `transcript:<id>:LINE`),
`timestamp` (aware UTC datetime or None), `speaker` ("user", "assistant", "tool" for command output,
"claude-code" for Claude Code's own records), `kind` and `text` (one string summarising the event). Every
text is redacted (`<private>` dropped, secrets replaced) and not trimmed beyond `MAX_TEXT` characters;
callers bound what they show. Subagent (sidechain) records are left out: the main thread shows their work.

`SessionEvents` fields (the types live in `sessions/event_types.py`), each a tuple in transcript order:

- `user_messages` (`UserMessage`): what the person typed. IDE context (`<ide_opened_file>`,
  `<ide_selection>`, …), system reminders and slash-command expansions are stripped; a slash command is
  kept as its name and arguments (`command` = "/review"). Local commands (/clear, /exit), interruption
  markers, tool results and compaction summaries are not user messages.
- `corrections` (`Correction`): the text the person gave when rejecting a tool call (`rejected` names the
  call, e.g. "Bash `go test ./...`"). A rejection without text is no event.
- `questions` (`QuestionAnswer`): an AskUserQuestion question (`question`, asked at `question_line`) and
  the person's `answer` (at `line`; "" when unanswered).
- `commits` (`Commit`): the message of each `git commit -m …` (heredocs included), `succeeded` False when
  the command failed.
- `summaries` (`CompactionSummary`): Claude Code's own summary of the conversation: `source` "compaction"
  (an `isCompactSummary` record after /compact or auto-compaction) or "summary-line" (a `summary` record,
  usually a short title). Routing only: it is an LLM's prose, not the person's words.
- `closing_replies` (`ClosingReply`): the assistant's last text before each next user message, and its
  last text of the session (`final` True).
- `failures` (`Failure`): a failed shell command (speaker "tool") or an error the person pasted (speaker
  "user"). `error` is the informative line (see `failures.error_line`), `target` what failed ("Bash `go
  test ./...`"), `key` what a retry shares with it ("go test"). `fix` holds the edits and state-changing
  commands (`FixStep`) between the failure and `fixed_line`, the next success of the same command; with
  no later success `fixed_line` is None and `fix` is empty. Claude Code's own tool errors (file not read
  yet, tool rejected, interrupted, …) are never failures; the person's comment on one is a correction.

The shape is stable: fields may be added, none renamed or removed.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_server.parse.text import code_span, one_line, relative_path
from memory_server.sessions.event_types import (
    ClosingReply,
    Commit,
    CompactionSummary,
    Correction,
    Failure,
    FixStep,
    QuestionAnswer,
    SessionEvents,
    UserMessage,
)
from memory_server.sessions.failures import (
    changes_things,
    command_key,
    commit_messages,
    error_line,
    exit_code_failed,
    harness_error,
    hidden_failure,
    looks_like_error,
)
from memory_server.sessions.reader import Message, ToolResult, ToolUse, Transcript, parse_transcript, request_text
from memory_server.sessions.redact import clean

MAX_TEXT = 20_000  # one event's text at most (a pasted log can be huge)
SHELL_TOOLS = frozenset({"bash", "shell", "powershell"})
EDIT_TOOLS = frozenset({"write", "edit", "multiedit", "notebookedit"})
# Tools whose errors are the agent's own slips (a path that does not exist), not the project failing.
_QUIET_TOOLS = frozenset(
    {"read", "glob", "grep", "ls", "todowrite", "task", "agent", "exitplanmode", "askuserquestion"}
)
_REJECTION = re.compile(r"^(?:Error: )?The user doesn't want to (?:proceed|take this action)")
_FEEDBACK = re.compile(r"(?s)the user said:\s*\n?(.*)$")
_COMPACT_PREFIX = re.compile(
    r"^This session is being continued from a previous conversation.*?(?:conversation\.|below\.)\s*", re.DOTALL
)
_NO_RESPONSE = "No response requested."
# Claude Code's own text when the person chose to discuss an AskUserQuestion instead of answering it: not
# their words, but it carries their notes ("User notes: ...") and a tentative pick ("Answer: ...").
_CLARIFY = re.compile(r"^\s*The user wants to clarify these questions", re.I)
_USER_NOTES = re.compile(r"(?m)^\s*User notes:\s*(.+?)\s*$")


def clarifying(feedback: str) -> bool:
    """Whether rejection feedback is Claude Code's canned "the user wants to clarify these questions" text."""
    return bool(_CLARIFY.match(feedback))


def clarify_notes(feedback: str) -> list[str]:
    """The person's own notes inside that canned text."""
    return [
        n for n in _USER_NOTES.findall(feedback) if n.strip()
    ]  # what Claude Code writes after a local command such as /exit


_ANSWER_TEXT = re.compile(r'"([^"]+)"="([^"]*)"')


def _safe(text: str) -> str:
    """Redacted (private text dropped, secrets replaced), then bounded."""
    return clean(text).strip()[:MAX_TEXT]


def read_session_events(path: str | Path) -> SessionEvents:
    """The events of a transcript file (raises TranscriptError only when it cannot be read)."""
    return session_events(parse_transcript(Path(path).expanduser()))


def session_events(t: Transcript) -> SessionEvents:
    """The events of a parsed transcript (or of the slice of it the Transcript covers)."""
    b = _Builder(t)
    b.read()
    return SessionEvents(
        t.session_id,
        t.path,
        t.cwd,
        t.started,
        t.ended,
        tuple(b.users),
        tuple(b.corrections),
        tuple(b.questions),
        tuple(b.commits),
        tuple(b.summaries),
        tuple(b.replies),
        tuple(b.failures),
    )


def tool_label(use: ToolUse, cwd: str | None, width: int = 60) -> str:
    """A tool call as a person would name it: "Bash `go test ./...`", "Edit `cmd/x.go`"."""
    command = use.input.get("command")
    if use.name.lower() in SHELL_TOOLS and isinstance(command, str):
        return f"{use.name} {code_span(one_line(clean(command), width))}"
    path = tool_path(use, cwd)
    return f"{use.name} {code_span(path)}" if path else use.name


def tool_path(use: ToolUse, cwd: str | None) -> str:
    """The file a tool call names, relative to the session's working folder when inside it ("" for none)."""
    path = _path_of(use)
    return relative_path(clean(path), cwd) if path else ""


def _path_of(use: ToolUse) -> str | None:
    return next(
        (use.input[k] for k in ("file_path", "notebook_path", "path") if isinstance(use.input.get(k), str)), None
    )


def _hides_failure(command: str, res: ToolResult) -> bool:
    return bool(hidden_failure(command, clean(res.text)))


def failed(res: ToolResult | None) -> bool:
    """Whether a shell command's result reports failure (a rejected call never ran: not failed)."""
    if res is None or _REJECTION.match(res.text.strip()):
        return False
    if res.is_error or exit_code_failed(res.text):
        return True
    data: dict[str, Any] = res.data if isinstance(res.data, dict) else {}
    code = next((data[k] for k in ("exitCode", "exit_code", "returnCode") if isinstance(data.get(k), int)), 0)
    return bool(code)


@dataclass
class _Builder:
    t: Transcript
    users: list[UserMessage] = field(default_factory=list)
    corrections: list[Correction] = field(default_factory=list)
    questions: list[QuestionAnswer] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    summaries: list[CompactionSummary] = field(default_factory=list)
    replies: list[ClosingReply] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    calls: dict[str, ToolUse] = field(default_factory=dict)
    answered_in: dict[str, Message] = field(default_factory=dict)
    # While reading: the tool calls in order, the assistant's last reply not yet answered, and whether a
    # prompt slash command was just typed (its expansion follows, and is not the person's words).
    _uses: list[tuple[Message, ToolUse, ToolResult | None]] = field(default_factory=list)
    _last_reply: Message | None = None
    _expansion_due: bool = False

    def read(self) -> None:
        for m in self.t.messages:
            if m.is_sidechain:
                continue
            for use in m.tool_uses:
                self.calls[use.id] = use
            for res in m.tool_results:
                self.answered_in.setdefault(res.tool_use_id, m)
            if m.role == "summary" or (m.role == "user" and m.is_compact_summary):
                self._summary(m)
            elif m.role == "assistant":
                self._assistant(m)
            elif m.role == "user":
                self._user(m)
        self._close_replies()
        self._tools(self._uses)
        self.failures.sort(key=lambda f: f.line)

    def _summary(self, m: Message) -> None:
        text = _COMPACT_PREFIX.sub("", m.text) if m.role == "user" else m.text
        source = "compaction" if m.role == "user" else "summary-line"
        if text.strip():
            self.summaries.append(CompactionSummary(m.line, m.timestamp, _safe(text), source))

    def _assistant(self, m: Message) -> None:
        self._expansion_due = False
        self._uses.extend((m, u, self.t.result_of(u)) for u in m.tool_uses)
        if m.text.strip() and m.text.strip() != _NO_RESPONSE:
            self._last_reply = m

    def _user(self, m: Message) -> None:
        self._rejections(m)
        if m.is_meta and self._expansion_due:
            self._expansion_due = False
            return
        req = request_text(m)
        if req is None:
            return
        if self._expansion_due and "<command-name>" not in m.text:
            self._expansion_due = False  # a skill's body written as a plain message right after its command
            return
        text = req[0]
        command = text.split()[0] if "<command-name>" in m.text else None
        self._expansion_due = command is not None
        if self._last_reply is not None:
            self.replies.append(_closing(self._last_reply))
            self._last_reply = None
        self.users.append(UserMessage(m.line, m.timestamp, _safe(text), command))
        pasted = looks_like_error(clean(text))
        if pasted:
            self.failures.append(Failure(m.line, m.timestamp, pasted, "pasted by the user", "", speaker="user"))

    def _close_replies(self) -> None:
        """The reply that ended the session is its closing reply."""
        if self._last_reply is not None:
            self.replies.append(_closing(self._last_reply, final=True))
        elif self.replies:
            last = self.replies[-1]
            self.replies[-1] = ClosingReply(last.line, last.timestamp, last.text, True)

    def _rejections(self, m: Message) -> None:
        for res in m.tool_results:
            if not _REJECTION.match(res.text.strip()):
                continue
            said = _FEEDBACK.search(res.text)
            feedback = said.group(1).strip() if said else ""
            if clarifying(feedback):
                feedback = " ".join(clarify_notes(feedback))
            use = self.calls.get(res.tool_use_id)
            if feedback:
                label = tool_label(use, self.t.cwd) if use is not None else ""
                self.corrections.append(Correction(m.line, m.timestamp, _safe(feedback), label))

    def _tools(self, uses: list[tuple[Message, ToolUse, ToolResult | None]]) -> None:
        for i, (m, use, res) in enumerate(uses):
            tool = use.name.lower()
            stamp = self._answer_time(res) or m.timestamp
            if use.name == "AskUserQuestion":
                self._question(m, use, res)
                continue
            command = use.input.get("command")
            if tool in SHELL_TOOLS and isinstance(command, str):
                for message in commit_messages(command):
                    self.commits.append(Commit(m.line, stamp, _safe(message), not failed(res)))
                if failed(res) and res is not None and not harness_error(res.text):
                    error = error_line(clean(res.text)) or "failed"
                    if error.startswith("exit code") and not changes_things(command):
                        continue  # a look-around (`ls`, `grep`) that found nothing: no failure of the project
                    self._failure(i, uses, error, command_key(command))
                elif res is not None and (hidden := hidden_failure(command, clean(res.text))):
                    self._failure(i, uses, hidden, command_key(command))
            elif res is not None and res.is_error and tool not in _QUIET_TOOLS and tool not in EDIT_TOOLS:
                if not harness_error(res.text):
                    self._failure(i, uses, error_line(clean(res.text)) or "failed", f"tool {use.name}")

    def _failure(self, i: int, uses: list[tuple[Message, ToolUse, ToolResult | None]], error: str, key: str) -> None:
        m, use, res = uses[i]
        steps: list[FixStep] = []
        fixed: int | None = None
        for later_m, later, later_res in uses[i + 1 :]:
            tool = later.name.lower()
            command = later.input.get("command")
            if isinstance(command, str) and tool in SHELL_TOOLS:
                same = command_key(command) == key
                if same and later_res is not None and not failed(later_res) and not _hides_failure(command, later_res):
                    fixed = later.line or later_m.line
                    break
                if not same and changes_things(command) and not failed(later_res):
                    steps.append(
                        FixStep(
                            later.line or later_m.line,
                            later_m.timestamp,
                            "command",
                            code_span(one_line(clean(command), 120)),
                        )
                    )
            elif (
                key.startswith("tool ") and later.name == use.name and later_res is not None and not later_res.is_error
            ):
                fixed = later.line or later_m.line
                break
            elif tool in EDIT_TOOLS and later_res is not None and not later_res.is_error:
                steps.append(
                    FixStep(later.line or later_m.line, later_m.timestamp, "edit", _edit_text(later, self.t.cwd))
                )
        self.failures.append(
            Failure(
                use.line or m.line,
                self._answer_time(res) or m.timestamp,
                error[:MAX_TEXT],
                tool_label(use, self.t.cwd),
                key,
                tuple(steps) if fixed is not None else (),
                fixed,
                result_line=self._answer_line(res),
            )
        )

    def _answer_line(self, res: ToolResult | None) -> int | None:
        m = self.answered_in.get(res.tool_use_id) if res is not None else None
        return m.line if m else None

    def _answer_time(self, res: ToolResult | None) -> dt.datetime | None:
        m = self.answered_in.get(res.tool_use_id) if res is not None else None
        return m.timestamp if m else None

    def _question(self, m: Message, use: ToolUse, res: ToolResult | None) -> None:
        questions = use.input.get("questions")
        if not isinstance(questions, list):
            return
        answers: dict[str, str] = {}
        if res is not None and isinstance(res.data, dict) and isinstance(res.data.get("answers"), dict):
            answers = {str(k): str(v) for k, v in res.data["answers"].items()}
        elif res is not None:
            answers = dict(_ANSWER_TEXT.findall(res.text))
            said = _FEEDBACK.search(res.text) if _REJECTION.match(res.text.strip()) else None
            if said and said.group(1).strip() and not clarifying(said.group(1)):
                answers = {"*": said.group(1).strip()}
        line = self._answer_line(res) or m.line
        for q in questions:
            text = q.get("question") if isinstance(q, dict) else None
            if isinstance(text, str) and text.strip():
                answer = answers.get(text, answers.get("*", ""))
                self.questions.append(
                    QuestionAnswer(line, self._answer_time(res) or m.timestamp, _safe(text), _safe(answer), m.line)
                )


def _closing(m: Message, final: bool = False) -> ClosingReply:
    """The agent's reply, cited at the line its text is on (a merged message starts earlier, with its thinking)."""
    line = m.text_lines[-1][0] if m.text_lines else m.line
    return ClosingReply(line, m.timestamp, _safe(m.text), final)


def _edit_text(use: ToolUse, cwd: str | None) -> str:
    """What an edit changed, in one line: the file and its first changed line before and after."""
    path = code_span(relative_path(clean(_path_of(use) or "?"), cwd))
    listed = use.input.get("edits")
    edits: list[Any] = listed if isinstance(listed, list) else [use.input]
    for edit in edits:
        if not isinstance(edit, dict):
            continue
        old, new = edit.get("old_string"), edit.get("new_string")
        if isinstance(old, str) and isinstance(new, str):
            before, after = _first_change(old, new)
            return f"{path}: {code_span(one_line(clean(before), 60)) if before else '(nothing)'} -> " + (
                code_span(one_line(clean(after), 60)) if after else "(removed)"
            )
    return f"wrote {path}"


def _first_change(old: str, new: str) -> tuple[str, str]:
    a = [ln.strip() for ln in old.splitlines() if ln.strip()]
    b = [ln.strip() for ln in new.splitlines() if ln.strip()]
    for x, y in zip(a, b, strict=False):
        if x != y:
            return x, y
    if len(b) > len(a):
        return "", b[len(a)]
    if len(a) > len(b):
        return a[len(b)], ""
    return (a[0] if a else "", b[0] if b else "")

"""What a compressed session file says, read from a transcript: the `Digest`, deterministically.

Built on `events.py` (what the person said, corrections, answers, commits, Claude Code's own summaries,
failures and their fixes) plus the files written and the commands run. Thinking and tool output stay out;
every text is redacted before it is trimmed. `render.py` turns a Digest into Markdown.

Decisions are only statements of what will be done or is now the rule, made by the person or agreed by
the person: a user sentence such as "let's use X", "from now on …", "don't …" (not a question, a "what
if", a "maybe", a "considered … but"); or the assistant's proposal the person then accepted ("Want me to
X?" -> "yes"), or declined ("no, don't"). Each decision records who said it. Open items are only the
unfinished entries of the last todo list and of the task list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from memory_server.parse.text import CODE_FENCE, SENTENCE_END, one_line, relative_path
from memory_server.sessions.actions import mcp_actions
from memory_server.sessions.event_types import Failure, SessionEvents, UserMessage
from memory_server.sessions.events import SHELL_TOOLS, failed, session_events
from memory_server.sessions.failures import changes_things, harness_error
from memory_server.sessions.reader import Message, ToolResult, ToolUse, Transcript
from memory_server.sessions.redact import clean

COMMAND_CHARS, DECISION_CHARS, TODO_CHARS = 110, 250, 120
FILE_TOOLS = {"write": "written", "edit": "edited", "multiedit": "edited", "notebookedit": "edited"}

# A user sentence that settles something: a plan, a rule, a choice.
_RULE = re.compile(
    r"(?i)^(?:(?:no|ok|okay|yes|yeah|yep|right|fine|alright|actually|so|and|but|please)[,.!]?\s+)*"
    r"(?:let'?s\b|lets\b|we(?:'ll| will| are going to|'re going to| should| must)\b|from now on\b"
    r"|going forward\b|always\b|never\b|don'?t\b|do not\b|stop\b|use\b|switch\b|go with\b|stick with\b|stay on\b"
    r"|keep\b|make sure\b|i(?:'ve| have)? decided\b|the rule is\b|prefer\b|instead\b)"
)
_RULE_ANYWHERE = re.compile(r"(?i)\b(?:from now on|going forward|decided to|we'll use|we will use|the rule is)\b")
# Not settled: questions, hypotheses, options weighed and dropped, a look around.
_UNSETTLED = re.compile(
    r"(?i)(?:\?\s*$|\bwhat if\b|\bwhat about\b|\bmaybe\b|\bperhaps\b|\bmight\b|\bcould we\b|\bshould we\b"
    r"|\bwould it\b|\bi wonder\b|\bnot sure\b|\bconsidered\b|\bthought about\b|\bif we\b|^if\b|\bwhether\b"
    r"|\bi think\b|\bi guess\b|\bsuppose\b"
    r"|\blet'?s (?:see|try|test|check|look|have a look|take a look|find out|figure|investigate|explore|debug"
    r"|think|dig|discuss|talk)\b)"
)
# What Claude Code writes when the person accepts a plan: the plan's own heading says what the session is for.
_PLAN_PREAMBLE = re.compile(r"^\s*Implement the following plan:\s*(#+\s*)?(?:Plan:\s*)?", re.IGNORECASE)
_AGREE = re.compile(
    r"(?i)^\s*(?:yes|yeah|yep|yup|sure|ok(?:ay)?|sounds good|lgtm|go ahead|do it|please do|perfect|great|agreed"
    r"|makes sense|let'?s do (?:it|that)|ship it|👍)\b"
)
_DECLINE = re.compile(r"(?i)^\s*(?:no|nope|nah|don'?t)\b")
_OFFER = re.compile(
    r"(?i)^(?:(?:do you )?want me to|should i|shall i|would you like me to|i can|i could|i'll|i will|i propose to"
    r"|i suggest (?:we )?|let me(?! know)|next,? i'll)\s+(.+?)[.?!]?$"
)


@dataclass
class ErrorItem:
    """An error shown in the file: what failed, its informative line, and what fixed it."""

    line: int
    target: str
    error: str
    speaker: str
    times: int = 1
    fix: list[str] = field(default_factory=list)
    fixed_line: int | None = None


class Decision(NamedTuple):
    """A decision: its transcript line, what was decided, and how the user made it: "stated" (their own
    words), "agreed" (to the assistant's proposal) or "declined" (the assistant's proposal)."""

    line: int
    statement: str
    how: str


@dataclass
class Digest:
    """Everything a compressed file says, taken from a transcript's lines first_line..line_count."""

    t: Transcript
    events: SessionEvents
    goal: str = ""
    goal_line: int | None = None  # the transcript line of the goal (it may precede a later part)
    requests: list[tuple[int, str]] = field(default_factory=list)
    files: dict[str, dict[str, int]] = field(default_factory=dict)
    commands: dict[str, list[int]] = field(default_factory=dict)  # shown text -> [runs, failures]
    errors: list[ErrorItem] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    todos: list[str] = field(default_factory=list)  # unfinished only
    actions: list[tuple[int, str]] = field(default_factory=list)  # line, what an MCP tool changed elsewhere
    last_reply: tuple[int, str] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    has_activity: bool = False

    @classmethod
    def of(cls, t: Transcript, full: Transcript) -> Digest:
        """Digest `t` (possibly a later slice); the goal comes from the whole transcript `full`."""
        d = cls(t, session_events(t))
        goal = _goal(full if full is not t else None, d.events)
        if goal is not None:
            d.goal, d.goal_line = _PLAN_PREAMBLE.sub(r"\1", goal.text).strip() or goal.text, goal.line
        d._read()
        return d

    def _read(self) -> None:
        t, ev = self.t, self.events
        self.requests = [(u.line, u.text) for u in ev.user_messages]
        uses: list[tuple[Message, ToolUse, ToolResult | None]] = []
        for m in t.messages:
            if m.role == "assistant":
                self.has_activity = self.has_activity or bool(m.text.strip() or m.tool_uses)
                uses.extend((m, u, t.result_of(u)) for u in m.tool_uses)
        self.has_activity = self.has_activity or bool(self.requests)
        finals = [r for r in ev.closing_replies if r.final]
        if finals:
            self.last_reply = (finals[-1].line, finals[-1].text)
        commands = bad_commands = 0
        for _m, use, res in uses:
            tool = use.name.lower()
            if tool in FILE_TOOLS:  # a subagent's writes change the project too
                self._file(use, res)
            elif tool in SHELL_TOOLS and isinstance(use.input.get("command"), str):
                bad = failed(res)
                commands += 1
                bad_commands += bad
                if changes_things(use.input["command"]):  # looking around (ls, cat, git status) is not work
                    runs = self.commands.setdefault(one_line(clean(use.input["command"]), COMMAND_CHARS), [0, 0])
                    runs[0] += 1
                    runs[1] += bad
        self._errors(ev.failures)
        self._decisions()
        self._todos(uses)
        self.actions = mcp_actions(uses)
        self.counts = {
            "messages": sum(1 for m in t.messages if m.role in ("user", "assistant")),
            "requests": len(self.requests),
            "tool_calls": len(uses),
            "commands": commands,
            "failed_commands": bad_commands,
            "errors": len(ev.failures),
            "corrections": len(ev.corrections),
            "commits": sum(1 for c in ev.commits if c.succeeded),
        }

    def _file(self, use: ToolUse, res: ToolResult | None) -> None:
        raw = next(
            (use.input[k] for k in ("file_path", "notebook_path", "path") if isinstance(use.input.get(k), str)), None
        )
        if not raw:
            return
        if res is not None and res.is_error and harness_error(res.text):
            return  # rejected, or refused by Claude Code (file not read yet): the file was never touched
        ops = self.files.setdefault(relative_path(clean(raw), self.t.cwd), {})
        if res is not None and res.is_error:
            ops["failed"] = ops.get("failed", 0) + 1
            return
        op = FILE_TOOLS[use.name.lower()]
        if op == "written" and res is not None and isinstance(res.data, dict):
            op = {"create": "created", "update": "rewritten"}.get(str(res.data.get("type")), op)
        ops[op] = ops.get(op, 0) + 1

    def _errors(self, failures: tuple[Failure, ...]) -> None:
        seen: dict[tuple[str, str], ErrorItem] = {}
        for f in failures:
            key = (f.key or f.target, f.error)
            item = seen.get(key)
            if item is not None:
                item.times += 1
                if not item.fix and f.fix:
                    item.fix, item.fixed_line = [s.text for s in f.fix], f.fixed_line
                continue
            item = ErrorItem(f.line, f.target, f.error, f.speaker, 1, [s.text for s in f.fix], f.fixed_line)
            seen[key] = item
            self.errors.append(item)

    def _decisions(self) -> None:
        ev = self.events
        replies = {r.line: r for r in ev.closing_replies}
        reply_before: dict[int, int] = {}
        last = 0
        for item in ev.all():
            if item.kind == "closing_reply":
                last = item.line
            elif item.kind == "user_message":
                reply_before[item.line] = last
        for u in ev.user_messages:
            if u.command:
                continue
            prior = replies.get(reply_before.get(u.line, 0))
            offer = _last_offer(prior.text) if prior is not None else ""
            first = _sentences(u.text)[:1]
            if offer and first and _AGREE.match(first[0]) and not _UNSETTLED.search(first[0]):
                self._decide(u.line, offer[0].upper() + offer[1:], "agreed")
            elif offer and first and _DECLINE.match(first[0]):
                said = one_line(u.text, DECISION_CHARS // 2)
                self._decide(u.line, f"{offer[0].upper() + offer[1:]} — “{said}”", "declined")
                continue
            for sentence in _sentences(u.text):
                if (_RULE.match(sentence) or _RULE_ANYWHERE.search(sentence)) and not _UNSETTLED.search(sentence):
                    self._decide(u.line, sentence, "stated")

    def _decide(self, line: int, statement: str, how: str) -> None:
        s = one_line(statement, DECISION_CHARS)
        if len(s) >= 12 and all(s != d.statement for d in self.decisions):
            self.decisions.append(Decision(line, s, how))

    def _todos(self, uses: list[tuple[Message, ToolUse, ToolResult | None]]) -> None:
        """The unfinished items of the last TodoWrite list and of the task list (TaskCreate / TaskUpdate)."""
        main = [(m, u, r) for m, u, r in uses if not m.is_sidechain]
        lists = [u for _, u, _ in uses if u.name == "TodoWrite" and isinstance(u.input.get("todos"), list)]
        lists = [u for _, u, _ in main if u in lists] or lists  # a subagent's list only when the session kept none
        items: list[tuple[str, str]] = []  # (what, status)
        for todo in lists[-1].input["todos"] if lists else []:
            if isinstance(todo, dict):
                what = next((todo[k] for k in ("content", "subject", "activeForm") if isinstance(todo.get(k), str)), "")
                items.append((what, str(todo.get("status") or "pending")))
        items.extend(_tasks(main).values())
        for what, status in items:
            if not what.strip() or status in _DONE:
                continue
            note = "" if status == "pending" else f" ({status.replace('_', ' ')})"
            self.todos.append(f"[ ] {one_line(clean(what), TODO_CHARS)}{note}")


_DONE = frozenset({"completed", "cancelled", "canceled", "deleted"})
_TASK_CREATED = re.compile(r"Task #(\w+) created")


def _tasks(uses: list[tuple[Message, ToolUse, ToolResult | None]]) -> dict[str, tuple[str, str]]:
    """Claude Code's task list as the session left it: task id -> (subject, status)."""
    tasks: dict[str, tuple[str, str]] = {}
    for _, use, res in uses:
        if use.name == "TaskCreate" and isinstance(use.input.get("subject"), str) and res is not None:
            task = res.data.get("task") if isinstance(res.data, dict) else None
            created = _TASK_CREATED.search(res.text)
            tid = str(task["id"]) if isinstance(task, dict) and "id" in task else created.group(1) if created else ""
            if tid:
                tasks[tid] = (use.input["subject"], "pending")
        elif use.name == "TaskUpdate" and str(use.input.get("taskId")) in tasks:
            tid = str(use.input["taskId"])
            subject, status = tasks[tid]
            subject = use.input["subject"] if isinstance(use.input.get("subject"), str) else subject
            status = use.input["status"] if isinstance(use.input.get("status"), str) else status
            tasks[tid] = (subject, status)
    return tasks


def _sentences(text: str) -> list[str]:
    """The sentences of a message outside code, list markers and emphasis removed."""
    out = []
    for raw in SENTENCE_END.split(CODE_FENCE.sub(" ", text)):
        s = re.sub(r"^\s*(?:[-*+>]|\d+[.)]|#+)\s*", "", raw).replace("**", "").strip()
        if s and not s.startswith("|"):
            out.append(s)
    return out


def _last_offer(reply: str) -> str:
    """What the assistant offered or proposed to do at the end of its reply ("set gc.auto 0"), if anything."""
    for sentence in reversed(_sentences(reply)[-3:]):
        m = _OFFER.match(sentence)
        if m and len(m.group(1)) >= 8:
            return m.group(1).strip()
    return ""


def _goal(full: Transcript | None, ev: SessionEvents) -> UserMessage | None:
    """The first thing the person asked with free text, else their first slash command; None when nothing."""
    users = session_events(full).user_messages if full is not None else ev.user_messages
    free = next((u for u in users if not u.command or u.text.strip() != u.command), None)
    return free or (users[0] if users else None)

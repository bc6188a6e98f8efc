"""What a compressed session file says, read from a transcript: the `Digest`, deterministically.

The goal (the first real request), the requests, the files written or edited, the shell commands and how
often they failed, the errors and what fixed them, decisions stated in requests and replies, the last todo
list and the last reply. Thinking and tool output stay out; every text passes through `redact.clean`
(`<private>` dropped, secrets redacted) before it is trimmed. `session_render.py` turns a Digest into Markdown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memory_server.parse.text import CODE_FENCE, SENTENCE_END, code_span, first_sentence, one_line, relative_path
from memory_server.sessions.reader import Message, ToolResult, ToolUse, Transcript, request_text
from memory_server.sessions.redact import clean

# Bounds that keep each item one line long.
COMMAND_CHARS, ERROR_CHARS, FIX_CHARS, DECISION_CHARS, TODO_CHARS = 160, 200, 160, 250, 120
FIX_WINDOW = 10  # tool calls after an error within which a successful retry counts as its fix

FILE_TOOLS = {"write": "written", "edit": "edited", "multiedit": "edited", "notebookedit": "edited"}
SHELL_TOOLS = frozenset({"bash", "shell", "powershell"})
_EXIT = re.compile(r"(?i)\bexit (?:code|status)[:\s]+(-?[1-9]\d*)")
_REJECTED = re.compile(
    r"^(?:Error: )?(?:The user doesn't want to|User rejected|The user has rejected|\[Request interrupted)"
)
_DECISION = re.compile(
    r"(?i)\b(?:decided|decide to|decision is|switch(?:ed|ing)? (?:from|to|over)|from now on|always|never"
    r"|instead of|we'll use|we will use|let's use|chose|choose to|going with|opted|settled on)\b"
)
_ERROR_LINE = re.compile(r"(?i)(error|exception|failed|failure|not found|no such|cannot|can't|denied|invalid|refused)")
_PATH_KEYS = ("file_path", "notebook_path", "path")


@dataclass
class Digest:
    """Everything a compressed file says, taken from a transcript's lines first_line..line_count."""

    t: Transcript
    goal: str = ""
    requests: list[tuple[int, str]] = field(default_factory=list)
    files: dict[str, dict[str, int]] = field(default_factory=dict)
    commands: dict[str, list[int]] = field(default_factory=dict)  # shown text -> [runs, failures]
    errors: dict[str, list[Any]] = field(default_factory=dict)  # shown text -> [line, times, fix]
    decisions: list[tuple[int, str]] = field(default_factory=list)
    todos: list[str] = field(default_factory=list)
    last_reply: tuple[int, str] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    has_activity: bool = False

    @classmethod
    def of(cls, t: Transcript, full: Transcript) -> Digest:
        """Digest `t` (possibly a later slice); the goal comes from the whole transcript `full`."""
        d = cls(t)
        d.goal = _goal(full)
        d._read()
        return d

    def _read(self) -> None:
        t = self.t
        msgs = t.messages
        request_lines: list[int] = []
        uses: list[tuple[Message, ToolUse, ToolResult | None]] = []
        for m in msgs:
            req = request_text(m)
            if req is not None:
                text = clean(req[0])
                self.requests.append((m.line, text))
                request_lines.append(m.line)
                self._decisions(m.line, text)
            if m.role == "assistant":
                self.has_activity = self.has_activity or bool(m.text.strip() or m.tool_uses)
                uses.extend((m, u, t.result_of(u)) for u in m.tool_uses)
                if not m.is_sidechain and m.text.strip():
                    said = clean(m.text)
                    self._decisions(m.line, CODE_FENCE.sub(" ", said))
                    if said.strip():
                        self.last_reply = (m.line, said)
        self.has_activity = self.has_activity or bool(self.requests)
        commands = failed = errors = 0
        for i, (m, use, res) in enumerate(uses):
            tool = use.name.lower()
            if tool in FILE_TOOLS:
                self._file(use, res)
            elif tool in SHELL_TOOLS and isinstance(use.input.get("command"), str):
                bad = _failed(res)
                commands += 1
                failed += bad
                runs = self.commands.setdefault(one_line(clean(use.input["command"]), COMMAND_CHARS), [0, 0])
                runs[0] += 1
                runs[1] += bad
            if res is not None and res.is_error and not _REJECTED.match(res.text.strip()):
                errors += 1
                self._error(m.line, _error_text(use, res, t.cwd), _fix(i, uses, msgs, request_lines, t.cwd))
        for m in msgs:
            if m.role == "system" and "error" in m.subtype and m.text.strip():
                errors += 1
                self._error(m.line, one_line(clean(m.text), ERROR_CHARS), None)
        self._todos(uses)
        self.counts = {
            "messages": sum(1 for m in msgs if m.role in ("user", "assistant")),
            "requests": len(self.requests),
            "tool_calls": len(uses),
            "commands": commands,
            "failed_commands": failed,
            "errors": errors,
        }

    def _file(self, use: ToolUse, res: ToolResult | None) -> None:
        raw = _path_of(use)
        if not raw:
            return
        ops = self.files.setdefault(relative_path(clean(raw), self.t.cwd), {})
        if res is not None and res.is_error:
            ops["failed"] = ops.get("failed", 0) + 1
            return
        op = FILE_TOOLS[use.name.lower()]
        if op == "written" and isinstance(res and res.data, dict):
            op = {"create": "created", "update": "rewritten"}.get(res.data.get("type"), op)  # type: ignore[union-attr]
        ops[op] = ops.get(op, 0) + 1

    def _error(self, line: int, text: str, fix: str | None) -> None:
        seen = self.errors.setdefault(text, [line, 0, None])
        seen[1] += 1
        seen[2] = seen[2] or fix

    def _decisions(self, line: int, text: str) -> None:
        for raw in SENTENCE_END.split(text):
            s = re.sub(r"^\s*(?:[-*+>]|\d+[.)]|#+)\s*", "", raw).replace("**", "").strip()
            if 20 <= len(s) <= 400 and not s.startswith("|") and _DECISION.search(s):
                s = one_line(s, DECISION_CHARS)
                if all(s != d for _, d in self.decisions):
                    self.decisions.append((line, s))

    def _todos(self, uses: list[tuple[Message, ToolUse, ToolResult | None]]) -> None:
        lists = [(m, u) for m, u, _ in uses if u.name == "TodoWrite" and isinstance(u.input.get("todos"), list)]
        main = [x for x in lists if not x[0].is_sidechain] or lists
        if not main:
            return
        for todo in main[-1][1].input["todos"]:
            if not isinstance(todo, dict):
                continue
            what = next((todo[k] for k in ("content", "subject", "activeForm") if isinstance(todo.get(k), str)), "")
            if not what.strip():
                continue
            status = todo.get("status") if isinstance(todo.get("status"), str) else "pending"
            box = "[x]" if status == "completed" else "[ ]"
            note = "" if status in ("completed", "pending") else f" ({status.replace('_', ' ')})"
            self.todos.append(f"{box} {one_line(clean(what), TODO_CHARS)}{note}")


def _goal(full: Transcript) -> str:
    """The first real request with free text; else the first slash command, with its prompt's first sentence."""
    msgs = full.messages
    found = [(i, r) for i, m in enumerate(msgs) if (r := request_text(m)) is not None]
    free = next((text for _, (text, has_free_text) in found if has_free_text), None)
    if free is not None or not found:
        return clean(free or "")
    i, (command, _) = found[0]
    expansion = next((m for m in msgs[i + 1 : i + 3] if m.role == "user" and m.is_meta and m.text.strip()), None)
    return clean(f"{command}: {first_sentence(expansion.text, FIX_CHARS)}" if expansion else command)


def _failed(res: ToolResult | None) -> bool:
    if res is None:
        return False
    if _REJECTED.match(res.text.strip()):
        return False  # the person declined it: nothing ran
    if res.is_error or _EXIT.search(res.text[:300]):
        return True
    data = res.data if isinstance(res.data, dict) else {}
    code = next((data[k] for k in ("exitCode", "exit_code", "returnCode") if isinstance(data.get(k), int)), 0)
    return code != 0


def _error_text(use: ToolUse, res: ToolResult, cwd: str | None) -> str:
    body = re.sub(r"</?tool_use_error>", "", clean(res.text)).strip()
    body = re.sub(r"^Error:\s*", "", body)
    lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
    if "Traceback" in body:  # the exception is the last "XError: ..." line, not the first
        pick = next((ln for ln in reversed(lines) if re.match(r"^[\w.]+(?:Error|Exception)\b", ln)), None)
    else:
        pick = next((ln for ln in lines if _ERROR_LINE.search(ln)), None)
    pick = pick or (lines[0] if lines else "failed")
    if pick.endswith(":") and pick in lines and lines.index(pick) + 1 < len(lines):
        pick = f"{pick} {lines[lines.index(pick) + 1]}"  # "failed due to the following issue:" says nothing alone
    message = one_line(pick, ERROR_CHARS)
    return f"{_target(use, cwd)}: {message}"


def _target(use: ToolUse, cwd: str | None) -> str:
    tool = use.name.lower()
    if tool in SHELL_TOOLS and isinstance(use.input.get("command"), str):
        return f"{use.name} {code_span(one_line(clean(use.input['command']), 60))}"
    path = _path_of(use)
    return f"{use.name} {code_span(relative_path(clean(path), cwd))}" if path else use.name


def _path_of(use: ToolUse) -> str | None:
    """The file or folder a tool call works on, if it names one."""
    return next((use.input[k] for k in _PATH_KEYS if isinstance(use.input.get(k), str)), None)


def _key(use: ToolUse) -> tuple[str, str]:
    """What a retry of this call would share with it: the file, or the program a command runs."""
    path = _path_of(use)
    if path:
        return ("file", path)
    command = use.input.get("command")
    if isinstance(command, str):
        last = re.split(r"&&|\|\||;|\|", command.strip().splitlines()[0] if command.strip() else "")[-1]
        return ("run", " ".join(last.split()[:2]))
    return ("tool", use.name)


def _fix(
    i: int,
    uses: list[tuple[Message, ToolUse, ToolResult | None]],
    msgs: list[Message],
    requests: list[int],
    cwd: str | None,
) -> str | None:
    """What made a failed call work, when a later call on the same file or program succeeded in that turn.

    The fix is the changes made in between (files edited, commands that change things), else what the
    assistant said right after the failure, else "retried".
    """
    m, use, _ = uses[i]
    stop = next((r for r in requests if r > m.line), None)
    key = _key(use)
    family = use.name.lower() in FILE_TOOLS
    between: list[str] = []
    read_first = False
    steps = 0
    for later_m, later, res in uses[i + 1 :]:
        if stop is not None and later_m.line >= stop:
            return None  # the person spoke again: whatever came next answers them, not the error
        if later_m.is_sidechain != m.is_sidechain:
            continue
        steps += 1
        if steps > FIX_WINDOW:
            return None  # too far away to say what fixed it
        ok = res is not None and not res.is_error
        tool = later.name.lower()
        if ok and _key(later) == key and (tool in FILE_TOOLS) == family:
            if between and key[0] == "run":  # a command fixed by editing code or installing something
                return ", ".join(between[:2])
            if read_first:
                return "read the file first, then retried"
            said = next(
                (
                    x
                    for x in msgs
                    if x.role == "assistant" and m.line < x.line <= later_m.line and x.text.strip()
                    and x.is_sidechain == m.is_sidechain
                ),
                None,
            )
            return first_sentence(clean(said.text), FIX_CHARS) if said else "retried"
        if not ok:
            continue
        if tool in FILE_TOOLS:
            between.append(f"edited {code_span(relative_path(clean(_key(later)[1]), cwd))}")
        elif tool in SHELL_TOOLS and isinstance(later.input.get("command"), str):
            if _changes_things(later.input["command"]):
                between.append(code_span(one_line(clean(later.input["command"]), 80)))
        elif tool == "read" and key == _key(later):
            read_first = True
    return None


_READ_ONLY = frozenset(
    "ls ll cat head tail less more find grep rg ag pwd echo printf tree which type whereis file stat wc du df "
    "cd env printenv sort uniq diff".split()
)


def _changes_things(command: str) -> bool:
    """False for a command that only looks around (ls, cat, find, git status …), which is no fix."""
    for segment in re.split(r"&&|\|\||;|\|", command):
        words = segment.split()
        if not words:
            continue
        if re.search(r"(?<![0-9&])>{1,2}\s*(?!&|/dev/null)\S", segment):
            return True  # writes a file
        if words[0] == "git" and len(words) > 1 and words[1] in ("status", "diff", "log", "show", "branch"):
            continue
        if words[0] not in _READ_ONLY:
            return True
    return False

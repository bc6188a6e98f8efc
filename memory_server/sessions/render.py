"""Render a session `Digest` as the text of a compressed session file: YAML front matter and Markdown.

Front matter: session_id, part, started, ended, cwd, branch, claude_code_version, transcript,
transcript_sha256, lines, counts. Sections: Goal, Requests, Files, Commands, Errors and fixes, Decisions,
Open at the end; empty ones are left out and long ones keep their first two thirds and last third. A last
pass redacts secrets in the body. Same digest, same bytes.
"""

from __future__ import annotations

import datetime as dt
import re

import yaml

from memory_server.parse.text import code_span, one_line
from memory_server.sessions.digest import Digest
from memory_server.sessions.redact import redact_secrets

# Bounds that keep a summary small (typically under a tenth of its transcript).
GOAL_CHARS, TITLE_CHARS, REQUEST_CHARS, LAST_REPLY_CHARS = 600, 80, 300, 400
MAX_REQUESTS, MAX_FILES, MAX_COMMANDS, MAX_ERRORS, MAX_DECISIONS, MAX_TODOS = 50, 60, 60, 15, 12, 20
_OP_ORDER = ("created", "written", "rewritten", "edited")


def render(d: Digest, part: int, first_line: int, sha256: str, previous: str | None = None) -> str:
    """The compressed file's text: front matter and Markdown sections (empty sections left out).

    `previous` is the file name of the part this one continues (None for a first part).
    """
    t = d.t
    meta = {
        "session_id": t.session_id,
        "part": part,
        "started": _iso(t.started),
        "ended": _iso(t.ended),
        "cwd": t.cwd,
        "branch": t.git_branch,
        "claude_code_version": t.version,
        "transcript": str(t.path),
        "transcript_sha256": sha256,
        "lines": [first_line, t.line_count],
        "counts": d.counts,
    }
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1_000_000, default_flow_style=None)
    title = one_line(d.goal, TITLE_CHARS) or "Session " + t.session_id
    out = [f"# {title}" + (f" (part {part})" if part > 1 else ""), ""]
    if previous is not None:
        out += [f"Continues {code_span(previous)}; this part covers transcript lines {first_line}-{t.line_count}.", ""]
    if d.goal:
        out += ["## Goal", "", re.sub(r"^([#>=]|---)", r"\\\1", one_line(d.goal, GOAL_CHARS)), ""]
    requests = [f"- {one_line(text, REQUEST_CHARS)} (line {line})" for line, text in d.requests]
    if len(requests) > 1 or (requests and part > 1):
        out += _section("Requests", _bounded(requests, MAX_REQUESTS, "requests"))
    files = [f"- {code_span(p)} ({_ops(ops)})" for p, ops in d.files.items()]
    out += _section("Files", _bounded(files, MAX_FILES, "files"))
    commands = [f"- {code_span(c)}{_failures(runs, bad)}" for c, (runs, bad) in d.commands.items()]
    out += _section("Commands", _bounded(commands, MAX_COMMANDS, "commands"))
    errors = [
        f"- {text} (line {line}{f', {times}×' if times > 1 else ''})" + (f" — fixed: {fix}" if fix else "")
        for text, (line, times, fix) in d.errors.items()
    ]
    out += _section("Errors and fixes", _bounded(errors, MAX_ERRORS, "errors"))
    out += _section("Decisions", _bounded([f"- {s} (line {n})" for n, s in d.decisions], MAX_DECISIONS, "decisions"))
    todos = _bounded([f"- {x}" for x in d.todos], MAX_TODOS, "items")
    if d.last_reply:
        todos += [""] if todos else []
        todos.append(f"Last reply (line {d.last_reply[0]}): {one_line(d.last_reply[1], LAST_REPLY_CHARS)}")
    out += _section("Open at the end", todos)
    # A last pass over the body: anything that slipped through extraction is still redacted.
    return f"---\n{front}---\n\n" + redact_secrets("\n".join(out)).rstrip("\n") + "\n"


def _section(heading: str, items: list[str]) -> list[str]:
    return [f"## {heading}", "", *items, ""] if items else []


def _bounded(items: list[str], cap: int, what: str) -> list[str]:
    """At most `cap` items: the first two thirds and the last third, with a line saying how many were left out."""
    if len(items) <= cap:
        return items
    tail = cap // 3
    return [*items[: cap - tail], f"- … {len(items) - cap} more {what} …", *items[-tail:]]


def _ops(ops: dict[str, int]) -> str:
    done = [op if ops[op] == 1 else f"{op} {ops[op]}×" for op in _OP_ORDER if op in ops]
    return ", ".join(done) if done else "failed"


def _failures(runs: int, bad: int) -> str:
    if not bad:
        return ""
    return " (failed)" if bad == runs else f" (failed {bad} of {runs} runs)"


def _iso(stamp: dt.datetime | None) -> str | None:
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ") if stamp else None

"""Render a session `Digest` as the text of a compressed session file: YAML front matter and Markdown.

Front matter: format, session_id, part, started, ended, cwd, branch, claude_code_version, transcript,
transcript_sha256, lines, counts. `format: 2` marks files written by this renderer; files without a
`format` key are format 1 (earlier releases: Requests, Decisions taken by keyword, every todo). Existing
files are never rewritten, so a root may hold both.

Format 2 sections, empty ones left out, each item one line ending in its transcript line:
Goal (the person's first request); What the user said (every later message); Corrections (the text the
person gave when rejecting a tool call); Questions and answers (the assistant's AskUserQuestion and the
person's answer); Decisions (only what the person stated, or agreed to or declined when the assistant
proposed it); Errors and fixes (the informative error line, then the edits and commands up to the next
success of the same command); Commits; Actions in other tools (what MCP tools changed: issues created,
tickets closed); Files; Commands (only those that change things); Claude Code's own
summary (its compaction summary or title: an LLM's routing text, not the person's words); Open at the end
(unfinished todos and the last reply).

Who said a line is its label (`SPEAKER`): "User: …", "User answered: …", "User agreed: …", "User declined:
…", "User pasted: …", "Assistant asked: …", "Assistant: …" (the last reply), "Claude Code: …". The label
is stable: retrieval tells the person's words from the agent's prose by it. The transcript line comes
last, in parentheses: "(line 12)", "(line 12, rejecting Bash `…`)", "(last reply, line 40)".

Long sections keep their first two thirds and last third. A last pass redacts secrets. Same digest,
same bytes.
"""

from __future__ import annotations

import datetime as dt
import re

import yaml

from memory_server.parse.text import CODE_FENCE, code_span, first_sentence, one_line
from memory_server.sessions.digest import Digest, ErrorItem
from memory_server.sessions.event_types import Commit
from memory_server.sessions.redact import redact_secrets

FORMAT = 2
# Bounds that keep a summary small (typically a few percent of its transcript).
GOAL_CHARS, TITLE_CHARS, USER_CHARS, REPLY_CHARS, SUMMARY_CHARS = 400, 80, 360, 300, 900
ANSWER_CHARS, ERROR_CHARS, FIX_CHARS, COMMIT_CHARS = 200, 200, 240, 120
MAX_USER, MAX_FILES, MAX_COMMANDS, MAX_ERRORS, MAX_DECISIONS, MAX_TODOS = 40, 40, 20, 12, 12, 15
MAX_CORRECTIONS, MAX_ANSWERS, MAX_COMMITS, MAX_FIX_STEPS = 20, 15, 15, 3
_OP_ORDER = ("created", "written", "rewritten", "edited")
_DECIDED = {"stated": "User", "agreed": "User agreed", "declined": "User declined"}
# Who said a line of the body: its label, `User`, `Assistant` or `Claude Code` (an LLM's summary), with at
# most one lowercase verb ("User answered:"), then a colon. A list item's label follows its "- ".
SPEAKER = re.compile(r"^(?:- )?(User|Assistant|Claude Code)(?: [a-z]+)?: ")
_BLOCKS = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*+•]|\d+[.)])\s)")  # paragraphs and list items
_SUMMARY_PARTS = re.compile(r"(?im)^\s*\d+\.\s+(primary request and intent|pending tasks|current work)\s*:?\s*$")


def render(d: Digest, part: int, first_line: int, sha256: str, previous: str | None = None) -> str:
    """The compressed file's text: front matter and Markdown sections (empty sections left out).

    `previous` is the file name of the part this one continues (None for a first part).
    """
    t, ev = d.t, d.events
    meta = {
        "format": FORMAT,
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
    title = first_sentence(re.sub(r"^\s*#+\s+", "", d.goal), TITLE_CHARS) or "Session " + t.session_id
    out = [f"# {_escape(title)}" + (f" (part {part})" if part > 1 else ""), ""]
    if previous is not None:
        out += [f"Continues {code_span(previous)}; this part covers transcript lines {first_line}-{t.line_count}.", ""]
    if d.goal:
        out += ["## Goal", "", f"User: {gist(d.goal, GOAL_CHARS)}{_at(d.goal_line)}", ""]
    said = [f"- User: {gist(u.text, USER_CHARS)}{_at(u.line)}" for u in ev.user_messages if u.line != d.goal_line]
    out += _section("What the user said", _bounded(said, MAX_USER, "messages"))
    corrections = [
        f"- User: {gist(c.text, USER_CHARS)}{_at(c.line, detail=f'rejecting {c.rejected}' if c.rejected else '')}"
        for c in ev.corrections
    ]
    out += _section("Corrections", _bounded(corrections, MAX_CORRECTIONS, "corrections"))
    answers = [  # a question and its answer stay together, also when the section is cut
        f"- Assistant asked: {one_line(q.question, ANSWER_CHARS)}{_at(q.question_line)}\n"
        + (f"- User answered: {one_line(q.answer, ANSWER_CHARS)}{_at(q.line)}" if q.answer else "- (no answer)")
        for q in ev.questions
    ]
    out += _section("Questions and answers", _bounded(answers, MAX_ANSWERS, "questions"))
    decisions = [f"- {_DECIDED[x.how]}: {x.statement}{_at(x.line)}" for x in d.decisions]
    out += _section("Decisions", _bounded(decisions, MAX_DECISIONS, "decisions"))
    out += _section("Errors and fixes", _bounded([_error(e) for e in d.errors], MAX_ERRORS, "errors"))
    commits = [
        f"- {code_span(one_line(c.message.splitlines()[0] if c.message else '', COMMIT_CHARS))} (line {c.line})"
        for c in _unique_commits(d)
    ]
    out += _section("Commits", _bounded(commits, MAX_COMMITS, "commits"))
    actions = [f"- {text} (line {line})" for line, text in d.actions]
    out += _section("Actions in other tools", _bounded(actions, MAX_COMMITS, "actions"))
    files = [f"- {code_span(p)} ({_ops(ops)})" for p, ops in d.files.items()]
    out += _section("Files", _bounded(files, MAX_FILES, "files"))
    commands = [f"- {code_span(c)}{_failures(runs, bad)}" for c, (runs, bad) in d.commands.items()]
    out += _section("Commands", _bounded(commands, MAX_COMMANDS, "commands"))
    out += _section("Claude Code's own summary", _summaries(d))
    todos = _bounded([f"- {x}" for x in d.todos], MAX_TODOS, "items")
    if d.last_reply:
        todos += [""] if todos else []
        todos.append(f"Assistant: {one_line(d.last_reply[1], REPLY_CHARS)}{_at(d.last_reply[0], 'last reply')}")
    out += _section("Open at the end", todos)
    # A last pass over the body: anything that slipped through extraction is still redacted.
    return f"---\n{front}---\n\n" + redact_secrets("\n".join(out)).rstrip("\n") + "\n"


def gist(text: str, limit: int) -> str:
    """A message as one line of at most `limit` characters. One too long for that keeps the first sentence
    of each paragraph or list item, so a message listing four requests still names all four."""
    phrased = re.sub(r"(?m)^[ \t]*#+[ \t]+(.+?)[ \t]*$", r"\1 ·", text)  # a heading ends a phrase
    if len(" ".join(phrased.split())) <= limit:
        return one_line(phrased, limit)
    blocks = [b for b in _BLOCKS.split(CODE_FENCE.sub(" ", text)) if b.strip()]
    if len(blocks) < 2:
        return one_line(phrased, limit)
    firsts = (first_sentence(re.sub(r"^\s*(?:[-*+•]|#+)\s+", "", b), limit) for b in blocks)
    return one_line(" · ".join(firsts), limit)


def _at(line: int | None, kind: str = "", detail: str = "") -> str:
    """An item's trailing reference: " (line 12)", " (last reply, line 12)", " (line 12, rejecting Bash `x`)"."""
    parts = [p for p in (kind, f"line {line}" if line is not None else "", detail) if p]
    return f" ({', '.join(parts)})" if parts else ""


def _escape(text: str) -> str:
    """A line that Markdown would read as a heading, quote, rule or front matter, made literal."""
    return re.sub(r"^([#>=]|---)", r"\\\1", text)


def _error(e: ErrorItem) -> str:
    where = f"line {e.line}" + (f", {e.times}×" if e.times > 1 else "")
    who = "User pasted" if e.speaker == "user" else e.target
    text = f"- {who}: {one_line(e.error, ERROR_CHARS)} ({where})"
    if e.fixed_line is not None:
        steps = e.fix[-MAX_FIX_STEPS:]
        more = len(e.fix) - len(steps)
        how = "; ".join(steps) + (f"; and {more} earlier step{'s' if more > 1 else ''}" if more else "")
        text += f" — passed at line {e.fixed_line}" + (f" after: {one_line(how, FIX_CHARS)}" if how else "")
    return text


def _unique_commits(d: Digest) -> list[Commit]:
    seen: set[str] = set()
    out = []
    for c in d.events.commits:
        if c.succeeded and c.message not in seen:
            seen.add(c.message)
            out.append(c)
    return out


def _summaries(d: Digest) -> list[str]:
    """Claude Code's own summaries: a compaction's request, pending tasks and current work; a title line."""
    out = []
    for s in d.events.summaries:
        if s.source != "compaction":
            out.append(f"- Claude Code: {one_line(s.text, TITLE_CHARS * 2)}{_at(s.line, 'title')}")
            continue
        marks = list(_SUMMARY_PARTS.finditer(s.text))
        if marks:
            pieces = []
            for m in marks:
                nxt = re.search(r"(?m)^\s*\d+\.\s+[A-Z][\w ]+:\s*$", s.text[m.end() :])
                body = s.text[m.end() : m.end() + nxt.start()] if nxt else s.text[m.end() :]
                pieces.append(f"{m.group(1).capitalize()}: {one_line(body, SUMMARY_CHARS // 2)}")
            text = " ".join(pieces)
        else:
            text = re.sub(r"(?is)^analysis:.*?(?=^summary:)", "", s.text, flags=re.M)
        out.append(f"- Claude Code: {one_line(text, SUMMARY_CHARS)}{_at(s.line, 'compaction summary, routing only')}")
    return out


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

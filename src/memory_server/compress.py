"""Compress a Claude Code transcript into an append-only Markdown session summary, deterministically.

`compress_transcript(path, root)` writes `sessions/compressed/YYYY/<date>-<short-id>-<slug>.md`: YAML front
matter (session_id, part, started, ended, cwd, branch, claude_code_version, transcript, transcript_sha256,
lines, counts) and the sections a person wants months later: Goal, Requests, Files, Commands, Errors and
fixes, Decisions, Open at the end (empty ones are left out). Thinking, tool output and slash-command noise
stay out; `<private>` text is dropped and secrets are redacted before anything is trimmed.

Append-only: a compressed file is never rewritten. What is already covered is read back from the front
matter of existing files (session_id, transcript file name, lines), so no state file is needed and deleting
`.memory/` loses nothing. A transcript that grew gets a continuation (`…-part2.md`, part 3, …) covering only
the new JSONL lines; an unchanged one gives nothing, and so does one without a single real request.
`transcript_sha256` hashes the transcript's bytes from its start through the last line the file covers
(for a finished single-part session: the whole file).

Same input, same bytes out: no clock is read. Writing holds `.memory/compress.lock`, so two compressions
of one transcript (SessionEnd racing PreCompact, two terminals) produce one file set.

`compress_all(folder, root)` backfills every `*.jsonl` under a folder, sorted. Subagent transcripts (files
under a `subagents/` folder, or named `agent-*.jsonl`) are skipped: the parent session already shows their
work through its Task calls (and, in Claude Code 1.x, through inline sidechain records, which are included).

`python -m memory_server.compress --root DIR TRANSCRIPT...` is the detached job the SessionEnd and PreCompact
hooks start; it logs to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import logging
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock, Timeout

from .errors import LockedError, MemoryServerError, PathRefusedError, TranscriptError
from .redact import clean, redact_secrets
from .store import MemoryRoot
from .transcripts import (
    Message,
    ToolResult,
    ToolUse,
    Transcript,
    parse_transcript_bytes,
    read_transcript_bytes,
    request_text,
)

log = logging.getLogger(__name__)

LOCK_NAME = "compress.lock"
LOCK_TIMEOUT = 60.0

# Bounds that keep a summary small (typically under a tenth of its transcript) and its items one line long.
GOAL_CHARS, TITLE_CHARS, REQUEST_CHARS, COMMAND_CHARS, ERROR_CHARS, FIX_CHARS = 600, 80, 300, 160, 200, 160
DECISION_CHARS, TODO_CHARS, LAST_REPLY_CHARS = 250, 120, 400
FIX_WINDOW = 10  # tool calls after an error within which a successful retry counts as its fix
MAX_REQUESTS, MAX_FILES, MAX_COMMANDS, MAX_ERRORS, MAX_DECISIONS, MAX_TODOS = 50, 60, 60, 15, 12, 20

FILE_TOOLS = {"write": "written", "edit": "edited", "multiedit": "edited", "notebookedit": "edited"}
SHELL_TOOLS = frozenset({"bash", "shell", "powershell"})
_OP_ORDER = ("created", "written", "rewritten", "edited")
_EXIT = re.compile(r"(?i)\bexit (?:code|status)[:\s]+(-?[1-9]\d*)")
_REJECTED = re.compile(
    r"^(?:Error: )?(?:The user doesn't want to|User rejected|The user has rejected|\[Request interrupted)"
)
_DECISION = re.compile(
    r"(?i)\b(?:decided|decide to|decision is|switch(?:ed|ing)? (?:from|to|over)|from now on|always|never"
    r"|instead of|we'll use|we will use|let's use|chose|choose to|going with|opted|settled on)\b"
)
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+|\n+")
_ERROR_LINE = re.compile(r"(?i)(error|exception|failed|failure|not found|no such|cannot|can't|denied|invalid|refused)")
_PATH_KEYS = ("file_path", "notebook_path", "path")
_PART_SUFFIX = re.compile(r"-part\d+$")
_STOPWORDS = frozenset(
    "a an the ok okay please now so and or but can could would you i me my we our us to of for in on at with "
    "that this is it be let lets just also then hey hi".split()
)


# -- public entry points ---------------------------------------------------------------------------------


def compress_transcript(
    transcript_path: str | os.PathLike[str],
    root: MemoryRoot,
    *,
    transcript_root: str | os.PathLike[str] | None = None,
    lock_timeout: float = LOCK_TIMEOUT,
) -> list[Path]:
    """Write the compressed session file(s) for what is new in a transcript; return the files written.

    Returns [] when the transcript is unchanged since the last compression, or holds no real request.
    With `transcript_root`, a transcript outside that folder is refused (PathRefusedError). Raises
    TranscriptError when the transcript cannot be read and LockedError when another compression holds
    the lock for longer than `lock_timeout` seconds.
    """
    path = Path(transcript_path).expanduser()
    if transcript_root is not None:
        base = Path(transcript_root).expanduser().resolve()
        real = path.resolve()
        if real != base and base not in real.parents:
            raise PathRefusedError(
                f"transcript {path} is outside the transcript folder {base}: give a transcript from that folder"
            )
    path = path.absolute()
    with compression_lock(root, lock_timeout):
        data = read_transcript_bytes(path)
        full = parse_transcript_bytes(data, path)
        parts = existing_parts(root, full.session_id, path.name)
        start = max((p.last for p in parts), default=0) + 1
        if start > full.line_count:
            return []
        t = full if start == 1 else parse_transcript_bytes(data, path, first_line=start)
        digest = Digest.of(t, full)
        # A first part needs a real request; a continuation needs anything new (not just summary records).
        if not (digest.has_activity if parts else digest.requests):
            return []
        number = max((p.part for p in parts), default=0) + 1
        text = render(digest, number, start, _sha256_through(data, full.line_count), parts)
        folder, stem = _placement(root, full, parts, digest.goal)
        suffix = "" if number == 1 else f"-part{number}"
        for attempt in range(1, 10):  # a foreign file with our name (never ours: we checked the parts)
            name = f"{stem}{suffix}{'' if attempt == 1 else f'-{attempt}'}.md"
            try:
                written = root.write_new(root.relpath(folder / name), text)
            except FileExistsError:
                continue
            log.info("compressed %s lines %d-%d into %s", path, start, full.line_count, written)
            return [written]
        log.warning("could not find a free file name for %s in %s; nothing written", stem, folder)
        return []


def compress_all(
    directory: str | os.PathLike[str],
    root: MemoryRoot,
    progress: Callable[[int, int], None] | None = None,
) -> list[Path]:
    """Backfill: compress every `*.jsonl` under `directory` (sorted, subagent files skipped); return new files.

    A transcript that cannot be read is logged and skipped. `progress(done, total)` is called after each.
    """
    folder = Path(directory).expanduser()
    if not folder.is_dir():
        raise TranscriptError(f"transcript folder {folder} does not exist: point at ~/.claude/projects/<project>")
    files = sorted(p for p in folder.rglob("*.jsonl") if p.is_file() and not is_subagent_transcript(p, folder))
    written: list[Path] = []
    for done, f in enumerate(files, start=1):
        try:
            written.extend(compress_transcript(f, root))
        except MemoryServerError as exc:
            log.warning("skipped %s: %s", f, exc)
        if progress is not None:
            progress(done, len(files))
    return written


def is_subagent_transcript(path: Path, base: Path | None = None) -> bool:
    """True for a subagent's transcript: under a `subagents/` folder, or an `agent-*.jsonl` file."""
    parts = path.relative_to(base).parts if base is not None and base in path.parents else path.parts
    return "subagents" in parts[:-1] or path.name.startswith("agent-")


@contextlib.contextmanager
def compression_lock(root: MemoryRoot, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the root's compression lock (`.memory/compress.lock`), or raise LockedError after `timeout` s."""
    lock_path = root.state_dir / LOCK_NAME
    lock = FileLock(str(lock_path), timeout=timeout)
    try:
        lock.acquire()
    except Timeout as exc:
        raise LockedError(
            f"another compression has held {lock_path} for over {timeout:.0f} s; let it finish and run "
            "`memory-server compress` again (nothing was written)"
        ) from exc
    try:
        yield
    finally:
        lock.release()


# -- what was compressed already -------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """An existing compressed file of one transcript: which part it is and the JSONL lines it covers."""

    path: Path
    part: int
    first: int
    last: int


def existing_parts(root: MemoryRoot, session_id: str, transcript_name: str) -> list[Part]:
    """The compressed files of this session's transcript, read from their front matter, by part number."""
    found: list[Part] = []
    if not root.sessions_dir.is_dir():
        return found
    short = short_id(session_id)
    for p in sorted(root.sessions_dir.rglob("*.md")):
        if short not in p.name or p.name.startswith("."):
            continue  # the short id is in every name we write: skip unrelated files without opening them
        meta = read_front_matter(p)
        if str(meta.get("session_id", "")) != session_id:
            continue
        transcript = meta.get("transcript")
        if isinstance(transcript, str) and Path(transcript).name != transcript_name:
            continue  # the same session id from another file (an old subagent log, a resumed copy)
        lines = meta.get("lines")
        if not (isinstance(lines, list) and len(lines) == 2 and all(isinstance(x, int) for x in lines)):
            log.warning("%s has no valid `lines: [first, last]` in its front matter; ignored", p)
            continue
        part = meta.get("part") if isinstance(meta.get("part"), int) else 1
        found.append(Part(p, part, lines[0], lines[1]))
    return sorted(found, key=lambda x: (x.part, x.last))


def read_front_matter(path: Path) -> dict[str, Any]:
    """The YAML front matter of a Markdown file as a dict ({} when it has none or it does not parse)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(65536)
    except OSError:
        return {}
    if not head.startswith("---\n"):
        return {}
    end = head.find("\n---", 3)
    if end < 0:
        return {}
    try:
        meta = yaml.safe_load(head[4:end])
    except yaml.YAMLError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _placement(root: MemoryRoot, full: Transcript, parts: list[Part], goal: str) -> tuple[Path, str]:
    """The folder and base file name: beside part 1 for a continuation, else from the session start date."""
    if parts:
        return parts[0].path.parent, _PART_SUFFIX.sub("", parts[0].path.stem)
    started = full.started or dt.datetime.fromtimestamp(full.path.stat().st_mtime, dt.timezone.utc)
    date = started.strftime("%Y-%m-%d")
    return root.sessions_dir / date[:4], f"{date}-{short_id(full.session_id)}-{slugify(goal)}"


def short_id(session_id: str) -> str:
    """The first 8 characters of a session id, safe in a file name."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", session_id)[:8] or "session"


def slugify(text: str, words: int = 6) -> str:
    """An ASCII slug of at most `words` words from a request, without filler words ("ok", "please")."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    tokens = [w for w in re.split(r"[^a-z0-9]+", ascii_text) if w]
    kept = [w for w in tokens if w not in _STOPWORDS] or tokens
    return "-".join(kept[:words])[:60].strip("-") or "session"


def _sha256_through(data: bytes, last_line: int) -> str:
    end = 0
    for _ in range(last_line):
        nl = data.find(b"\n", end)
        end = len(data) if nl < 0 else nl + 1
    return hashlib.sha256(data[:end]).hexdigest()


# -- the digest: what a person wants to read -------------------------------------------------------------


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
                    self._decisions(m.line, _CODE_FENCE.sub(" ", said))
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
                runs = self.commands.setdefault(_one_line(clean(use.input["command"]), COMMAND_CHARS), [0, 0])
                runs[0] += 1
                runs[1] += bad
            if res is not None and res.is_error and not _REJECTED.match(res.text.strip()):
                errors += 1
                self._error(m.line, _error_text(use, res, t.cwd), _fix(i, uses, msgs, request_lines, t.cwd))
        for m in msgs:
            if m.role == "system" and "error" in m.subtype and m.text.strip():
                errors += 1
                self._error(m.line, _one_line(clean(m.text), ERROR_CHARS), None)
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
        ops = self.files.setdefault(_relative(clean(raw), self.t.cwd), {})
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
        for raw in _SENTENCE_END.split(text):
            s = re.sub(r"^\s*(?:[-*+>]|\d+[.)]|#+)\s*", "", raw).replace("**", "").strip()
            if 20 <= len(s) <= 400 and not s.startswith("|") and _DECISION.search(s):
                s = _one_line(s, DECISION_CHARS)
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
            self.todos.append(f"{box} {_one_line(clean(what), TODO_CHARS)}{note}")


def _goal(full: Transcript) -> str:
    """The first real request with free text; else the first slash command, with its prompt's first sentence."""
    msgs = full.messages
    found = [(i, r) for i, m in enumerate(msgs) if (r := request_text(m)) is not None]
    free = next((text for _, (text, has_free_text) in found if has_free_text), None)
    if free is not None or not found:
        return clean(free or "")
    i, (command, _) = found[0]
    expansion = next((m for m in msgs[i + 1 : i + 3] if m.role == "user" and m.is_meta and m.text.strip()), None)
    return clean(f"{command}: {_first_sentence(expansion.text)}" if expansion else command)


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
    message = _one_line(pick, ERROR_CHARS)
    return f"{_target(use, cwd)}: {message}"


def _target(use: ToolUse, cwd: str | None) -> str:
    tool = use.name.lower()
    if tool in SHELL_TOOLS and isinstance(use.input.get("command"), str):
        return f"{use.name} {_code(_one_line(clean(use.input['command']), 60))}"
    path = _path_of(use)
    return f"{use.name} {_code(_relative(clean(path), cwd))}" if path else use.name


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
            return _first_sentence(clean(said.text)) if said else "retried"
        if not ok:
            continue
        if tool in FILE_TOOLS:
            between.append(f"edited {_code(_relative(clean(_key(later)[1]), cwd))}")
        elif tool in SHELL_TOOLS and isinstance(later.input.get("command"), str):
            if _changes_things(later.input["command"]):
                between.append(_code(_one_line(clean(later.input["command"]), 80)))
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


# -- rendering ---------------------------------------------------------------------------------------------


def render(d: Digest, part: int, first_line: int, sha256: str, parts: Sequence[Part]) -> str:
    """The compressed file's text: front matter and Markdown sections (empty sections left out)."""
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
    title = _one_line(d.goal, TITLE_CHARS) or "Session " + t.session_id
    out = [f"# {title}" + (f" (part {part})" if part > 1 else ""), ""]
    if parts:
        previous = _code(parts[-1].path.name)
        out += [f"Continues {previous}; this part covers transcript lines {first_line}-{t.line_count}.", ""]
    if d.goal:
        out += ["## Goal", "", re.sub(r"^([#>=]|---)", r"\\\1", _one_line(d.goal, GOAL_CHARS)), ""]
    requests = [f"- {_one_line(text, REQUEST_CHARS)} (line {line})" for line, text in d.requests]
    if len(requests) > 1 or (requests and part > 1):
        out += _section("Requests", _bounded(requests, MAX_REQUESTS, "requests"))
    files = [f"- {_code(p)} ({_ops(ops)})" for p, ops in d.files.items()]
    out += _section("Files", _bounded(files, MAX_FILES, "files"))
    commands = [f"- {_code(c)}{_failures(runs, bad)}" for c, (runs, bad) in d.commands.items()]
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
        todos.append(f"Last reply (line {d.last_reply[0]}): {_one_line(d.last_reply[1], LAST_REPLY_CHARS)}")
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


def _relative(path: str, cwd: str | None) -> str:
    if cwd:
        base = cwd.rstrip("/\\")
        for sep in ("/", "\\"):
            if path.startswith(base + sep) and len(path) > len(base) + 1:
                return path[len(base) + 1 :]
    return path


def _one_line(text: str, limit: int) -> str:
    """Whitespace collapsed to single spaces, cut at a word boundary near `limit` with an ellipsis."""
    s = " ".join(text.split())
    if len(s) <= limit:
        return s
    cut = s[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit * 0.6 else cut).rstrip(" ,;:") + "…"


def _first_sentence(text: str) -> str:
    first = next((s for s in _SENTENCE_END.split(_CODE_FENCE.sub(" ", text)) if s.strip()), "")
    return _one_line(first, FIX_CHARS)


def _code(text: str) -> str:
    """A Markdown code span that survives backticks inside it."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _iso(stamp: dt.datetime | None) -> str | None:
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ") if stamp else None


# -- the detached job ----------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Compress transcripts into a memory root; the background job the session hooks start."""
    parser = argparse.ArgumentParser(
        prog="python -m memory_server.compress",
        description="Write compressed session files for Claude Code transcripts (append-only, never overwrites).",
    )
    parser.add_argument("--root", required=True, help="the memory root")
    parser.add_argument("--transcript-root", help="refuse transcripts outside this folder")
    parser.add_argument("--lock-timeout", type=float, default=LOCK_TIMEOUT, help="seconds to wait for the lock")
    parser.add_argument("transcripts", nargs="+", help="transcript .jsonl files")
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(process)d %(levelname)s %(message)s"
    )
    try:
        root = MemoryRoot(args.root)
    except MemoryServerError as exc:
        log.error("%s", exc)
        return 2
    status = 0
    for transcript in args.transcripts:  # one bad transcript does not stop the others
        try:
            written = compress_transcript(
                transcript, root, transcript_root=args.transcript_root, lock_timeout=args.lock_timeout
            )
        except MemoryServerError as exc:
            log.error("%s", exc)
            status = max(status, 2)
            continue
        except Exception:  # the log file is the only witness of a detached job
            log.exception("compressing %s failed", transcript)
            status = max(status, 1)
            continue
        if not written:
            log.info("nothing new to compress in %s", transcript)
    return status


if __name__ == "__main__":
    sys.exit(main())

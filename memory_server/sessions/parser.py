"""Parse Claude Code session transcripts (JSONL) of any version, never failing on a bad line.

Claude Code appends one JSON object per line to `~/.claude/projects/<project>/<session-id>.jsonl`. The shape
has drifted across versions, so this parser takes what it recognises and counts the rest:

- `user` / `assistant` records whose `message.content` is a string or a list of blocks (text, thinking,
  tool_use, tool_result, image, anything newer is skipped); records without a `type` but with a
  `message.role`; one API message split over consecutive records (same `message.id`) is merged into one
  Message; `isSidechain` (subagent) and `isMeta` records are kept and flagged; `isCompactSummary` is flagged.
  A reply Claude Code wrote in the agent's place (`isApiErrorMessage`, or the model `<synthetic>`: "Not logged
  in", an API error) is counted in `Transcript.synthetic_replies`, not made a Message.
- `summary` records become Messages with role "summary"; `system` records (compact_boundary, errors,
  command output) become role "system" with their `subtype`; early top-level `tool_use` / `tool_result`
  records are read as assistant / user messages.
- Any other record type is counted in `Transcript.record_types` and otherwise ignored. Lines that are not
  JSON objects (garbage, arrays, numbers) are listed in `Transcript.bad_lines`; blank lines are skipped;
  undecodable bytes become U+FFFD. An unterminated last line that is not valid JSON is a write still in
  progress: it is left out (`incomplete_tail`) so a later read picks it up whole.

Positions are stable: `Message.line` / `Message.end_line` are 1-based JSONL line numbers, counted by "\\n"
only (a JSON string may hold U+2028 or a lone "\\r", which str.splitlines would wrongly count as breaks).
Lines are read one at a time and a record's huge texts are cut to a bounded head and tail after redaction
(`bounds.py`), so a transcript of any size parses in bounded memory. Nothing here raises but the lines'
source: opening and reading the file, the one step that can fail, is `reader.parse_transcript`.

`on_record(line, record)` sees every line once it is clean: the record redacted and cut exactly as the parse
reads it (BLANK for a blank line, NOT_A_RECORD for one that is not a JSON object). Kept copies
(`sessions/keep.py`) are written from it, so they hold what the parse saw, line for line.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import re
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from memory_server.sessions.bounds import cut_long_strings, trim_cuts
from memory_server.sessions.model import Message, ToolResult, ToolUse, Transcript
from memory_server.sessions.redact import SessionRedactor

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_VERSION = re.compile(r"^\d+\.\d+")
_ABS_PATH = re.compile(r"^(?:/|[A-Za-z]:[\\/]|\\\\)")
_COMPACT_PREFIX = "This session is being continued from a previous conversation"

BLANK = object()  # what on_record gets for a blank line
NOT_A_RECORD = object()  # and for a line that is not a JSON object (or is nested too deep to read)
RecordSink = Callable[[int, Any], None]


def parse_transcript_bytes(data: bytes, path: str | Path, *, first_line: int = 1) -> Transcript:
    """Parse transcript bytes already read (see parse_transcript)."""
    return parse_transcript_lines(io.BytesIO(data), path, first_line=first_line)


def parse_transcript_lines(
    lines: Iterable[bytes],
    path: str | Path,
    *,
    first_line: int = 1,
    last_line: int | None = None,
    on_record: RecordSink | None = None,
) -> Transcript:
    """Parse a transcript from its raw lines, one at a time (an open binary file, or lines ending in "\\n").

    Holds one line at a time: each record's huge texts are cut to a bounded head and tail after redaction
    (`bounds.py`), and `Transcript.sha256` hashes the bytes of the lines read. Reading stops after
    `last_line` lines when given (a transcript that grew since an earlier read is read as it was).
    """
    parser = TranscriptParser(path, first_line=first_line, on_record=on_record)
    parser.feed(lines, last_line=last_line)
    return parser.transcript()


class TranscriptParser:
    """Parses a transcript's lines in order, and can be fed more later: a transcript that grew is read from
    where the last read stopped (`sessions/transcript_layer.py`), with the state of the parse (split messages,
    tool calls waiting for results, open `<private>` spans and what they taught) carried over.

    `complete_only`: an unterminated last line is left unread even when it is whole JSON (a follower reads
    it once its line break is written, so its line numbers match a full read's)."""

    def __init__(
        self,
        path: str | Path,
        *,
        first_line: int = 1,
        complete_only: bool = False,
        on_record: RecordSink | None = None,
    ) -> None:
        self.t = Transcript(path=Path(path), session_id="", first_line=max(1, first_line))
        self._on_record = on_record
        self._parser = _Parser(self.t)
        self._redactor = SessionRedactor()  # secrets and <private> text out of every record, before anything reads it
        self._digest = hashlib.sha256()
        self._complete_only = complete_only
        self.line_count = 0
        self.bytes_read = 0  # bytes of the lines read, through the last one read

    def feed(self, lines: Iterable[bytes], *, last_line: int | None = None) -> None:
        """Read more lines (those after the ones read so far), up to `last_line` lines in all when given."""
        t = self.t
        for raw in lines:
            if last_line is not None and self.line_count >= last_line:
                break
            terminated = raw.endswith(b"\n")
            if not terminated and self._complete_only:
                t.incomplete_tail = True
                break
            n = self.line_count + 1
            size = len(raw)
            start, end = _strip_bounds(raw)
            if start == end:
                t.blank_lines += 1
                self._digest.update(raw)
                self.line_count, self.bytes_read = n, self.bytes_read + size
                if self._on_record is not None:
                    self._on_record(n, BLANK)
                continue
            # Decoded from a view (no stripped copy of a line that may hold megabytes), and the bytes let go
            # before JSON is parsed: a huge line is in memory once as text and once as its parsed record.
            text = str(memoryview(raw)[start:end], "utf-8", "replace")
            if terminated:
                self._digest.update(raw)
                raw = b""
            rec = _loads(text.lstrip("\ufeff") if n == 1 else text)
            del text
            if rec is _NOT_JSON and not terminated:
                t.incomplete_tail = True  # still being written: leave it for the next read
                break
            if not terminated:
                self._digest.update(raw)  # the unterminated last line, now known to be whole
            del raw
            self.line_count, self.bytes_read = n, self.bytes_read + size
            self._record(rec, n)

    def _record(self, rec: Any, n: int) -> None:
        t = self.t
        if not isinstance(rec, dict):
            t.bad_lines.append(n)
            if self._on_record is not None:
                self._on_record(n, NOT_A_RECORD)
            return
        try:
            cuts = cut_long_strings(rec)
            self._redactor.record(rec)
            if cuts:
                trim_cuts(rec, cuts)
        except RecursionError:  # nested too deep to walk: a record nobody wrote by hand, read as bad
            t.bad_lines.append(n)
            if self._on_record is not None:
                self._on_record(n, NOT_A_RECORD)
            return
        if self._on_record is not None:
            self._on_record(n, rec)
        self._parser.record(rec, n)

    def transcript(self) -> Transcript:
        """The transcript as read so far (line count, hash of the lines read, session id)."""
        t = self.t
        t.line_count = self.line_count
        t.sha256 = self._digest.hexdigest()
        t.session_id = _session_id(t.path, [s for s in self._parser.session_ids if s])
        return t

    def drop_done_messages(self) -> None:
        """Forget every message but the last (a later record may still extend it), and the tool results
        already paired: a follower keeps memory bounded by what it has not passed on yet."""
        del self.t.messages[:-1]
        self.t.results.clear()
        self.t.uuids.clear()


_NOT_JSON = object()


def _loads(text: str) -> Any:
    """The parsed line, or _NOT_JSON (not JSON, or nested too deep to parse)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


_WHITESPACE = frozenset(b" \t\n\r\x0b\x0c")  # what bytes.strip() removes


def _strip_bounds(raw: bytes) -> tuple[int, int]:
    """The slice raw[start:end] that bytes.strip() would give, without copying the line."""
    start, end = 0, len(raw)
    while end > start and raw[end - 1] in _WHITESPACE:
        end -= 1
    while start < end and raw[start] in _WHITESPACE:
        start += 1
    return start, end


def transcript_id(path: Path) -> str:
    """A transcript's id: its file name without `.jsonl` (a kept copy's without `.jsonl.gz`)."""
    name = path.name
    for suffix in (".jsonl.gz", ".jsonl"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return path.stem


def _session_id(path: Path, seen: list[str]) -> str:
    # The file name is the session id in ~/.claude/projects; copies (or old resumed files that carry the
    # previous session's records first) fall back to the records' sessionId.
    stem = transcript_id(path)
    if _UUID.match(stem) or not seen:
        return stem
    return seen[0]


def parse_timestamp(value: Any) -> dt.datetime | None:
    """An aware UTC datetime from an ISO 8601 string or epoch seconds/milliseconds; None when unusable."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            stamp = dt.datetime.fromtimestamp(value / 1000 if value > 1e11 else value, dt.UTC)
        elif isinstance(value, str) and value[:1].isdigit():
            stamp = dt.datetime.fromisoformat(value.strip())
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.UTC)
    return stamp.astimezone(dt.UTC)


class _Parser:
    """Turns records into Messages on a Transcript, merging split API messages and pairing tool results."""

    def __init__(self, t: Transcript) -> None:
        self.t = t
        self.session_ids: list[str | None] = [None, None]  # from the first message, from any record
        self.pending_anonymous: deque[str] = deque()  # tool calls without ids, waiting for id-less results
        self.known_ids: set[str] = set()

    def record(self, rec: dict[str, Any], n: int) -> None:
        t = self.t
        rtype = _str(rec.get("type"))
        t.record_types[rtype or "<none>"] += 1
        self._facts(rec, rtype)
        if n < t.first_line:
            return
        stamp = parse_timestamp(rec.get("timestamp"))
        if stamp is not None:
            t.started = stamp if t.started is None or stamp < t.started else t.started
            t.ended = stamp if t.ended is None or stamp > t.ended else t.ended
        msg = rec.get("message")
        if rtype == "summary":
            if isinstance(rec.get("summary"), str) and rec["summary"].strip():
                leaf = _str(rec.get("leafUuid"))
                self._add(Message(n, n, "summary", stamp, text=rec["summary"].strip(), leaf_uuid=leaf))
        elif rtype == "system":
            self._add(self._system(rec, n, stamp))
        elif rtype == "tool_use" and not isinstance(msg, dict):
            m = Message(n, n, "assistant", stamp)
            m.tool_uses.append(self._tool_use(rec, n, 0))
            self._add(m)
        elif rtype == "tool_result" and not isinstance(msg, dict):
            m = Message(n, n, "user", stamp)
            m.tool_results.append(self._tool_result(rec, rec, n, single=True))
            self._add(m)
        elif isinstance(msg, dict) and rtype in ("user", "assistant", ""):
            self._conversation(rec, msg, rtype, n, stamp)

    def _conversation(
        self, rec: dict[str, Any], msg: dict[str, Any], rtype: str, n: int, stamp: dt.datetime | None
    ) -> None:
        role = msg.get("role") if msg.get("role") in ("user", "assistant") else rtype
        if role == "assistant" and (rec.get("isApiErrorMessage") is True or msg.get("model") == "<synthetic>"):
            self.t.synthetic_replies += 1
        elif role in ("user", "assistant"):
            self._add(self._message(rec, msg, role, n, stamp))

    def _facts(self, rec: dict[str, Any], rtype: str) -> None:
        t = self.t
        sid = rec.get("sessionId")
        if isinstance(sid, str) and sid.strip() and len(sid) <= 200 and not re.search(r"[\s/\\]", sid):
            slot = 0 if rtype in ("user", "assistant") else 1  # a message's sessionId beats a meta record's
            if self.session_ids[slot] is None:
                self.session_ids[slot] = sid
        cwd = rec.get("cwd") or rec.get("project")
        if t.cwd is None and isinstance(cwd, str) and _ABS_PATH.match(cwd):
            t.cwd = cwd
        branch = rec.get("gitBranch")
        # "HEAD" is what Claude Code writes outside a git repository (and on a detached HEAD): no branch.
        if (
            t.git_branch is None
            and isinstance(branch, str)
            and branch.strip() not in ("", "HEAD")
            and not re.search(r"\s", branch)
        ):
            t.git_branch = branch
        version = rec.get("version")
        if isinstance(version, str) and _VERSION.match(version):
            t.version = version
        uuid = rec.get("uuid")
        if isinstance(uuid, str) and 0 < len(uuid) <= 100:
            t.uuids.add(uuid)

    def _add(self, m: Message) -> None:
        msgs = self.t.messages
        prev = msgs[-1] if msgs else None
        if (
            prev is not None
            and m.role == "assistant"
            and prev.role == "assistant"
            and m.message_id
            and m.message_id == prev.message_id
            and m.is_sidechain == prev.is_sidechain
        ):
            # One API message written as several records (one per content block): merge them.
            prev.text = "\n\n".join(s for s in (prev.text, m.text) if s)
            prev.thinking = "\n\n".join(s for s in (prev.thinking, m.thinking) if s)
            prev.tool_uses.extend(m.tool_uses)
            prev.text_lines.extend(m.text_lines)
            prev.images += m.images
            prev.end_line = m.end_line
            return
        if m.text or m.thinking or m.tool_uses or m.tool_results or m.images or m.role == "system":
            msgs.append(m)

    def _system(self, rec: dict[str, Any], n: int, stamp: dt.datetime | None) -> Message:
        text = _str(rec.get("content"))
        err = rec.get("error")
        if not text and isinstance(err, dict):
            text = next((err[k] for k in ("message", "formatted") if isinstance(err.get(k), str)), "")
        elif not text and isinstance(err, str):
            text = err
        subtype = _str(rec.get("subtype"))
        m = Message(n, n, "system", stamp, text=text, subtype=subtype)
        self._flags(m, rec)
        return m

    def _message(
        self, rec: dict[str, Any], msg: dict[str, Any], role: str, n: int, stamp: dt.datetime | None
    ) -> Message:
        m = Message(n, n, role, stamp)
        self._flags(m, rec)
        mid = msg.get("id")
        m.message_id = mid if isinstance(mid, str) else ""
        content = msg.get("content")
        texts: list[str] = []
        thinking: list[str] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            blocks = [b for b in content if isinstance(b, (dict, str))]
            single = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result") == 1
            for i, block in enumerate(blocks):
                if isinstance(block, str):
                    texts.append(block)
                    continue
                kind = block.get("type")
                if kind == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
                elif kind == "thinking" and isinstance(block.get("thinking"), str):
                    thinking.append(block["thinking"])
                elif kind in ("tool_use", "server_tool_use"):
                    m.tool_uses.append(self._tool_use(block, n, i))
                elif kind == "tool_result":
                    m.tool_results.append(self._tool_result(block, rec, n, single=single))
                elif kind in ("image", "document"):
                    m.images += 1
        m.text = "\n\n".join(s for s in texts if s.strip())
        m.text_lines = [(n, m.text)] if m.text else []
        m.thinking = "\n\n".join(thinking)
        m.is_compact_summary = m.is_compact_summary or (role == "user" and m.text.startswith(_COMPACT_PREFIX))
        return m

    @staticmethod
    def _flags(m: Message, rec: dict[str, Any]) -> None:
        m.is_sidechain = rec.get("isSidechain") is True
        m.is_meta = rec.get("isMeta") is True
        m.is_compact_summary = rec.get("isCompactSummary") is True
        m.uuid = rec["uuid"] if isinstance(rec.get("uuid"), str) else ""
        origin = rec.get("origin")
        m.origin = origin.get("kind", "") if isinstance(origin, dict) and isinstance(origin.get("kind"), str) else ""
        m.agent_id = rec["agentId"] if isinstance(rec.get("agentId"), str) else ""

    def _tool_use(self, block: dict[str, Any], n: int, i: int) -> ToolUse:
        name = _str(block.get("name")) or "?"
        given = block.get("input")
        args: dict[str, Any] = given if isinstance(given, dict) else {}
        tid = block.get("id") if isinstance(block.get("id"), str) and block.get("id") else ""
        if not tid:
            tid = f"line{n}-{i}"
            self.pending_anonymous.append(tid)
        self.known_ids.add(tid)
        return ToolUse(name, args, tid, n)

    def _tool_result(self, block: dict[str, Any], rec: dict[str, Any], n: int, *, single: bool) -> ToolResult:
        data = rec.get("toolUseResult") if single else None
        text = _result_text(block.get("content"))
        if not text:
            text = _result_text(block.get("text")) or _result_text(block.get("output"))
        if not text and isinstance(data, dict):
            text = "\n".join(s for s in (data.get("stdout"), data.get("stderr")) if isinstance(s, str) and s)
        is_error = block.get("is_error") is True or (isinstance(data, dict) and data.get("is_error") is True)
        tid = _str(block.get("tool_use_id"))
        if not tid or tid not in self.known_ids:
            source = rec.get("sourceToolUseID")
            if isinstance(source, str) and source in self.known_ids:
                tid = source
            elif self.pending_anonymous:
                tid = self.pending_anonymous.popleft()
        result = ToolResult(tid, text, is_error, data)
        if tid and tid not in self.t.results:
            self.t.results[tid] = result
        return result


def _str(value: Any) -> str:
    """A record's field when it is a string, else "" (old or foreign records may hold anything)."""
    return value if isinstance(value, str) else ""


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type") == "image":
                    parts.append("[image]")
        return "\n".join(parts)
    return ""

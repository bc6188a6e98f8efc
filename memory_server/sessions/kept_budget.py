"""What a kept copy holds of each record, and how a session is made to fit its byte budget.

Always left out (nobody reads them, and they are most of some transcripts): the bytes of pasted images and
documents, and the signatures of thinking blocks. Everything else is kept as the parser read it.

A session whose new lines, compressed, would take the kept copy past `transcripts.keep_budget_bytes` is
written again at the next level down, until it fits or the last level is reached (kept then, over budget, and
said so): at each level every string longer than its limit is cut to its head and tail around CUT_MARK,
except the words people and the agent wrote (a message's text, a session title, Claude Code's notices),
which stay whole. Tool calls, tool output, file contents and thinking are what get cut. The text was redacted
before any of this, so a cut can only shorten what redaction already cleaned.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

from memory_server.sessions.bounds import CUT_MARK

# The longest string of tool calls, output, file contents and thinking kept at each level (None: whole).
LEVELS: tuple[int | None, ...] = (None, 16_000, 4_000, 1_000, 250)
NOT_KEPT = "[not kept]"
GZIP_LEVEL = 6


def dumps(rec: dict[str, object]) -> bytes:
    """One kept line: the record as compact JSON, UTF-8, ending in a newline (a lone surrogate as an escape)."""
    text = json.dumps(rec, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(rec, separators=(",", ":")).encode("ascii") + b"\n"


def without_bulk(value: object) -> object:
    """The record without image and document bytes or thinking signatures; a new structure where it differs
    (the parser still holds the original)."""
    if isinstance(value, list):
        return [without_bulk(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: without_bulk(v) for k, v in value.items()}
    kind = out.get("type")
    source = out.get("source")
    if kind in ("image", "document") and isinstance(source, dict) and "data" in source:
        out["source"] = {**source, "data": NOT_KEPT}
    if kind in ("thinking", "redacted_thinking") and isinstance(out.get("signature"), str):
        out["signature"] = ""
    if kind == "redacted_thinking" and isinstance(out.get("data"), str):
        out["data"] = NOT_KEPT
    return out


def _cut(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    half = max(1, cap // 2)
    return text[:half] + CUT_MARK + text[-half:]


def _spoken(rec: dict[str, object], path: tuple[str | int, ...]) -> bool:
    """Whether the string at `path` is words someone wrote: a message's text, a summary, a system notice."""
    if path in (("summary",), ("content",), ("message", "content")):
        return True
    if len(path) == 4 and path[:2] == ("message", "content") and path[3] == "text":
        message = rec.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        block = content[path[2]] if isinstance(content, list) and isinstance(path[2], int) else None
        return isinstance(block, dict) and block.get("type") == "text"
    return False


def cut_record(rec: dict[str, object], cap: int) -> dict[str, object]:
    """The record with every string but the spoken ones cut to `cap` characters (in place; returned)."""

    def walk(value: object, path: tuple[str | int, ...]) -> object:
        if isinstance(value, str):
            return value if _spoken(rec, path) else _cut(value, cap)
        if isinstance(value, dict):
            for key in list(value):
                value[key] = walk(value[key], (*path, key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                value[i] = walk(item, (*path, i))
        return value

    walk(rec, ())
    return rec


def _lines(member: Path) -> Iterator[bytes]:
    with gzip.open(member, "rb") as fh:
        yield from fh


def rewrite(member: Path, out: Path, cap: int) -> int:
    """Write `member` again into `out` with strings cut to `cap`; return the new size in bytes."""
    with (
        open(out, "wb") as raw,
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0) as gz,
    ):
        for line in _lines(member):
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            gz.write(dumps(cut_record(rec, cap)) if isinstance(rec, dict) else line)
    return out.stat().st_size


def fit(member: Path, room: int, scratch: Path) -> tuple[Path, int]:
    """The member file that fits in `room` bytes (or the last level's), and its level: 0 when it fits whole."""
    if member.stat().st_size <= room:
        return member, 0
    chosen, level = member, 0
    for level, cap in enumerate(LEVELS[1:], start=1):
        assert cap is not None
        candidate = scratch.with_name(f"{scratch.name}.{level}")
        size = rewrite(member, candidate, cap)
        if chosen is not member:
            chosen.unlink(missing_ok=True)
        chosen = candidate
        if size <= room:
            break
    return chosen, level

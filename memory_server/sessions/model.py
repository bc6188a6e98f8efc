"""The shapes a parsed Claude Code transcript takes: tool calls, tool results, messages and the transcript.

Plain data, no parsing: `parser.py` builds these from JSONL records, and `reader.py` is the entry point
the rest of the project imports them from. `Message.line` / `Message.end_line` are 1-based
JSONL line numbers.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from memory_server.sessions.redact import clean

# Caps on what one message contributes to keyword search (tool output can be whole files).
SEARCH_INPUT_CHARS = 1000
SEARCH_RESULT_CHARS = 2000


class ToolUse(NamedTuple):
    """A tool call: its name, its input, and its id (synthetic `line<N>-<i>` when the record had none)."""

    name: str
    input: dict[str, Any]
    id: str
    line: int = 0  # the JSONL line of the record that holds the call


class ToolResult(NamedTuple):
    """A tool's answer: which call it answers, its text, whether it failed, and the record's toolUseResult."""

    tool_use_id: str
    text: str
    is_error: bool
    data: Any = None


@dataclass
class Message:
    """One user, assistant, system or summary message, at JSONL lines `line`..`end_line`."""

    line: int
    end_line: int
    role: str
    timestamp: dt.datetime | None = None
    text: str = ""
    thinking: str = ""
    tool_uses: list[ToolUse] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    images: int = 0
    is_sidechain: bool = False
    is_meta: bool = False
    is_compact_summary: bool = False
    subtype: str = ""
    uuid: str = ""
    message_id: str = ""
    origin: str = ""
    agent_id: str = ""
    # Each text block with the JSONL line it was written on (a merged message spans several lines).
    text_lines: list[tuple[int, str]] = field(default_factory=list)
    leaf_uuid: str = ""  # a summary record: the message it summarises up to (often in another session)

    @property
    def search_text(self) -> str:
        """What keyword search should see: text, tool calls and (capped) tool output; no thinking; redacted."""
        parts: list[str] = [self.text] if self.text else []
        # Redacted before it is serialised and cut: a cut must never leave half a secret behind.
        for use in self.tool_uses:
            rendered = clean(json.dumps(use.input, ensure_ascii=False, sort_keys=True)) if use.input else ""
            parts.append(f"[{use.name}] {rendered[:SEARCH_INPUT_CHARS]}".rstrip())
        for res in self.tool_results:
            if res.text:
                parts.append(("[error] " if res.is_error else "") + clean(res.text)[:SEARCH_RESULT_CHARS])
        return clean("\n".join(parts)).strip()


@dataclass
class Transcript:
    """A parsed transcript: session facts, its messages in file order, and what could not be read."""

    path: Path
    session_id: str
    cwd: str | None = None
    git_branch: str | None = None
    version: str | None = None
    started: dt.datetime | None = None
    ended: dt.datetime | None = None
    messages: list[Message] = field(default_factory=list)
    line_count: int = 0  # complete lines: the last line a reader may cite
    first_line: int = 1  # messages and started/ended cover lines first_line..line_count
    bad_lines: list[int] = field(default_factory=list)
    blank_lines: int = 0
    incomplete_tail: bool = False
    record_types: Counter[str] = field(default_factory=Counter)
    results: dict[str, ToolResult] = field(default_factory=dict)
    sha256: str = ""  # of the bytes of lines 1..line_count, as read
    uuids: set[str] = field(default_factory=set)  # of every record read: tells this session's summaries from others'
    # Replies Claude Code wrote itself in the agent's place ("Not logged in", an API error, "No response
    # requested."): not the agent's words, so no message is made of them (a record never says the agent said
    # them); counted only.
    synthetic_replies: int = 0

    def result_of(self, use: ToolUse) -> ToolResult | None:
        """The result answering a tool call, if the transcript has one."""
        return self.results.get(use.id)

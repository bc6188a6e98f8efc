"""What a session did in other tools through MCP servers: issues created, tickets closed, comments posted.

    from memory_server.sessions.actions import mcp_actions
    for line, text in mcp_actions(uses):   # uses: (message, tool call, result) in transcript order
        print(line, text)                   # 193 "linear-server create_issue: ENT-241 “Run git gc at safe points…”"

Only calls that change something count: an MCP tool (`mcp__<server>__<tool>`) whose name starts with a verb
such as create, update, delete, close, post or send, and that succeeded (a rejected or failed call changed
nothing). Reads (`get_issue`, `list_projects`, `search_…`) are left out. Each action names what it touched:
the identifier the server answered with (`ENT-241`, a number, a key) or the one the call gave, its title, and
the short fields an update set ("state: Cancelled"). Texts are redacted; callers bound them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memory_server.parse.text import one_line
from memory_server.sessions.reader import Message, ToolResult, ToolUse
from memory_server.sessions.redact import clean

ACTION_CHARS = 200
_WRITE = re.compile(
    r"(?i)^(?:create|update|add|delete|remove|close|reopen|post|send|comment|reply|merge|set|move|assign|archive"
    r"|edit|write|publish|resolve|submit|cancel|complete|approve|label|link|upload)(?:_|[A-Z]|$)"
)
_IDENT_KEYS = ("identifier", "key", "number", "iid", "url")
_TITLE_KEYS = ("title", "name", "subject", "summary")
_SKIP_FIELDS = frozenset({"id", "description", "body", "content", "text", "message", "team", "project"})


def mcp_actions(uses: list[tuple[Message, ToolUse, ToolResult | None]]) -> list[tuple[int, str]]:
    """(transcript line, "server tool: identifier “title” field: value") for every MCP call that changed something."""
    out: list[tuple[int, str]] = []
    for m, use, res in uses:
        parts = use.name.split("__")
        if len(parts) < 3 or parts[0] != "mcp" or not _WRITE.match(parts[-1]):
            continue
        if res is None or res.is_error or m.is_sidechain:
            continue
        answer = _json(res.text)
        ident = _first(answer, _IDENT_KEYS) or _first(use.input, ("id", "issueId", "number", "key"))
        title = _first(use.input, _TITLE_KEYS) or _first(answer, _TITLE_KEYS)
        fields = [
            f"{k}: {v}"
            for k, v in use.input.items()
            if k not in _SKIP_FIELDS and k not in _TITLE_KEYS and isinstance(v, (str, int)) and len(str(v)) <= 40
        ]
        what = " ".join(
            s for s in (ident, f"“{one_line(title, ACTION_CHARS // 2)}”" if title else "", ", ".join(fields)) if s
        )
        out.append((m.line, clean(one_line(f"{parts[1]} {parts[-1]}: {what}".rstrip(": "), ACTION_CHARS))))
    return out


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _first(data: dict[str, Any], keys: tuple[str, ...]) -> str:
    return next((str(data[k]) for k in keys if isinstance(data.get(k), (str, int)) and str(data[k]).strip()), "")

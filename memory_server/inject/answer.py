"""What every context hook shares: the root it may read, its settings, and the JSON answer Claude Code reads.

A hook answers with `{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": TEXT}}` on stdout
(exit status 0), which every supported Claude Code version (2.1.197 and 2.1.332 are checked) adds to the
model's context for SessionStart, UserPromptSubmit and PostToolUseFailure; nothing on stdout adds nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memory_server.errors import MemoryServerError
from memory_server.files.root import MemoryRoot, is_memory_root

if TYPE_CHECKING:
    from memory_server.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HookInput:
    """The fields of a hook's JSON input the context hooks read (Claude Code sends more; absent ones are "")."""

    event: str
    session_id: str = ""
    tool_name: str = ""
    error: str = ""
    is_interrupt: bool = False
    prompt: str = ""

    @classmethod
    def of(cls, payload: Mapping[str, object], event: str) -> HookInput:
        """The input of a hook run for `event` (its `hook_event_name` when it names one)."""

        def text(key: str) -> str:
            value = payload.get(key)
            return value if isinstance(value, str) else ""

        return cls(
            text("hook_event_name") or event,
            text("session_id"),
            text("tool_name"),
            text("error"),
            payload.get("is_interrupt") is True,
            text("prompt"),
        )


def answer(event: str, text: str) -> str:
    """The hook's stdout for `text` ("" adds nothing)."""
    if not text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}, ensure_ascii=False)


def memory_root(path: Path) -> MemoryRoot | None:
    """The memory root at `path`, or None when it is not one (the hook then reads and writes nothing)."""
    return MemoryRoot(path) if is_memory_root(path) else None


def lenient_settings(root: Path) -> Settings:
    """The root's settings; the defaults when memory.yaml is broken (a hook never fails the session). Imported
    here: a hook that has nothing to do never loads the settings' models."""
    from memory_server.settings import Settings, load_settings

    try:
        return load_settings(root)
    except MemoryServerError as exc:
        log.warning("%s; using the default settings", exc)
        return Settings()

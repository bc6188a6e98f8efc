"""The SessionStart hook: tell the agent when a dream (consolidation) is due, and otherwise stay silent.

Claude Code runs `memory-server hook session-start` at the start of each session (source startup, resume,
clear or compact) with JSON on stdin:

    {"session_id": "...", "transcript_path": "...", "cwd": "...", "hook_event_name": "SessionStart",
     "source": "startup"}

Output: plain text on stdout, which Claude Code adds to the session's context (exit status 0). When a
dream is due it sets `<root>/.dream-pending` and prints one short line asking the agent to run `/dream`;
when not, it removes the flag and prints nothing, so it costs no tokens. It never fails the session: any
problem goes to stderr and the hook still exits 0. Outside a memory root it writes nothing and prints one
line on stderr.

Fast by construction: only the dream gate (a folder walk and a small JSON file), no index, no model.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_server.errors import MemoryServerError
from memory_server.files.root import is_memory_root, not_set_up_message
from memory_server.settings import Settings, load_settings

log = logging.getLogger(__name__)

MAX_CONTEXT_CHARS = 400


def context_line(waiting: int, hours_since: float | None, runs: list[str] | None = None) -> str:
    """The line the agent reads: that a dream is due, what to do, and what ends the note (`runs`: the `dream run`
    proposals over these sessions that wait for a person's review)."""
    since = "no dream has run yet" if hours_since is None else f"the last dream was {hours_since:.0f} hours ago"
    clears = f", or a person applies or dismisses `dream run` proposal {runs[-1]}" if runs else ""
    text = (
        f"Memory consolidation is due: {waiting} session summaries are new since the last dream ({since}). "
        "When the current request allows, run `/dream`: it writes a reviewable proposal for topics/ and changes "
        f"nothing until a person applies it. This note ends once /dream has read them{clears}."
    )
    return text[:MAX_CONTEXT_CHARS]


def session_start(
    payload: dict[str, Any], root: str | os.PathLike[str], *, clock: Callable[[], float] | None = None
) -> str:
    """Handle one SessionStart event for the memory root `root`; return the text to print ("" when not due)."""
    from memory_server.dream.gate import DreamGate

    if payload.get("hook_event_name", "SessionStart") != "SessionStart":
        return ""
    root_path = Path(root).expanduser()
    if not is_memory_root(root_path):
        # The plugin runs in every project: outside a memory root, write nothing and say why in one line.
        print(f"memory-server SessionStart hook: nothing to do: {not_set_up_message(root_path)}", file=sys.stderr)
        return ""
    try:
        settings = load_settings(root_path)
    except MemoryServerError as exc:
        log.warning("%s; using the default dream thresholds", exc)
        settings = Settings()
    gate = DreamGate(root_path, settings, clock=clock or time.time)
    due, reason = gate.due()
    if not due:
        gate.clear_pending()
        return ""
    state = gate.load_state()
    gate.set_pending(f"{reason}\n{gate.how_to_clear(state)}")
    last = state.get("last_dream")
    hours = None if last is None else max(0.0, (gate.clock() - float(last)) / 3600.0)
    return context_line(len(gate.unprocessed_sessions(state)), hours, gate.runs_to_review(state))

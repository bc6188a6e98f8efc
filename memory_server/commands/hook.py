"""`memory-server hook session-start | session-end | pre-compact`: what Claude Code's hooks run.

Each reads the hook's JSON on stdin. session-start prints a short line when a /dream is due (else nothing);
session-end and pre-compact queue the session's transcript and start compressing it in a detached background
process, and return at once. Every hook starts the compression of sessions still waiting in the queue. A
hook never fails the person's session: problems go to stderr, exit status 0.
The root is --root, else $MEMORY_ROOT, else $CLAUDE_PROJECT_DIR, else the hook input's `cwd`, else the current
folder: resolved here in Python, so a hook's command holds no shell syntax (it runs where bash is not the shell).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from memory_server.commands.common import common_options, given_root


@click.group(
    "hook",
    help="Claude Code hooks (read the hook JSON on stdin). session-start: print a short line when a /dream is "
    "due (else nothing). session-end and pre-compact: compress the session's transcript in a detached "
    "background process and return at once. A hook never fails the session: problems go to stderr, exit 0.",
    short_help="Claude Code hook entry points (hook JSON on stdin)",
)
@common_options
def hook() -> None:
    pass


def _read_payload(event: str) -> dict[str, Any] | None:
    try:
        raw = sys.stdin.read()
        payload = json.loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("hook input is not a JSON object")
    except (ValueError, RecursionError, OSError) as exc:  # RecursionError: JSON nested thousands deep
        click.echo(f"memory-server hook {event}: unreadable hook input ({str(exc)[:200]}); ignored", err=True)
        return None
    return payload


def _root(payload: dict[str, Any]) -> Path:
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    return Path(given_root() or cwd or os.getcwd()).expanduser()


def _run(event: str) -> None:
    payload = _read_payload(event)
    if payload is None:
        return
    try:
        root = _root(payload)
        if event == "session-start":
            from memory_server.dream.start_hook import session_start

            text = session_start(payload, root)
            if text:
                click.echo(text)
            _resume_pending(root)
            return
        from memory_server.files.root import MemoryRoot
        from memory_server.sessions.hooks import pre_compact, session_end

        handler = session_end if event == "session-end" else pre_compact
        handler(payload, MemoryRoot(root))
    except Exception as exc:  # a hook must never break the session; say what happened on stderr
        click.echo(f"memory-server hook {event}: {exc}", err=True)


def _resume_pending(root: Path) -> None:
    """Sessions a past hook queued and nothing has compressed yet: start their compression now."""
    from memory_server.files.root import MemoryRoot, is_memory_root
    from memory_server.sessions.hooks import resume_pending

    if is_memory_root(root) and not MemoryRoot(root).read_only:
        resume_pending(MemoryRoot(root))


@hook.command("session-start", help="SessionStart: print one short line when a /dream is due, else nothing.")
@common_options
def session_start_command() -> None:
    _run("session-start")


@hook.command("session-end", help="SessionEnd: compress the session's transcript in the background.")
@common_options
def session_end_command() -> None:
    _run("session-end")


@hook.command("pre-compact", help="PreCompact: compress the transcript so far, before Claude Code compacts it.")
@common_options
def pre_compact_command() -> None:
    _run("pre-compact")

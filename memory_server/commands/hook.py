"""`memory-server hook EVENT`: what Claude Code's hooks run.

Each reads the hook's JSON on stdin. The context hooks answer with JSON whose `additionalContext` Claude Code
adds to the model's context, or print nothing (memory_server/inject/): session-start the brief and a line when a
/dream is due; post-tool-use-failure the earlier fix of the same error; user-prompt-submit (when
`hooks.prompt_recall` is on) at most two memory hits. session-end and pre-compact queue the session's
transcript and start compressing it in a detached background process, and return at once. The session hooks
start the compression of sessions still waiting in the queue. A hook never fails the person's session:
problems go to stderr, exit status 0.
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
from memory_server.files.program import with_program
from memory_server.files.root import is_memory_root, not_set_up_message


@click.group(
    "hook",
    help="Claude Code hooks (read the hook JSON on stdin). session-start: the memory brief and a line when a "
    "/dream is due. post-tool-use-failure: the earlier fix of the same error. user-prompt-submit: memory hits "
    "for the prompt (when hooks.prompt_recall is on). Each prints nothing when it has nothing to add. "
    "session-end and pre-compact: compress the session's transcript in a detached background process and "
    "return at once. A hook never fails the session: problems go to stderr, exit 0.",
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
        if not is_memory_root(root):  # the plugin runs in every project: write nothing, say why in one line
            if event in ("session-start", "session-end", "pre-compact"):  # not on every prompt or failed call
                what = "nothing to do" if event == "session-start" else "nothing recorded"
                click.echo(f"memory-server {event} hook: {what}: {with_program(not_set_up_message(root))}", err=True)
            return
        if event in CONTEXT_EVENTS:
            _context(event, payload, root)
            return
        from memory_server.files.root import MemoryRoot
        from memory_server.sessions.hooks import pre_compact, session_end

        handler = session_end if event == "session-end" else pre_compact
        handler(payload, MemoryRoot(root))
    except Exception as exc:  # a hook must never break the session; say what happened on stderr
        click.echo(f"memory-server hook {event}: {with_program(str(exc))}", err=True)


CONTEXT_EVENTS = {
    "session-start": "SessionStart",
    "post-tool-use-failure": "PostToolUseFailure",
    "user-prompt-submit": "UserPromptSubmit",
}


def _context(event: str, payload: dict[str, Any], root: Path) -> None:
    """A hook that adds context: its text as Claude Code's JSON answer on stdout (nothing when it has none)."""
    from memory_server.inject.answer import HookInput, answer

    given = HookInput.of(payload, CONTEXT_EVENTS[event])
    if event == "session-start":
        from memory_server.inject.brief import session_start_context

        text = session_start_context(given, root)
    elif event == "post-tool-use-failure":
        from memory_server.inject.fixes import failure_context

        text = failure_context(given, root)
    else:
        from memory_server.inject.prompt_recall import prompt_context

        text = prompt_context(given, root)
    shown = answer(CONTEXT_EVENTS[event], text)
    if shown:
        click.echo(shown)
    if event == "session-start":
        _resume_pending(root)


def _resume_pending(root: Path) -> None:
    """Sessions a past hook queued and nothing has compressed yet: start their compression now."""
    from memory_server.files.root import MemoryRoot, is_memory_root
    from memory_server.sessions.hooks import resume_pending

    if is_memory_root(root) and not MemoryRoot(root).read_only:
        resume_pending(MemoryRoot(root))


@hook.command(
    "session-start", help="SessionStart: the memory brief and a line when a /dream is due (as JSON), else nothing."
)
@common_options
def session_start_command() -> None:
    _run("session-start")


@hook.command(
    "post-tool-use-failure",
    help="PostToolUseFailure: the earlier fix when the same error was met before (as JSON), else nothing.",
)
@common_options
def post_tool_use_failure_command() -> None:
    _run("post-tool-use-failure")


@hook.command(
    "user-prompt-submit",
    help="UserPromptSubmit: at most two memory hits for the prompt when hooks.prompt_recall is on (as JSON).",
)
@common_options
def user_prompt_submit_command() -> None:
    _run("user-prompt-submit")


@hook.command("session-end", help="SessionEnd: compress the session's transcript in the background.")
@common_options
def session_end_command() -> None:
    _run("session-end")


@hook.command("pre-compact", help="PreCompact: compress the transcript so far, before Claude Code compacts it.")
@common_options
def pre_compact_command() -> None:
    _run("pre-compact")

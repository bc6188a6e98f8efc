"""Claude Code's SessionEnd and PreCompact hooks: compress the session's transcript in the background.

Claude Code gives a SessionEnd hook 1.5 s and then kills it, so neither hook compresses anything itself, nor
imports what compresses (on a busy machine those imports alone took longer than that): each puts the transcript in
the root's queue (`sessions/pending.py`: on disk, so the session is never lost), then starts
`python -m memory_server compress --root <root> --pending --automatic` as a detached process (its own session,
stdin/stdout closed, stderr appended to `.memory/logs/compress.log`) and returns at once. The job compresses
whatever the queue holds, under the root's compression lock; when another compression holds that lock past
`COMPRESS_LOCK_SECONDS` (60 s, or $MEMORY_SERVER_COMPRESS_LOCK_SECONDS), the transcript stays queued, and the next
hook (any of them: `resume_pending` runs at SessionStart too), the server, or `memory-server compress --pending`
compresses it.

PreCompact compresses what the transcript holds so far; the SessionEnd that follows finds those lines
covered and writes only a continuation for what came after. A payload without a readable
`transcript_path` is logged and ignored: a hook must never break the person's session. In a folder that
is not a memory root (the plugin runs in every project) the hooks write nothing and say so in one line
on stderr.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from memory_server.errors import LockedError, MemoryServerError
from memory_server.files.locks import COMPRESS_LOCK, FileLock
from memory_server.files.logs import LOG_DIR, rotate
from memory_server.files.root import MemoryRoot, is_memory_root, not_set_up_message
from memory_server.sessions.pending import MAX_AUTOMATIC_ATTEMPTS, WAITING, enqueue, queued

log = logging.getLogger(__name__)

LOG_NAME = "compress.log"

_SRC_DIR = Path(__file__).resolve().parents[2]  # where `memory_server` can be imported from


def session_end(payload: dict[str, Any], root: MemoryRoot) -> None:
    """SessionEnd: start compressing the ended session's transcript in the background; return at once."""
    _start(payload, root, "SessionEnd")


def pre_compact(payload: dict[str, Any], root: MemoryRoot) -> None:
    """PreCompact: compress the transcript so far, before Claude Code compacts the conversation."""
    _start(payload, root, "PreCompact")


COMPRESS_LOCK_SECONDS = 60.0
LOCK_SECONDS_ENV = "MEMORY_SERVER_COMPRESS_LOCK_SECONDS"


def spawn_compression(transcript: Path, root: MemoryRoot, event: str = "SessionEnd") -> subprocess.Popen[bytes]:
    """Queue one transcript and start the detached job that drains the queue; return without waiting."""
    enqueue(root, transcript, f"queued by {event}; the compression job has not finished it yet")
    return spawn_drain(root)


def resume_pending(root: MemoryRoot) -> subprocess.Popen[bytes] | None:
    """Start a drain job when transcripts wait in the queue and no compression is running; else None."""
    if not [p for p in queued(root) if p.state == WAITING or p.attempts < MAX_AUTOMATIC_ATTEMPTS]:
        return None
    if not compression_idle(root):
        return None  # the running job drains the queue when it is done with its transcript
    return spawn_drain(root)


def spawn_drain(root: MemoryRoot) -> subprocess.Popen[bytes]:
    """Start the detached job that compresses what the queue holds."""
    log_file = log_path(root)
    rotate(log_file)  # once, to compress.log.1, past LOG_MAX_BYTES
    env = dict(os.environ)
    # The job must import this same package even when it is not installed (a checkout, a test run).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_SRC_DIR), env.get("PYTHONPATH", "")) if p)
    with open(log_file, "ab") as err:
        wait = os.environ.get(LOCK_SECONDS_ENV) or str(COMPRESS_LOCK_SECONDS)
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memory_server",
                "compress",
                "--verbose",
                "--root",
                str(root.path),
                "--pending",
                "--automatic",
                "--lock-timeout",
                wait,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=str(root.path),
            env=env,
            start_new_session=True,  # outlives the hook, and Claude Code's signals to it
            close_fds=True,
        )


def log_path(root: MemoryRoot) -> Path:
    """Where the background compression job writes its log."""
    return root.ensure_state_dir() / LOG_DIR / LOG_NAME


def _start(payload: dict[str, Any], root: MemoryRoot, event: str) -> None:
    if not is_memory_root(root.path):
        # The plugin runs for every project; only a folder set up as memory gets session records.
        print(f"memory-server {event} hook: nothing recorded: {not_set_up_message(root.path)}", file=sys.stderr)
        return
    transcript = _transcript_path(payload)
    if transcript is None:
        log.warning("%s hook: no transcript_path in the hook input; nothing to compress", event)
        return
    if not transcript.is_file() or not os.access(transcript, os.R_OK):
        log.warning("%s hook: transcript %s is missing or unreadable; nothing to compress", event, transcript)
        return
    try:
        proc = spawn_compression(transcript, root, event)
    except (OSError, MemoryServerError) as exc:
        log.error("%s hook: could not queue or start the compression job for %s: %s", event, transcript, exc)
        return
    log.info("%s hook: compressing %s in the background (pid %d)", event, transcript, proc.pid)


def _transcript_path(payload: Any) -> Path | None:
    value = payload.get("transcript_path") if isinstance(payload, dict) else None
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        return None
    return Path(value).expanduser()


def compression_idle(root: MemoryRoot) -> bool:
    """True when no process holds the root's compression lock right now."""
    lock = FileLock(root.ensure_state_dir() / COMPRESS_LOCK, "busy")
    try:
        with lock.held(0):
            return True
    except LockedError:
        return False

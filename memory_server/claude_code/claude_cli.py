"""Running Claude Code's own command line (`claude plugin ...`) to install or remove the plugin."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from memory_server.errors import SetupError

CLAUDE_TIMEOUT = 180.0


def find_claude(given: str | None) -> str:
    """`--claude PATH` when given, else `claude` on PATH."""
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise SetupError(f"--claude {given}: no such file; give the path of Claude Code's `claude`")
        return str(path)
    found = shutil.which("claude")
    if not found:
        raise SetupError(
            "Claude Code's `claude` is not on PATH: install Claude Code (`npm install -g @anthropic-ai/claude-code`, "
            "which needs Node.js 22 or newer), or give its path with --claude PATH"
        )
    return found


def run_claude(claude: str, *args: str) -> str:
    """Run `claude ARGS...`; return what it printed, or raise with its output when it fails."""
    try:
        done = subprocess.run(
            [claude, *args],
            capture_output=True,
            text=True,
            timeout=CLAUDE_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"`claude {' '.join(args)}` did not run: {exc}") from exc
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise SetupError(f"`claude {' '.join(args)}` failed (exit {done.returncode}): {output[-2000:]}")
    return output

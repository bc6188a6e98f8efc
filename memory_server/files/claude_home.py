"""Claude Code's own folder (`~/.claude`, or `$CLAUDE_CONFIG_DIR`): where it keeps each project's transcripts
and auto memory, and the two user settings this program reads (`cleanupPeriodDays`, `autoMemoryDirectory`).

Claude Code names a project's folder under `projects/` after a path with every character but ASCII letters and
digits replaced by `-` (one `-` per UTF-16 code unit, as JavaScript counts them); a name longer than 200
characters keeps its first 200 and gains `-<hash>`, which is found here by its prefix. Its auto memory lives
in `projects/<name>/memory/`, named after the repository's main working copy (so every worktree of a repository
shares one), else the git root, else the project folder; `autoMemoryDirectory` in the user's settings moves it.

Only reads: nothing here ever writes into Claude Code's folder. The settings file is read bounded, and
anything wrong in it (not JSON, a wrong type, too large) gives the defaults and a note saying why.
"""

from __future__ import annotations

import json
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CLEANUP_DAYS = 30  # Claude Code's default for cleanupPeriodDays
SETTINGS_MAX_BYTES = 1 << 20
LONG_NAME = 200  # Claude Code shortens a project folder name past this many characters


def config_dir() -> Path:
    """Claude Code's folder: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()


def projects_dir() -> Path:
    return config_dir() / "projects"


def folder_name(path: Path | str) -> str:
    """The name Claude Code gives the folder of a project at `path` (before shortening a long one)."""
    text = unicodedata.normalize("NFC", str(path))
    return "".join(c if c.isascii() and c.isalnum() else "-" * (2 if ord(c) > 0xFFFF else 1) for c in text)


def project_folder(path: Path | str) -> Path:
    """`projects/<name>` for a project at `path`; a long name is found by its first 200 characters."""
    name = folder_name(path)
    base = projects_dir()
    if len(name) <= LONG_NAME:
        return base / name
    prefix = name[:LONG_NAME] + "-"
    try:
        found = sorted(e.name for e in os.scandir(base) if e.name.startswith(prefix) and e.is_dir())
    except OSError:
        found = []
    return base / (found[0] if len(found) == 1 else prefix)


def git_roots(path: Path) -> list[Path]:
    """The repository's main working copy and the git root that hold `path` (the same folder outside a
    worktree), most shared first; [] outside git."""
    for folder in [path, *path.parents]:
        marker = folder / ".git"
        if marker.is_dir():
            return [folder]
        if marker.is_file():
            main = _main_working_copy(marker)
            return [main, folder] if main is not None and main != folder else [folder]
    return []


def _main_working_copy(marker: Path) -> Path | None:
    """For a worktree's `.git` file (`gitdir: <repo>/.git/worktrees/<name>`), the main working copy."""
    try:
        text = marker.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:") or not first[7:].strip():
        return None
    gitdir = Path(first[7:].strip())
    gitdir = gitdir if gitdir.is_absolute() else (marker.parent / gitdir)
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    common_dir = (gitdir / common).resolve()
    return common_dir.parent if common_dir.name == ".git" else None


@dataclass(frozen=True)
class ClaudeCodeSettings:
    """What this program reads from Claude Code's user settings, with where it came from."""

    cleanup_period_days: int = DEFAULT_CLEANUP_DAYS
    auto_memory_directory: str | None = None
    source: str = "Claude Code's default"
    problem: str | None = None  # why the file was not used, when it exists and could not be


def user_settings() -> ClaudeCodeSettings:
    """`cleanupPeriodDays` (a whole number of at least 1; default 30) and `autoMemoryDirectory` from Claude
    Code's user settings (`settings.json` in its folder)."""
    path = config_dir() / "settings.json"
    data, problem = _read_json(path)
    if data is None:
        return ClaudeCodeSettings(problem=problem)
    days = data.get("cleanupPeriodDays", DEFAULT_CLEANUP_DAYS)
    if isinstance(days, bool) or not isinstance(days, int) or days < 1:
        problem = f"{path}: cleanupPeriodDays {str(days)[:40]!r} is not a whole number of days; reading it as 30"
        days = DEFAULT_CLEANUP_DAYS
    directory = data.get("autoMemoryDirectory")
    directory = directory if isinstance(directory, str) and directory.strip() and "\x00" not in directory else None
    return ClaudeCodeSettings(days, directory, str(path), problem)


def _read_json(path: Path) -> tuple[dict[str, object] | None, str | None]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(SETTINGS_MAX_BYTES + 1)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read {path} ({exc.strerror}); using Claude Code's defaults"
    if len(raw) > SETTINGS_MAX_BYTES:
        return None, f"{path} is over {SETTINGS_MAX_BYTES} bytes; not read, using Claude Code's defaults"
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None, f"{path} is not valid JSON; using Claude Code's defaults"
    if not isinstance(data, dict):
        return None, f"{path} does not hold a JSON object; using Claude Code's defaults"
    return data, None


def expand_home(value: str) -> Path:
    """A folder named in Claude Code's settings: `~/` is the home folder, as Claude Code reads it."""
    return Path(os.path.expanduser(value))

"""`memory-server hooks install | uninstall`: the plugin's hooks in Claude Code's settings, for the
`claude mcp add` route (a server registered by hand has no hooks, so no session would ever be recorded).

The hooks are the ones `plugin/hooks/hooks.json` declares (same events, matchers, timeouts and memory-server
arguments, and the same exec form: no shell); only the program differs: the plugin's launcher there, this
installation's own `memory-server` (by absolute path, never looked up on PATH) here. With `--root DIR` every
hook gets `--root DIR`, matching a server registered with `serve --root DIR`; without it the hooks use
$MEMORY_ROOT, else the project.

Installing replaces the hooks an earlier install wrote and leaves every other setting and hook alone, so
running it again changes nothing; uninstalling removes only them.
"""

from __future__ import annotations

import json
import os
import re
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_server.claude_code.plugin_files import HookSpec
from memory_server.errors import SetupError
from memory_server.files.writing import atomic_write

# A hook this module wrote: memory-server (by path, or `-m memory_server`), then `hook <event>`.
OURS = re.compile(
    r"(?:memory-server(?:\.exe)?|-m memory_server) hook "
    r"(?:session-start|session-end|pre-compact|post-tool-use-failure|user-prompt-submit)\b"
)


@dataclass(frozen=True)
class HooksChange:
    """What an install or uninstall did to one settings file."""

    path: Path
    events: tuple[str, ...]
    changed: bool


def settings_path(scope: str, project: Path) -> Path:
    """Claude Code's settings file for a scope: the user's, the project's (shared) or the project's local one."""
    if scope == "user":
        config = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(config).expanduser() if config else Path.home() / ".claude") / "settings.json"
    name = "settings.json" if scope == "project" else "settings.local.json"
    return project / ".claude" / name


def program_words() -> list[str]:
    """This installation's memory-server: its script beside this Python, else this Python with `-m`."""
    name = "memory-server.exe" if os.name == "nt" else "memory-server"
    script = Path(sysconfig.get_path("scripts")) / name
    if script.is_file():
        return [str(script.absolute())]
    return [str(Path(sys.executable).absolute()), "-P", "-m", "memory_server"]


def hook_entry(spec: HookSpec, program: list[str], root: Path | None) -> dict[str, Any]:
    """One hook in exec form: the program and its arguments, run without a shell."""
    hook: dict[str, Any] = {
        "type": "command",
        "command": program[0],
        "args": [*program[1:], *spec.args, *(["--root", str(root)] if root else [])],
    }
    if spec.timeout is not None:
        hook["timeout"] = spec.timeout
    return hook


def is_ours(hook: Any) -> bool:
    if not isinstance(hook, dict):
        return False
    words = [str(hook.get("command", "")), *(str(a) for a in hook.get("args") or [] if isinstance(a, str))]
    return OURS.search(" ".join(words)) is not None


def load_settings(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SetupError(f"cannot read {path}: {exc}") from exc
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise SetupError(f"{path} is not valid JSON ({exc}): fix it, then run the command again") from exc
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise SetupError(f"{path} is not a Claude Code settings object with a `hooks` object: fix it first")
    return data


def without_ours(hooks: dict[str, Any]) -> dict[str, Any]:
    """`hooks` minus every hook this module wrote (and the groups and events left empty)."""
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        new_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                new_groups.append(group)
                continue
            rest = [h for h in inner if not is_ours(h)]
            if rest:
                new_groups.append({**group, "hooks": rest})
        if new_groups:
            kept[event] = new_groups
    return kept


def with_ours(hooks: dict[str, Any], specs: list[HookSpec], program: list[str], root: Path | None) -> dict[str, Any]:
    out = without_ours(hooks)
    for spec in specs:
        group: dict[str, Any] = {"matcher": spec.matcher} if spec.matcher is not None else {}
        out.setdefault(spec.event, []).append({**group, "hooks": [hook_entry(spec, program, root)]})
    return out


def write_hooks(path: Path, settings: dict[str, Any], hooks: dict[str, Any]) -> bool:
    new = {**settings, "hooks": hooks} if hooks else {k: v for k, v in settings.items() if k != "hooks"}
    if new == settings:
        return False
    atomic_write(path, json.dumps(new, indent=2, ensure_ascii=False) + "\n")
    return True


def install_hooks(path: Path, specs: list[HookSpec], root: Path | None) -> HooksChange:
    settings = load_settings(path)
    hooks = with_ours(settings.get("hooks", {}), specs, program_words(), root)
    changed = write_hooks(path, settings, hooks)
    return HooksChange(path, tuple(dict.fromkeys(s.event for s in specs)), changed)


def uninstall_hooks(path: Path) -> HooksChange:
    settings = load_settings(path)
    before = settings.get("hooks", {})
    after = without_ours(before)
    removed = tuple(e for e in before if json.dumps(before[e]) != json.dumps(after.get(e)))
    changed = write_hooks(path, settings, after) if removed else False
    return HooksChange(path, removed, changed)

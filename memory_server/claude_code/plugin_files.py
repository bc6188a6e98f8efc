"""The Claude Code plugin's files, wherever this installation keeps them, and what they declare.

In a clone (and an editable install) the plugin is the repository's `plugin/` folder; a wheel ships the same
files as `memory_server/claude_plugin/` (pyproject.toml maps one onto the other).

Every hook in `hooks/hooks.json` runs the plugin's launcher in exec form (no shell, so nothing depends on
which shell Claude Code has): `"command": "${user_config.python}"`, `"args": ["${CLAUDE_PLUGIN_ROOT}/bin/
memory-server", "hook", "<event>"]`. What follows the launcher is the memory-server command the hook runs;
`declared_hooks` returns it, so that the hooks installed into Claude Code's settings (the `claude mcp add`
route) are exactly the plugin's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import memory_server
from memory_server.errors import SetupError

PLUGIN_NAME = "memory-server"
LAUNCHER = "bin/memory-server"
MANIFEST = ".claude-plugin/plugin.json"
HOOKS_FILE = "hooks/hooks.json"
# The files that make the plugin (copied by `memory-server plugin install`); the skills are added by walking.
PLUGIN_FILES = (MANIFEST, ".mcp.json", HOOKS_FILE, LAUNCHER)


@dataclass(frozen=True)
class HookSpec:
    """One hook of the plugin: the Claude Code event, its matcher, timeout, and the memory-server arguments."""

    event: str
    args: tuple[str, ...]
    timeout: int | None
    matcher: str | None = None


def plugin_source() -> Path:
    """The plugin folder this installation ships: the clone's `plugin/`, else the wheel's `claude_plugin/`."""
    package = Path(memory_server.__file__).resolve().parent
    for folder in (package.parent / "plugin", package / "claude_plugin"):
        if (folder / MANIFEST).is_file() and (folder / HOOKS_FILE).is_file():
            return folder
    raise SetupError(
        f"the Claude Code plugin's files are not installed beside {package}: reinstall memory-server "
        "(`pip install --force-reinstall memory-server`, or `pip install -e .` in a clone)"
    )


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SetupError(f"cannot read {path}: {exc}; reinstall memory-server") from exc
    if not isinstance(data, dict):
        raise SetupError(f"{path} is not a JSON object; reinstall memory-server")
    return data


def manifest(plugin: Path) -> dict[str, Any]:
    return read_json(plugin / MANIFEST)


def plugin_files(plugin: Path) -> list[str]:
    """Every file of the plugin, relative to its folder (the fixed files, then each skill's files)."""
    skills = sorted(p.relative_to(plugin).as_posix() for p in (plugin / "skills").rglob("*") if p.is_file())
    return [*PLUGIN_FILES, *skills]


def hook_args(hook: dict[str, Any]) -> tuple[str, ...]:
    """The memory-server arguments of a hook that runs the launcher (args: `.../bin/memory-server hook X`)."""
    args = hook.get("args")
    if not isinstance(args, list) or len(args) < 2 or not str(args[0]).endswith(LAUNCHER):
        raise SetupError(f"unexpected hook in the plugin's {HOOKS_FILE}: {hook!r}; reinstall memory-server")
    return tuple(str(a) for a in args[1:])


def declared_hooks(plugin: Path) -> list[HookSpec]:
    """The plugin's hooks, in the order `hooks/hooks.json` declares them."""
    data = read_json(plugin / HOOKS_FILE).get("hooks")
    if not isinstance(data, dict):
        raise SetupError(f"{plugin / HOOKS_FILE} has no `hooks` object; reinstall memory-server")
    specs: list[HookSpec] = []
    for event, groups in data.items():
        for group in groups:
            for hook in group.get("hooks", []):
                timeout = hook.get("timeout")
                specs.append(
                    HookSpec(
                        event=event,
                        args=hook_args(hook),
                        timeout=timeout if isinstance(timeout, int) else None,
                        matcher=group.get("matcher"),
                    )
                )
    return specs

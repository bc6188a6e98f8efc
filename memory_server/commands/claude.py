"""`memory-server plugin install | uninstall` and `memory-server hooks install | uninstall`: wiring this
installation into Claude Code (memory_server/claude_code/)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from memory_server.commands.common import common_options, explicit_root

CLAUDE_OPTION = click.option(
    "--claude", "claude_path", metavar="PATH", help="Claude Code's `claude` program (default: `claude` on PATH)"
)
SCOPE_OPTION = click.option(
    "--scope",
    type=click.Choice(["user", "project", "local"]),
    default="user",
    show_default=True,
    help="user: ~/.claude/settings.json (every project); project: .claude/settings.json here (shared with the "
    "team); local: .claude/settings.local.json here (yours only)",
)


@click.group(
    "plugin",
    help="Install the Claude Code plugin (the memory server, the session hooks and /dream) for this installation "
    "of memory-server: it runs this installation by its absolute path, never a `memory-server` found on PATH.",
    short_help="install or remove the Claude Code plugin",
)
@common_options
def plugin() -> None:
    pass


@plugin.command(
    "install",
    help="Copy the plugin to a folder of its own (~/.local/share/memory-server/claude-plugin), record this "
    "installation in it, and install it with `claude plugin marketplace add` and `claude plugin install`. Run "
    "it again after moving or reinstalling memory-server; it changes only what is out of date.",
)
@CLAUDE_OPTION
@common_options
def plugin_install(claude_path: str | None) -> None:
    from memory_server.claude_code.claude_cli import find_claude
    from memory_server.claude_code.plugin_install import install_plugin

    claude = find_claude(claude_path)
    result = install_plugin(claude)
    if not result.changed:
        click.echo(result.lines[0])
        return
    for line in result.lines:
        click.echo(f"done: {line}")
    from memory_server.claude_code.settings_hooks import program_words

    click.echo(
        "Next: make a memory root in a project, then start Claude Code there; `claude mcp list` shows "
        f"plugin:memory-server:memory connected. For example: {' '.join(program_words())} init --root ~/src/myapp"
    )


@plugin.command("uninstall", help="Remove the plugin, its marketplace and its folder (your memory stays).")
@CLAUDE_OPTION
@common_options
def plugin_uninstall(claude_path: str | None) -> None:
    from memory_server.claude_code.claude_cli import find_claude
    from memory_server.claude_code.plugin_install import uninstall_plugin

    for line in uninstall_plugin(find_claude(claude_path)):
        click.echo(line)


@click.group(
    "hooks",
    help="Install the plugin's session hooks into Claude Code's settings, for a server registered with `claude mcp "
    "add` (without hooks no session is ever recorded). Not needed with the plugin, which has them.",
    short_help="install or remove the session hooks (for `claude mcp add`)",
)
@common_options
def hooks() -> None:
    pass


@hooks.command(
    "install",
    help="Add the SessionStart, SessionEnd and PreCompact hooks of plugin/hooks/hooks.json to Claude Code's "
    "settings, running this installation by its absolute path. With --root DIR they use that memory root (give "
    "the root your `serve --root` has); without it, $MEMORY_ROOT, else the project. Running it again changes "
    "nothing.",
)
@SCOPE_OPTION
@common_options
def hooks_install(scope: str) -> None:
    from memory_server.claude_code.plugin_files import declared_hooks, plugin_source
    from memory_server.claude_code.settings_hooks import install_hooks, settings_path
    from memory_server.errors import SetupError
    from memory_server.files.root import is_memory_root

    root = explicit_root()
    if root is not None:
        root = root.resolve()
        if not is_memory_root(root):
            raise SetupError(f"{root} is not a memory root: run `memory-server init --root {root}` first")
    change = install_hooks(settings_path(scope, Path(os.getcwd())), declared_hooks(plugin_source()), root)
    events = ", ".join(change.events)
    if change.changed:
        click.echo(f"added the {events} hooks to {change.path}" + (f" (memory root {root})" if root else ""))
    else:
        click.echo(f"the {events} hooks are already in {change.path}; nothing changed")


@hooks.command("uninstall", help="Remove the hooks `hooks install` added (every other setting stays).")
@SCOPE_OPTION
@common_options
def hooks_uninstall(scope: str) -> None:
    from memory_server.claude_code.settings_hooks import settings_path, uninstall_hooks

    change = uninstall_hooks(settings_path(scope, Path(os.getcwd())))
    if change.changed:
        click.echo(f"removed the {', '.join(change.events)} hooks from {change.path}")
    else:
        click.echo(f"no memory-server hooks in {change.path}; nothing changed")

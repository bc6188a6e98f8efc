"""`memory-server plugin install`: the Claude Code plugin, wired to this installation, in a folder of its own.

The plugin must run exactly the installation the person made, found without PATH (another package installs a
`memory-server` program too, and a folder just added to PATH is not on it until the next login). So this:

1. copies the plugin's files to `<data home>/memory-server/claude-plugin/plugin/` (`~/.local/share` or
   $XDG_DATA_HOME; %LOCALAPPDATA% on Windows), a marketplace folder of its own: it outlives a moved or
   deleted clone, which Claude Code would otherwise drop without a word;
2. writes beside the launcher (`bin/memory-server`) the installation it runs (`bin/installation.json`: this
   Python), and puts this installation's base Python in the launcher's first line (the /dream skill runs it
   directly);
3. runs `claude plugin marketplace add` on that folder and `claude plugin install` with `--config
   python=<base Python>`, the plugin option the server and the hooks are started with.

The base Python outlives a moved virtual environment, so when the recorded installation is gone the launcher
still runs and says how to fix it. Running the command again (after an upgrade, a move, another venv)
rewrites the folder and the option; Claude Code loads a folder marketplace in place.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from memory_server import __version__
from memory_server.claude_code.claude_cli import run_claude
from memory_server.claude_code.plugin_files import LAUNCHER, PLUGIN_NAME, manifest, plugin_files, plugin_source
from memory_server.errors import SetupError
from memory_server.parse.text import as_data

MARKETPLACE = "memory-server"
PLUGIN_ID = f"{PLUGIN_NAME}@{MARKETPLACE}"
RECORD = "bin/installation.json"
LAUNCHER_EXEC_LINE = "'''exec' python3 \"$0\" \"$@\""


def data_home() -> Path:
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def marketplace_dir() -> Path:
    """Where `plugin install` keeps the plugin (a marketplace folder of its own)."""
    return data_home() / "memory-server" / "claude-plugin"


def installation_python() -> Path:
    """This installation's Python (a virtual environment's own, not resolved to its base)."""
    return Path(sys.executable).absolute()


def launcher_python() -> Path:
    """The Python that runs the launcher: this installation's base interpreter, which outlives a moved venv."""
    return Path(getattr(sys, "_base_executable", None) or sys.executable).absolute()


def marketplace_manifest(plugin: dict[str, object]) -> dict[str, object]:
    return {
        "name": MARKETPLACE,
        "description": "memory-server's Claude Code plugin, as `memory-server plugin install` set it up.",
        "owner": plugin.get("author") or {"name": "memory-server"},
        "plugins": [
            {
                "name": PLUGIN_NAME,
                "source": "./plugin",
                "description": plugin.get("description", ""),
                "version": plugin.get("version", __version__),
                "category": "productivity",
            }
        ],
    }


def write_launcher(path: Path, python: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if LAUNCHER_EXEC_LINE not in text:
        raise SetupError(f"{path} is not the plugin's launcher; reinstall memory-server")
    text = text.replace(LAUNCHER_EXEC_LINE, f"'''exec' {shlex.quote(str(python))} \"$0\" \"$@\"", 1)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


def build_marketplace(folder: Path, source: Path, python: Path, installation: Path) -> None:
    """The marketplace folder: `.claude-plugin/marketplace.json` and `plugin/`, wired to `installation`."""
    plugin = folder / "plugin"
    for rel in plugin_files(source):
        (plugin / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, plugin / rel)
    write_launcher(plugin / LAUNCHER, python)
    record = {"python": str(installation), "version": __version__}
    (plugin / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    market = folder / ".claude-plugin" / "marketplace.json"
    market.parent.mkdir(parents=True, exist_ok=True)
    market.write_text(json.dumps(marketplace_manifest(manifest(source)), indent=2) + "\n", encoding="utf-8")


def _tree(folder: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file under `folder`: relative path -> (content, executable), for comparing two builds."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), os.access(p, os.X_OK))
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def replace_folder(target: Path, source: Path, python: Path, installation: Path) -> bool:
    """Build the new folder beside the old one, then swap them, so a failed copy leaves the old plugin.
    Returns whether anything changed (a folder identical to the new build is left as it is)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fresh = target.with_name(f".{target.name}.new-{os.getpid()}")
    stale = target.with_name(f".{target.name}.old-{os.getpid()}")
    shutil.rmtree(fresh, ignore_errors=True)
    try:
        build_marketplace(fresh, source, python, installation)
        if target.is_dir() and _tree(target) == _tree(fresh):
            return False
        if target.exists():
            target.rename(stale)
        fresh.rename(target)
        return True
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.rmtree(stale, ignore_errors=True)


@dataclass(frozen=True)
class PluginInstall:
    """What `plugin install` did: one line per step, and whether anything changed."""

    lines: list[str]
    changed: bool


def recorded_installation(target: Path) -> str | None:
    """The installation an installed plugin folder runs, as its record says; None when there is none."""
    try:
        python = json.loads((target / "plugin" / RECORD).read_text(encoding="utf-8")).get("python")
    except (OSError, ValueError, AttributeError):
        return None
    return python if isinstance(python, str) else None


def install_plugin(claude: str) -> PluginInstall:
    """Install (or refresh) the plugin for this installation. Claude Code's commands run every time (they
    change nothing when all is in place); it reports "nothing changed" when the plugin files were already
    these and Claude Code says the plugin was already installed."""
    target, python, installation = marketplace_dir(), launcher_python(), installation_python()
    if not python.is_file():
        raise SetupError(f"this installation's base Python {python} does not exist; reinstall memory-server")
    before = recorded_installation(target)
    files_changed = replace_folder(target, plugin_source(), python, installation)
    what = f"memory-server {__version__}, running {installation}"
    done = [f"plugin files: {target} ({what})" if files_changed else f"plugin files: {target} already up to date"]
    if before is not None and before != str(installation):
        done.append(f"replaced: the plugin ran {as_data(before)}; it now runs {installation}")
    run_claude(claude, "plugin", "marketplace", "add", str(target))
    done.append(f"claude plugin marketplace add {target}")
    said = run_claude(claude, "plugin", "install", PLUGIN_ID, "--scope", "user", "--config", f"python={python}")
    done.append(f"claude plugin install {PLUGIN_ID} --scope user --config python={python}")
    if not files_changed and "already installed" in said:
        return PluginInstall([f"already installed, nothing changed: {what}, in {target}"], changed=False)
    return PluginInstall(done, changed=True)


def uninstall_plugin(claude: str) -> list[str]:
    """Remove the plugin, its marketplace and its folder; return what was done (or found absent)."""
    done: list[str] = []
    for args, what in (
        (("plugin", "uninstall", PLUGIN_ID), f"claude plugin uninstall {PLUGIN_ID}"),
        (("plugin", "marketplace", "remove", MARKETPLACE), f"claude plugin marketplace remove {MARKETPLACE}"),
    ):
        try:
            run_claude(claude, *args)
            done.append(what)
        except SetupError as exc:
            done.append(f"{what}: nothing to do ({str(exc).splitlines()[0][-200:]})")
    target = marketplace_dir()
    if target.exists():
        shutil.rmtree(target)
        done.append(f"removed {target}")
    with contextlib.suppress(OSError):  # the data folder too, when nothing else is left in it
        target.parent.rmdir()
        done.append(f"removed {target.parent} (empty)")
    return done

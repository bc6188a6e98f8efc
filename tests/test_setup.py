"""Wiring memory-server in: `init` in a project that already has files, `hooks install | uninstall` for the
`claude mcp add` route, and the plugin folder `plugin install` writes. The command line runs in process
(CliRunner); tests/test_plugin.py runs the same with the real Claude Code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from memory_server.files.scaffold import init_root

# What init adds to an existing project (the same text the CLAUDE.md it writes carries).
IMPORT_LINE = "@MEMORY.md"
PRECEDENCE_HEADING = "# Memory precedence\n"
GITIGNORE_LINES = ".memory/\n.dream-pending\n"

# -- init in an existing project ------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with its own CLAUDE.md and .gitignore, never set up as memory."""
    p = tmp_path / "myapp"
    p.mkdir()
    (p / "CLAUDE.md").write_text("# My app\n\nUse tabs, not spaces.\n", encoding="utf-8")
    (p / ".gitignore").write_text("node_modules/\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=p, check=True)
    return p


def files_of(project: Path) -> dict[str, bytes]:
    return {rel: (project / rel).read_bytes() for rel in ("CLAUDE.md", ".gitignore", "MEMORY.md")}


def git_status(project: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=project, capture_output=True, text=True
    ).stdout


def test_init_wires_itself_into_an_existing_project_and_says_what_it_changed(project: Path) -> None:
    done = run_cli("init", "--root", str(project))
    assert done.returncode == 0, done
    assert f"changed {project / 'CLAUDE.md'}: added the `@MEMORY.md` import" in done.stdout, done.stdout
    assert "and the memory precedence rule" in done.stdout
    assert f"changed {project / '.gitignore'}: added .memory/, .dream-pending" in done.stdout, done.stdout
    claude_md = (project / "CLAUDE.md").read_text(encoding="utf-8")
    assert claude_md.startswith("# My app\n\nUse tabs, not spaces.\n"), "the project's own text stays first"
    assert f"\n{IMPORT_LINE}\n" in claude_md and PRECEDENCE_HEADING in claude_md and "asks you to remember" in claude_md
    ignore = (project / ".gitignore").read_text(encoding="utf-8")
    assert ignore.startswith("node_modules/\n") and ".memory/\n" in ignore and ".dream-pending\n" in ignore

    # What the hooks and the server leave in the project never shows up in `git status`.
    (project / ".dream-pending").write_text("", encoding="utf-8")
    (project / ".memory" / "logs").mkdir(parents=True)
    (project / ".memory" / "logs" / "server.log").write_text("x\n", encoding="utf-8")
    status = git_status(project)
    assert ".dream-pending" not in status and ".memory" not in status, status

    before = files_of(project)
    again = run_cli("init", "--root", str(project))
    assert again.returncode == 0 and again.stdout == f"{project} is already a memory root; nothing changed\n"
    assert files_of(project) == before


def test_init_no_edit_prints_exactly_what_to_add(project: Path) -> None:
    claude_before = (project / "CLAUDE.md").read_bytes()
    done = run_cli("init", "--no-edit", "--root", str(project))
    assert done.returncode == 0, done
    assert (project / "CLAUDE.md").read_bytes() == claude_before and (project / "MEMORY.md").is_file()
    assert "not changed (--no-edit): add the `@MEMORY.md` import" in done.stdout
    claude_part = done.stdout.split("these lines:\n")[1].split("not changed (--no-edit)")[0]
    gitignore_part = done.stdout.split("these lines:\n")[2]
    assert claude_part.startswith(f"{IMPORT_LINE}\n\n{PRECEDENCE_HEADING}") and gitignore_part.endswith(GITIGNORE_LINES)

    # Adding exactly what it printed, by hand, leaves init nothing to do.
    with open(project / "CLAUDE.md", "a", encoding="utf-8") as f:
        f.write("\n" + claude_part)
    with open(project / ".gitignore", "a", encoding="utf-8") as f:
        f.write(gitignore_part)
    again = run_cli("init", "--root", str(project))
    assert again.stdout == f"{project} is already a memory root; nothing changed\n", again.stdout


def test_init_adds_only_what_is_missing_and_never_edits_through_a_link_out(project: Path, tmp_path: Path) -> None:
    (project / "CLAUDE.md").write_text(f"# My app\n\n{IMPORT_LINE}\n", encoding="utf-8")
    (project / ".gitignore").write_text("/.memory\n", encoding="utf-8")
    done = run_cli("init", "--root", str(project))
    assert "added the memory precedence rule" in done.stdout and "import" not in done.stdout.split("CLAUDE.md")[1]
    assert "added .dream-pending" in done.stdout, done.stdout
    assert (project / "CLAUDE.md").read_text(encoding="utf-8").count(IMPORT_LINE) == 1

    shared = tmp_path / "shared-CLAUDE.md"  # one CLAUDE.md for several projects, outside this root
    shared.write_text("# Team rules\n", encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    (other / "CLAUDE.md").symlink_to(shared)
    done = run_cli("init", "--root", str(other))
    assert "not changed (it links outside the memory root)" in done.stdout, done.stdout
    assert shared.read_text(encoding="utf-8") == "# Team rules\n" and (other / "CLAUDE.md").is_symlink()


def test_a_new_root_gets_the_whole_claude_md() -> None:
    """`init` in an empty folder writes CLAUDE.md with the import first and the rule (nothing to wire)."""
    from memory_server.files.scaffold import CLAUDE_TEMPLATE

    assert CLAUDE_TEMPLATE.startswith(f"{IMPORT_LINE}\n\n# Memory precedence")
    assert "asks you to remember" in CLAUDE_TEMPLATE, "the agent is told to write what it is asked to remember"


# -- hooks install | uninstall --------------------------------------------------------------------------


def settings_of(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def our_hooks(settings: dict) -> dict[str, list[dict]]:
    return {event: [h for g in groups for h in g["hooks"]] for event, groups in settings.get("hooks", {}).items()}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".claude").mkdir(parents=True)
    return h


def test_hooks_install_writes_the_plugins_hooks_and_running_it_again_changes_nothing(
    home: Path, tmp_path: Path
) -> None:
    from memory_server.claude_code.plugin_files import declared_hooks, plugin_source
    from memory_server.claude_code.settings_hooks import program_words

    root = tmp_path / "notes"
    init_root(root)
    settings = home / ".claude" / "settings.json"
    mine = {"type": "command", "command": "notify-send started"}
    settings.write_text(json.dumps({"model": "opus", "hooks": {"SessionStart": [{"hooks": [mine]}]}}), encoding="utf-8")
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": None}

    done = run_cli("hooks", "install", "--scope", "user", "--root", str(root), env=env)  # type: ignore[arg-type]
    assert done.returncode == 0, done
    events = "SessionStart, UserPromptSubmit, PostToolUseFailure, SessionEnd, PreCompact"
    assert f"added the {events} hooks to {settings} (memory root {root})" in done.stdout
    data = settings_of(settings)
    assert data["model"] == "opus" and mine in our_hooks(data)["SessionStart"], "other settings and hooks stay"
    program = program_words()
    for spec in declared_hooks(plugin_source()):  # the plugin's hooks.json is the one source
        (hook,) = [h for h in our_hooks(data)[spec.event] if h != mine]
        assert hook == {
            "type": "command",
            "command": program[0],
            "args": [*program[1:], *spec.args, "--root", str(root)],
            "timeout": spec.timeout,
        }
    assert Path(program[0]).is_absolute() and not program[0].endswith(("sh", "bash")), "no shell, no PATH"

    before = settings.read_bytes()
    again = run_cli("hooks", "install", "--scope", "user", "--root", str(root), env=env)  # type: ignore[arg-type]
    assert "nothing changed" in again.stdout and settings.read_bytes() == before

    removed = run_cli("hooks", "uninstall", "--scope", "user", env=env)  # type: ignore[arg-type]
    assert removed.returncode == 0 and f"removed the {events} hooks" in removed.stdout
    assert settings_of(settings) == {"model": "opus", "hooks": {"SessionStart": [{"hooks": [mine]}]}}
    again = run_cli("hooks", "uninstall", "--scope", "user", env=env)  # type: ignore[arg-type]
    assert "nothing changed" in again.stdout


def test_hooks_install_scopes_and_refusals(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {"HOME": str(home)}
    done = run_cli("hooks", "install", "--scope", "project", cwd=project, env=env)
    assert done.returncode == 0 and (project / ".claude" / "settings.json").is_file(), done
    hook = our_hooks(settings_of(project / ".claude" / "settings.json"))["SessionEnd"][0]
    assert "--root" not in hook["args"], "without --root the hooks follow $MEMORY_ROOT, else the project"
    done = run_cli("hooks", "install", "--scope", "local", cwd=project, env=env)
    assert done.returncode == 0 and (project / ".claude" / "settings.local.json").is_file(), done

    not_a_root = tmp_path / "plain"
    not_a_root.mkdir()
    done = run_cli("hooks", "install", "--root", str(not_a_root), env=env)
    assert done.returncode == 2 and "is not a memory root" in done.stderr and "memory-server init" in done.stderr

    broken = home / ".claude" / "settings.json"
    broken.write_text("{ not json", encoding="utf-8")
    done = run_cli("hooks", "install", env=env)
    assert done.returncode == 2 and "is not valid JSON" in done.stderr and len(done.stderr.splitlines()) == 1
    assert broken.read_text(encoding="utf-8") == "{ not json"


# -- the plugin folder `plugin install` writes ----------------------------------------------------------


def test_the_installed_plugin_records_this_installation(tmp_path: Path) -> None:
    from memory_server.claude_code.plugin_files import plugin_source
    from memory_server.claude_code.plugin_install import (
        LAUNCHER_EXEC_LINE,
        RECORD,
        build_marketplace,
        installation_python,
        launcher_python,
    )

    folder = tmp_path / "claude-plugin"
    build_marketplace(folder, plugin_source(), launcher_python(), installation_python())
    plugin = folder / "plugin"
    record = json.loads((plugin / RECORD).read_text(encoding="utf-8"))
    assert record["python"] == sys.executable or Path(record["python"]) == Path(sys.executable).absolute()
    launcher = plugin / "bin" / "memory-server"
    text = launcher.read_text(encoding="utf-8")
    assert LAUNCHER_EXEC_LINE not in text and f"'''exec' {launcher_python()} " in text
    assert os.access(launcher, os.X_OK)
    # The launcher runs straight from a shell (the /dream skill does) or from its Python (the hooks do).
    for argv in ([str(launcher), "--version"], [str(launcher_python()), str(launcher), "--version"]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={"PATH": "/nonexistent"})
        assert done.returncode == 0 and done.stdout.startswith("memory-server "), done


def test_plugin_install_without_claude_says_what_to_do(tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    done = run_cli("plugin", "install", env={"PATH": str(empty), "HOME": str(tmp_path / "home")})
    assert done.returncode == 2 and "`claude` is not on PATH" in done.stderr and "--claude PATH" in done.stderr
    assert "`npm install -g @anthropic-ai/claude-code`" in done.stderr, done.stderr  # how to get it

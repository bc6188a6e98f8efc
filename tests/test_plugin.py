"""The repository as a Claude Code plugin, checked with the real clients.

The plugin is the `plugin/` folder (manifest, MCP config, hooks, skill, and the launcher `bin/memory-server`);
`.claude-plugin/marketplace.json` at the top points at it, so the repository (itself a memory root, with its own
CLAUDE.md) is not the plugin. `memory-server plugin install` copies it to a folder of its own and records the
installation it runs; these tests check that the plugin, its hooks and its skill run exactly that installation,
found without PATH, while another program named `memory-server` sits first on PATH and must never run.

Claude Code's CLI (`@anthropic-ai/claude-code`) and the MCP Inspector (`@modelcontextprotocol/inspector`) come
from npm. `.ci/run` installs them once into `.ci-node/` (git-ignored), and the newest Claude Code checked
into `.ci-node/newest/`:

    npm install --prefix .ci-node @anthropic-ai/claude-code@2.1.197 @modelcontextprotocol/inspector@0.21.2
    npm install --prefix .ci-node/newest @anthropic-ai/claude-code@2.1.332

Set MEMORY_SERVER_NODE_PREFIX to use another prefix; otherwise `claude` and `mcp-inspector` on PATH are used.
When a client is missing these tests fail (they never skip) and say how to install it.

Every `claude` run gets a throwaway HOME (never the real ~/.claude), a clean environment (no MEMORY_ROOT or
CLAUDE_* variables leak in), no standard input, and Claude Code's telemetry and update checks turned off.
Nothing here needs the network: the health checks, the validator and the Inspector talk to local processes,
and a real session (`claude -p`, which runs the hooks) points at an API address where nothing listens, with
no retries, so its one model call fails at once.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memory_server import __version__
from memory_server.files.root import MemoryRoot
from memory_server.sessions.compress import compress_transcript

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "plugin"
NODE_PREFIX = Path(os.environ.get("MEMORY_SERVER_NODE_PREFIX") or REPO / ".ci-node")
INSTALL_HINT = (
    "install them with `npm install --prefix .ci-node @anthropic-ai/claude-code@2.1.197 "
    "@modelcontextprotocol/inspector@0.21.2` (what .ci/run does), or put `claude` and `mcp-inspector` on PATH"
)
NEWEST_CLAUDE = "2.1.332"
NEWEST_HINT = f"install it with `npm install --prefix .ci-node/newest @anthropic-ai/claude-code@{NEWEST_CLAUDE}`"
LAUNCHER = '"${CLAUDE_PLUGIN_ROOT}/bin/memory-server"'  # how the /dream skill runs memory-server
SKILL_ROOT_RULE = '--root "${MEMORY_ROOT:-${CLAUDE_PROJECT_DIR}}"'  # the skill's commands run in the Bash tool
README_PLUGIN = [
    "python3 -m venv .venv && .venv/bin/pip install -e .",
    ".venv/bin/memory-server plugin install",
    ".venv/bin/memory-server init --root ~/src/myapp",
]
README_MCP_ADD = [
    ".venv/bin/memory-server init --root ~/notes/memory",
    'claude mcp add --scope user memory -- "$PWD/.venv/bin/memory-server" serve --root ~/notes/memory',
    ".venv/bin/memory-server hooks install --scope user --root ~/notes/memory",
]
PLUGIN_SERVER = "plugin:memory-server:memory"
PLUGIN_ID = "memory-server@memory-server"
RECORD = "bin/installation.json"  # beside the launcher: the installation the plugin runs
LAUNCHER_EXEC_LINE = "'''exec' python3 \"$0\" \"$@\""  # the launcher's first line before `plugin install`
CLI_TIMEOUT = 180
HOOK_WAIT_SECONDS = 30.0
SESSION_ID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
HOOK_EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt-submit",
    "PostToolUseFailure": "post-tool-use-failure",
    "SessionEnd": "session-end",
    "PreCompact": "pre-compact",
}
# Hooks that only add context: outside a memory root they say nothing at all (they run on every prompt and failure).
CONTEXT_ONLY = {"UserPromptSubmit", "PostToolUseFailure"}
FAILED_BUILD = "Exit code 1\n# example.com/printer\nbelt/tension.go:{line}:7: undefined: retensionBelt\n"
# A real session that reaches no model: its hooks run, its one API call fails at once (no retries).
NO_MODEL = {"ANTHROPIC_API_KEY": "not-a-key", "CLAUDE_CODE_MAX_RETRIES": "0"}
SESSION_PROMPT = "Remember that printer error E-4242 means the belt tension is out of range."


# -- the clients ----------------------------------------------------------------------------------------


def _fail_missing(what: str) -> None:
    pytest.fail(f"{what} is not installed (looked in {NODE_PREFIX}/node_modules and on PATH): {INSTALL_HINT}")


@pytest.fixture(scope="session")
def claude_bin() -> str:
    local = NODE_PREFIX / "node_modules" / ".bin" / "claude"
    found = str(local) if local.exists() else shutil.which("claude")
    if not found:
        _fail_missing("Claude Code's CLI (`claude`)")
    assert found is not None
    probe = subprocess.run(
        [found, "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=base_env(Path("/nonexistent")),
        stdin=subprocess.DEVNULL,
    )
    assert probe.returncode == 0 and "Claude Code" in probe.stdout, (
        f"`{found} --version` did not run: {probe.stdout}{probe.stderr}\n{INSTALL_HINT}"
    )
    return found


@pytest.fixture(scope="session")
def newest_claude_bin() -> str:
    """The newest Claude Code this plugin is checked with (its validator is stricter than the pinned one's)."""
    local = NODE_PREFIX / "newest" / "node_modules" / ".bin" / "claude"
    if not local.exists():
        pytest.fail(f"Claude Code {NEWEST_CLAUDE} is not installed at {local}: {NEWEST_HINT}")
    probe = subprocess.run(
        [str(local), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=base_env(Path("/nonexistent")),
        stdin=subprocess.DEVNULL,
    )
    assert probe.returncode == 0 and NEWEST_CLAUDE in probe.stdout, f"{probe.stdout}{probe.stderr}\n{NEWEST_HINT}"
    return str(local)


@pytest.fixture(params=["pinned", "newest"])
def any_claude_bin(request: pytest.FixtureRequest) -> str:
    """Each Claude Code version the plugin is checked with."""
    name = "claude_bin" if request.param == "pinned" else "newest_claude_bin"
    found: str = request.getfixturevalue(name)
    return found


@pytest.fixture(scope="session")
def inspector_cmd() -> tuple[list[str], Path | None]:
    """How to run `npx @modelcontextprotocol/inspector`, and the folder to run it from."""
    package = NODE_PREFIX / "node_modules" / "@modelcontextprotocol" / "inspector"
    if package.is_dir():
        npx = shutil.which("npx")
        if not npx:
            _fail_missing("npx (Node.js)")
        return [str(npx), "--no-install", "@modelcontextprotocol/inspector"], NODE_PREFIX
    on_path = shutil.which("mcp-inspector")
    if not on_path:
        _fail_missing("The MCP Inspector (`@modelcontextprotocol/inspector`)")
    return [str(on_path)], None


@pytest.fixture(scope="session")
def server_bin() -> Path:
    """The memory-server this test run imports, so Claude Code starts the code under test."""
    beside = Path(sys.executable).parent / "memory-server"
    found = beside if beside.exists() else (Path(p) if (p := shutil.which("memory-server")) else None)
    assert found is not None, "memory-server is not installed: run `pip install -e .` in the virtual environment"
    return found


def base_env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment: PATH with memory-server first, a throwaway HOME, no telemetry or update checks."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")])
    env = {
        "PATH": path,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",  # nothing here calls the API; if anything tried, it stays local
        "npm_config_update_notifier": "false",
    }
    for name in ("TMPDIR", "MEMORY_SERVER_TEST_RUN"):  # the run's mark lets the suite find leftover processes
        if os.environ.get(name):
            env[name] = os.environ[name]
    env.update(extra)
    return env


def run(
    cmd: list[str] | str,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float = CLI_TIMEOUT,
    shell: bool = False,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        shell=shell,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


def show(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def server_line(output: str, name: str) -> str:
    """The `claude mcp list` line of one server ("name: command args - ✔ Connected")."""
    for line in output.splitlines():
        if line.startswith(f"{name}: "):
            return line
    raise AssertionError(f"`claude mcp list` does not list {name!r}:\n{output}")


def list_until_connected(
    args: list[str], name: str, *, cwd: Path, env: dict[str, str], tries: int = 3
) -> tuple[subprocess.CompletedProcess[str], str]:
    """`claude mcp list` and the line of server `name`, asked again while it says it failed to connect: Claude
    Code's health check gives a server a few seconds, which a loaded machine's start-up can pass."""
    for _ in range(tries):
        result = run(args, cwd=cwd, env=env)
        line = server_line(result.stdout, name)
        if "Failed to connect" not in line:
            break
    return result, line


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def make_root(path: Path, server_bin: Path, env: dict[str, str]) -> Path:
    result = run([str(server_bin), "init", "--root", str(path)], cwd=path.parent, env=env)
    assert result.returncode == 0, show(result)
    return path


# -- another program named memory-server, and the plugin as `plugin install` lays it out ---------------------


@pytest.fixture
def other_program(tmp_path: Path) -> Path:
    """A folder holding another program named `memory-server` (mcp-memory-service installs one). Put first on
    PATH, it must never run: it notes each run in `other-program-ran` beside the folder."""
    folder = tmp_path / "other-bin"
    folder.mkdir()
    script = folder / "memory-server"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path / "other-program-ran"}"\nexit 3\n', encoding="utf-8")
    script.chmod(0o755)
    return folder


def other_program_runs(other_program: Path) -> str:
    ran = other_program.parent / "other-program-ran"
    return ran.read_text(encoding="utf-8") if ran.exists() else ""


def path_without_memory_server(claude_bin: str) -> str:
    """PATH with `claude` and `node` but no `memory-server`, as on a machine where it was never put on PATH."""
    folders = [str(Path(claude_bin).parent)]
    for folder in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        if folder and not (Path(folder) / "memory-server").exists():
            folders.append(folder)
    return os.pathsep.join(folders)


def user_env(home: Path, claude_bin: str, other_program: Path, **extra: str) -> dict[str, str]:
    """The person's shell: the other `memory-server` first on PATH, then `claude`, and never this one."""
    env = base_env(home, **extra)
    env["PATH"] = os.pathsep.join([str(other_program), path_without_memory_server(claude_bin)])
    return env


def installation_python() -> Path:
    """The installation under test: this Python (a virtual environment's own)."""
    return Path(sys.executable).absolute()


def launcher_python() -> Path:
    """The Python `plugin install` records to run the launcher: the installation's base interpreter."""
    return Path(getattr(sys, "_base_executable", None) or sys.executable).absolute()


def built_plugin(tmp_path: Path) -> Path:
    """The plugin as `memory-server plugin install` lays it out, recording the installation under test."""
    from memory_server.claude_code.plugin_files import plugin_source
    from memory_server.claude_code.plugin_install import build_marketplace

    folder = tmp_path / "claude-plugin"
    build_marketplace(folder, plugin_source(), launcher_python(), installation_python())
    return folder / "plugin"


def configure_inline(home: Path) -> None:
    """`claude --plugin-dir` loads a plugin as memory-server@inline: give it the option `plugin install` sets."""
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    options = {"python": str(launcher_python())}
    settings.write_text(json.dumps({"pluginConfigs": {"memory-server@inline": {"options": options}}}), encoding="utf-8")


def real_session(claude_bin: str, project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A real Claude Code session in `project` (`claude -p`): its hooks run; its model call fails at once."""
    return run([claude_bin, "-p", SESSION_PROMPT], cwd=project, env={**env, **NO_MODEL})


# -- the manifests --------------------------------------------------------------------------------------


def test_plugin_validate_strict_passes(any_claude_bin: str, home: Path, tmp_path: Path) -> None:
    """`claude plugin validate --strict` on the marketplace (the repository), on the plugin folder, and on the
    marketplace `plugin install` writes, with the pinned and the newest Claude Code. The newest refuses a
    CLAUDE.md at a plugin's root: the repository's own CLAUDE.md (it is a memory root) is outside the plugin."""
    assert (PLUGIN / "skills" / "dream" / "SKILL.md").is_file(), "the plugin ships the /dream skill"
    installed = built_plugin(tmp_path).parent
    for target in (str(REPO), str(PLUGIN), str(installed)):
        result = run([any_claude_bin, "plugin", "validate", target, "--strict"], cwd=REPO, env=base_env(home))
        assert result.returncode == 0 and "Validation passed" in result.stdout, show(result)
        assert "CLAUDE.md" not in result.stdout, show(result)
    assert not (PLUGIN / "CLAUDE.md").exists()


def test_manifests_agree(tmp_path: Path) -> None:
    from memory_server.claude_code.plugin_install import marketplace_manifest

    plugin = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
    (entry,) = [p for p in market["plugins"] if p["name"] == plugin["name"]]
    assert entry["source"] == "./plugin", "the marketplace installs the plugin folder, not the whole repository"
    assert entry.get("version", plugin["version"]) == plugin["version"]
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert f'version = "{plugin["version"]}"' in pyproject, "plugin.json's version follows pyproject.toml"
    written = marketplace_manifest(plugin)
    assert written["name"] == market["name"] and PLUGIN_ID == f"{plugin['name']}@{market['name']}"
    assert written["plugins"] == [{**entry, "description": plugin["description"]}], written


def declared_hooks(plugin: Path = PLUGIN) -> dict[str, list[dict[str, Any]]]:
    data = json.loads((plugin / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    out: dict[str, list[dict[str, Any]]] = {}
    for event, groups in data["hooks"].items():
        out[event] = [hook for group in groups for hook in group["hooks"]]
    return out


SHELL_SYNTAX = re.compile(r"\$\{[A-Za-z_]+:[-=+?]|\$[A-Za-z_(]|`")  # ${X:-y}, $X, $(...), backquotes


def test_every_command_runs_the_launcher_without_a_shell() -> None:
    """The server and the hooks run the launcher with the Python `plugin install` records (exec form: no shell,
    no shell syntax, so they run where bash is not the shell); the /dream skill runs the launcher itself. None
    names a bare `memory-server`, which PATH would resolve, perhaps to another program."""
    plugin = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    assert plugin["userConfig"]["python"]["type"] == "string"
    mcp = json.loads((PLUGIN / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert list(mcp) == ["memory"]
    assert mcp["memory"] == {
        "command": "${user_config.python}",
        "args": ["${CLAUDE_PLUGIN_ROOT}/bin/memory-server", "serve", "--no-dream-tools"],
    }

    hooks = declared_hooks()
    assert set(hooks) == set(HOOK_EVENTS)
    for event, sub in HOOK_EVENTS.items():
        (hook,) = hooks[event]
        assert hook["type"] == "command" and hook["command"] == "${user_config.python}"
        assert hook["args"] == ["${CLAUDE_PLUGIN_ROOT}/bin/memory-server", "hook", sub], hook
        assert not SHELL_SYNTAX.search(json.dumps(hook)), hook
        assert 0 < hook["timeout"] <= 60

    launcher = PLUGIN / "bin" / "memory-server"
    assert os.access(launcher, os.X_OK) and LAUNCHER_EXEC_LINE in launcher.read_text(encoding="utf-8")

    skill = (PLUGIN / "skills" / "dream" / "SKILL.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", skill, flags=re.M | re.S)
    lines = [
        line.strip() for lang, block in blocks if lang in ("bash", "sh", "shell", "") for line in block.splitlines()
    ]
    commands = [line for line in lines if "memory-server" in line]
    assert commands, "the /dream skill tells the agent which memory-server commands to run"
    allowed = re.search(r"^allowed-tools: (.*)$", skill, flags=re.M)
    assert allowed, "the skill declares the commands it may run"
    for command in commands:
        assert command.startswith(f"{LAUNCHER} dream "), f"the /dream skill runs `{command}`, not the launcher"
        assert SKILL_ROOT_RULE in command, (
            f"the /dream skill runs `{command}`; every memory-server command it runs must pass {SKILL_ROOT_RULE} "
            "(Claude Code replaces ${CLAUDE_PROJECT_DIR} in a skill with the project directory) so that it "
            "works on the same root as the server and the hooks"
        )
        sub = command.split()[2]
        assert f"Bash({LAUNCHER} dream {sub}:*)" in allowed.group(1), f"allowed-tools does not cover `{command}`"
    assert re.search(r"(?<![/\w])memory-server dream", skill.replace(LAUNCHER, "")) is None, (
        "the skill names a bare `memory-server`"
    )


def test_plugin_server_connects_in_the_repository(
    claude_bin: str, home: Path, tmp_path: Path, other_program: Path
) -> None:
    """`claude --plugin-dir plugin mcp list`, run in the repository (itself a memory root): the clone's plugin
    folder, never installed, runs the clone's own .venv, not the `memory-server` first on PATH."""
    assert (REPO / ".venv" / "bin" / "python").is_file(), "the README's commands make the clone's .venv"
    env = user_env(home, claude_bin, other_program)
    result = run([claude_bin, "--plugin-dir", "plugin", "mcp", "list"], cwd=REPO, env=env)
    assert result.returncode == 0, show(result)
    line = server_line(result.stdout, PLUGIN_SERVER)
    assert "✔ Connected" in line, show(result)
    assert other_program_runs(other_program) == ""


def test_plugin_server_root_is_the_project_unless_memory_root_is_set(
    claude_bin: str, server_bin: Path, home: Path, tmp_path: Path, other_program: Path
) -> None:
    env = user_env(home, claude_bin, other_program)
    project = make_root(tmp_path / "project", server_bin, env)
    elsewhere = make_root(tmp_path / "notes", server_bin, env)
    plugin = built_plugin(tmp_path)
    configure_inline(home)
    # The server logs the root it serves before it answers the handshake (the health check ends right after).
    server_log = Path(".memory") / "logs" / "server.log"

    def served(root: Path) -> bool:
        log_file = root / server_log
        return log_file.is_file() and f"serving {root.resolve()}\n" in log_file.read_text(encoding="utf-8")

    result = run([claude_bin, "--plugin-dir", str(plugin), "mcp", "list"], cwd=project, env=env)
    line = server_line(result.stdout, PLUGIN_SERVER)
    assert "✔ Connected" in line, show(result)
    assert line.startswith(f"{PLUGIN_SERVER}: {launcher_python()} {plugin}/bin/memory-server serve "), line
    assert served(project), "the server opened the project directory as its root"
    assert not served(elsewhere)

    result = run(
        [claude_bin, "--plugin-dir", str(plugin), "mcp", "list"],
        cwd=project,
        env={**env, "MEMORY_ROOT": str(elsewhere)},
    )
    assert "✔ Connected" in server_line(result.stdout, PLUGIN_SERVER), show(result)
    assert served(elsewhere), "the server opened $MEMORY_ROOT"
    assert other_program_runs(other_program) == ""


def readme_block(section: str, n: int = 0) -> list[str]:
    """The lines of the `n`th ```bash block under the README heading `section` (a `##` or `###` heading),
    up to the next heading."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    heading = re.search(rf"^#{{2,3}} {re.escape(section)}\n", readme, flags=re.M)
    assert heading, f"the README has no heading {section!r}"
    following = re.search(r"^#{2,3} ", readme[heading.end() :], flags=re.M)
    end = heading.end() + following.start() if following else len(readme)
    blocks = re.findall(r"^```bash\n(.*?)^```", readme[heading.end() : end], flags=re.M | re.S)
    return [line for line in blocks[n].splitlines() if line.strip()]


def fake_clone(tmp_path: Path, server_bin: Path) -> Path:
    """A folder standing for the clone after `python3 -m venv .venv && .venv/bin/pip install ...`: its
    `.venv/bin/memory-server` is the server under test (installing from PyPI is not part of the test)."""
    clone = tmp_path / "memory-server"
    (clone / ".venv" / "bin").mkdir(parents=True)
    (clone / ".venv" / "bin" / "memory-server").symlink_to(server_bin)
    return clone


def sessions_recorded(root: Path, timeout: float = HOOK_WAIT_SECONDS) -> list[Path]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sessions_in(root)
        if found:
            return found
        time.sleep(0.2)
    return []


def test_readme_mcp_add_lines_register_for_every_project_and_record_sessions(
    any_claude_bin: str, server_bin: Path, home: Path, tmp_path: Path, other_program: Path
) -> None:
    """The README's `claude mcp add` lines, run by a shell in the clone as a user types them, with another
    `memory-server` first on PATH: the server connects in another project, and a real session there is
    recorded into the root by the hooks `hooks install` added (so this route fills its memory too)."""
    lines = readme_block("Or register the server with `claude mcp add`")
    assert lines == README_MCP_ADD, lines
    clone = fake_clone(tmp_path, server_bin)
    env = user_env(home, any_claude_bin, other_program)
    for line in lines:
        result = run(line, cwd=clone, env=env, shell=True)
        assert result.returncode == 0, f"`{line}`: {show(result)}"
    root = home / "notes" / "memory"
    assert (root / "MEMORY.md").is_file() and (root / "topics").is_dir()

    project = tmp_path / "some-project"  # --scope user: every project sees it, not only the clone
    project.mkdir()
    result = run([any_claude_bin, "mcp", "list"], cwd=project, env=env)
    assert result.returncode == 0, show(result)
    line = server_line(result.stdout, "memory")
    assert line.startswith(f"memory: {clone}/.venv/bin/memory-server serve --root {root} "), line
    assert "✔ Connected" in line, show(result)

    real_session(any_claude_bin, project, env)
    recorded = sessions_recorded(root)
    assert recorded, f"no session recorded in {root}; settings: {(home / '.claude' / 'settings.json').read_text()}"
    assert "E-4242" in recorded[0].read_text(encoding="utf-8")
    assert sessions_in(project) == []
    assert other_program_runs(other_program) == ""

    removed = run(f"{clone}/.venv/bin/memory-server hooks uninstall --scope user", cwd=clone, env=env, shell=True)
    assert removed.returncode == 0 and "removed" in removed.stdout, show(removed)
    assert "hooks" not in json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))


def test_readme_install_path_needs_only_python() -> None:
    """No placeholder to fill in, and no installer a fresh machine lacks (pipx, uv): a venv in the clone. The
    git-URL route (pip into a venv) is there too, for those who do not clone."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "<repository URL>" not in readme
    install = readme[readme.index("\n## Set-up: two commands\n") : readme.index("\n## Claude Code\n")]
    commands = "\n".join(re.findall(r"^```bash\n(.*?)^```", install, flags=re.M | re.S))
    assert "pipx" not in commands and "uv tool" not in commands, commands
    assert readme_block("Install as a Claude Code plugin") == README_PLUGIN
    (git_url,) = readme_block("Install as a Claude Code plugin", 2)
    assert git_url.startswith("python3 -m venv ") and 'pip install "git+$REPO_URL"' in git_url, git_url


def test_readme_plugin_lines_run_in_one_shell(
    any_claude_bin: str, server_bin: Path, home: Path, tmp_path: Path, other_program: Path
) -> None:
    """The README's plugin lines, run one after the other by a shell in the clone, in a shell whose PATH has
    another `memory-server` first and never this one (a fresh ~/.local/bin is not on PATH until the next
    login): `claude mcp list` then shows the plugin's server connected in the project, a real session there is
    recorded by the plugin's hooks, and the other program never runs."""
    clone = fake_clone(tmp_path, server_bin)
    env = user_env(home, any_claude_bin, other_program)
    install, *steps = readme_block("Install as a Claude Code plugin")
    assert install == README_PLUGIN[0], "fake_clone stands for this line"
    for line in steps:
        result = run(line, cwd=clone, env=env, shell=True)
        assert result.returncode == 0, f"`{line}`: {show(result)}"
    listing = run([any_claude_bin, "plugin", "list"], cwd=tmp_path, env=env)
    assert listing.returncode == 0 and PLUGIN_ID in listing.stdout and "enabled" in listing.stdout, show(listing)

    project = home / "src" / "myapp"
    (start,) = readme_block("Install as a Claude Code plugin", 1)
    assert start == "cd ~/src/myapp && claude"
    result = run([any_claude_bin, "mcp", "list"], cwd=project, env=env)
    line = server_line(result.stdout, PLUGIN_SERVER)
    assert "bin/memory-server serve" in line and "✔ Connected" in line, show(result)

    real_session(any_claude_bin, project, env)
    recorded = sessions_recorded(project)
    assert recorded, f"the plugin's hooks recorded no session in {project}"
    assert "E-4242" in recorded[0].read_text(encoding="utf-8")
    assert other_program_runs(other_program) == "", "another program named memory-server ran"

    # The plugin lives in a folder of its own, with nothing of the clone around it (a venv, build output).
    installed = home / ".local" / "share" / "memory-server" / "claude-plugin"
    record = json.loads((installed / "plugin" / RECORD).read_text(encoding="utf-8"))
    assert record["python"] == str(installation_python())
    names = {p.name for p in installed.rglob("*")}
    assert {"SKILL.md", "hooks.json", ".mcp.json", "memory-server"} <= names, sorted(names)
    assert not names & {"pyproject.toml", "CLAUDE.md", "memory_server", "tests", "topics", ".venv"}


def test_a_moved_installation_says_how_to_fix_it_until_plugin_install_runs_again(
    claude_bin: str, server_bin: Path, home: Path, tmp_path: Path, other_program: Path
) -> None:
    """After the installation the plugin records is moved or deleted, the hooks and the server run nothing
    else: they say what is wrong and how to fix it (the session-start hook on stdout, which reaches the agent).
    `plugin install` run again fixes it."""
    env = user_env(home, claude_bin, other_program)
    installed = run([str(server_bin), "plugin", "install"], cwd=tmp_path, env=env)
    assert installed.returncode == 0 and "claude plugin install" in installed.stdout, show(installed)
    project = make_root(tmp_path / "project", server_bin, env)
    plugin = home / ".local" / "share" / "memory-server" / "claude-plugin" / "plugin"
    record = plugin / RECORD
    good = record.read_text(encoding="utf-8")
    record.write_text(json.dumps({"python": str(tmp_path / "moved-away" / "bin" / "python")}), encoding="utf-8")

    launcher = [str(launcher_python()), str(plugin / "bin" / "memory-server")]
    start = run(
        [*launcher, "hook", "session-start"], cwd=project, env={**env, "CLAUDE_PROJECT_DIR": str(project)}, stdin="{}"
    )
    assert start.returncode == 0, show(start)
    assert "moved-away" in start.stdout and "memory-server plugin install" in start.stdout, show(start)
    served = run([*launcher, "serve"], cwd=project, env=env, stdin="")
    assert served.returncode == 1 and "memory-server plugin install" in served.stderr, show(served)
    listed = run([claude_bin, "mcp", "list"], cwd=project, env=env)
    assert "✔ Connected" not in server_line(listed.stdout, PLUGIN_SERVER), show(listed)

    again = run([str(server_bin), "plugin", "install"], cwd=tmp_path, env=env)
    assert again.returncode == 0, show(again)
    assert record.read_text(encoding="utf-8") == good
    # it says whose installation it replaced
    assert "replaced: the plugin ran " in again.stdout and "moved-away" in again.stdout, show(again)
    listed, line = list_until_connected([claude_bin, "mcp", "list"], PLUGIN_SERVER, cwd=project, env=env)
    assert "✔ Connected" in line, show(listed)
    assert other_program_runs(other_program) == ""


def test_plugin_install_again_changes_nothing_and_says_so(
    any_claude_bin: str, server_bin: Path, home: Path, tmp_path: Path, other_program: Path
) -> None:
    """A second `plugin install` with nothing out of date rewrites nothing and says so, with the version; one
    with something out of date puts it right and says what it did."""
    env = user_env(home, any_claude_bin, other_program)
    first = run([str(server_bin), "plugin", "install"], cwd=tmp_path, env=env)
    assert first.returncode == 0 and "done: claude plugin install" in first.stdout, show(first)
    folder = home / ".local" / "share" / "memory-server" / "claude-plugin"
    written = {p: p.stat().st_mtime_ns for p in folder.rglob("*")}
    again = run([str(server_bin), "plugin", "install"], cwd=tmp_path, env=env)
    assert again.returncode == 0, show(again)
    assert again.stdout.startswith(f"already installed, nothing changed: memory-server {__version__}, running "), show(
        again
    )
    assert "done:" not in again.stdout and {p: p.stat().st_mtime_ns for p in folder.rglob("*")} == written

    (folder / "plugin" / RECORD).write_text("{}", encoding="utf-8")  # out of date: the record is gone
    fixed = run([str(server_bin), "plugin", "install"], cwd=tmp_path, env=env)
    assert fixed.returncode == 0 and "done: plugin files" in fixed.stdout, show(fixed)
    assert json.loads((folder / "plugin" / RECORD).read_text(encoding="utf-8"))["python"] == str(installation_python())
    assert other_program_runs(other_program) == ""


def test_plugin_uninstall_leaves_no_empty_folder_behind(
    claude_bin: str, server_bin: Path, home: Path, tmp_path: Path, other_program: Path
) -> None:
    """`plugin uninstall` removes the plugin from Claude Code and its folder, and the data folder that held it
    once nothing else is in it; a folder still holding something of the person's stays."""
    env = user_env(home, claude_bin, other_program)
    data = home / ".local" / "share" / "memory-server"
    for kept in (None, data / "notes.txt"):
        installed = run([str(server_bin), "plugin", "install"], cwd=tmp_path, env=env)
        assert installed.returncode == 0, show(installed)
        if kept is not None:
            kept.write_text("mine\n", encoding="utf-8")
        removed = run([str(server_bin), "plugin", "uninstall"], cwd=tmp_path, env=env)
        assert removed.returncode == 0 and "removed" in removed.stdout, show(removed)
        listing = run([claude_bin, "plugin", "list"], cwd=tmp_path, env=env)
        assert listing.returncode == 0 and PLUGIN_ID not in listing.stdout, show(listing)
        if kept is None:
            assert not data.exists() and data.parent.is_dir(), sorted(data.rglob("*"))
        else:
            assert sorted(data.iterdir()) == [kept], sorted(data.rglob("*"))


# -- a folder that is not a memory root -----------------------------------------------------------------


def plain_git_project(tmp_path: Path) -> Path:
    """A project that was never set up as memory: a git repository with one file, all committed."""
    project = tmp_path / "plain-project"
    project.mkdir()
    (project / "main.py").write_text("print('hello')\n", encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run([*git, *args], cwd=project, check=True, capture_output=True)
    return project


def git_status(project: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=project, capture_output=True, text=True, check=True
    ).stdout


def test_plugin_in_a_project_that_is_not_a_memory_root_writes_nothing(
    claude_bin: str, server_bin: Path, home: Path, tmp_path: Path
) -> None:
    """The plugin is installed for every project: in one never set up, the server starts (and says why it
    cannot serve), the hooks do nothing but print one line on stderr, and no file appears."""
    project = plain_git_project(tmp_path)
    plugin = built_plugin(tmp_path)
    configure_inline(home)
    env = base_env(home)
    result = run([claude_bin, "--plugin-dir", str(plugin), "mcp", "list"], cwd=project, env=env)
    assert result.returncode == 0, show(result)
    server_line(result.stdout, PLUGIN_SERVER)
    transcript = write_transcript(home / ".claude" / "projects" / "-plain-project")
    for event in HOOK_EVENTS:
        for project_dir in (str(project), None):  # also with CLAUDE_PROJECT_DIR unset: the root is the cwd
            extra = {"CLAUDE_PROJECT_DIR": project_dir} if project_dir else {}
            done = subprocess.run(
                hook_argv(event, plugin),
                cwd=project,
                env=base_env(home, **extra),
                input=hook_input(event, transcript, project),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0 and done.stdout == "", show(done)
            if event in CONTEXT_ONLY:
                assert done.stderr == "", show(done)
                continue
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and "not a memory root" in lines[0], show(done)
            assert "memory-server init" in lines[0] and "MEMORY_ROOT" in lines[0], show(done)
    time.sleep(1.0)  # a compression job, had one been started, would have written by now
    assert git_status(project) == "", "the plugin wrote into a project that is not a memory root"
    assert not (project / ".memory").exists()


def test_a_missing_root_connects_and_says_why(claude_bin: str, server_bin: Path, home: Path, tmp_path: Path) -> None:
    """`claude mcp add` with a root that does not exist: the server still connects (every tool then answers
    with the reason), and its log on stderr names the problem, not only a failed connection."""
    missing = tmp_path / "no-such-root"
    env = base_env(home)
    added = run(
        [claude_bin, "mcp", "add", "memory", "--", str(server_bin), "serve", "--root", str(missing)],
        cwd=tmp_path,
        env=env,
    )
    assert added.returncode == 0, show(added)
    result = run([claude_bin, "mcp", "list"], cwd=tmp_path, env=env)
    assert "✔ Connected" in server_line(result.stdout, "memory"), show(result)
    assert not missing.exists()
    started = subprocess.run(
        [str(server_bin), "serve", "--root", str(missing)],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert f"memory root {missing} does not exist" in started.stderr, show(started)
    assert "memory-server init" in started.stderr, show(started)


# -- the MCP Inspector ----------------------------------------------------------------------------------


def inspector_json(result: subprocess.CompletedProcess[str]) -> Any:
    out = result.stdout
    start = out.find("{")
    assert result.returncode == 0 and start >= 0, show(result)
    return json.loads(out[start:])


def test_inspector_lists_tools_and_calls_search_exact(
    inspector_cmd: tuple[list[str], Path | None], server_bin: Path, home: Path, tmp_path: Path
) -> None:
    env = base_env(home)
    root = make_root(tmp_path / "root", server_bin, env)
    (root / "topics" / "printer.md").write_text(
        "---\ntitle: Printer\ndescription: the printer's error codes\n---\n# Printer\n\n"
        "## Errors\n\nError E-4242 means the belt tension is out of range: re-tension to 110 Hz.\n",
        encoding="utf-8",
    )
    indexed = run([str(server_bin), "index", "--keyword-only", "--root", str(root)], cwd=tmp_path, env=env)
    assert indexed.returncode == 0, show(indexed)
    cmd, cwd = inspector_cmd
    server = ["memory-server", "serve", "--root", str(root)]

    listed = run([*cmd, "--cli", *server, "--method", "tools/list"], cwd=cwd or tmp_path, env=env)
    tools = {t["name"]: t for t in inspector_json(listed)["tools"]}
    assert {"search_memory", "search_exact", "read_memory", "list_topics", "memory_status"} <= set(tools), sorted(tools)
    assert tools["search_exact"]["inputSchema"]["properties"]["query"]["type"] == "string"

    called = run(
        [*cmd, "--cli", *server, "--method", "tools/call", "--tool-name", "search_exact", "--tool-arg", "query=E-4242"],
        cwd=cwd or tmp_path,
        env=env,
    )
    answer = inspector_json(called)
    assert answer.get("isError") is not True, show(called)
    text = "".join(part.get("text", "") for part in answer["content"])
    hits = json.loads(text)["hits"]
    assert hits, show(called)
    first = hits[0]
    assert first["path"] == "topics/printer.md" and first["layer"] == "topic"
    assert "E-4242" in first["text"]
    assert first["start_line"] == first["end_line"] == 9


# -- the hooks, run exactly as declared -----------------------------------------------------------------


def write_transcript(folder: Path, session_id: str = SESSION_ID, cwd: str = "/work/project") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    common = {
        "sessionId": session_id,
        "cwd": cwd,
        "version": "2.1.197",
        "gitBranch": "main",
        "userType": "external",
        "isSidechain": False,
    }
    lines = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-11-20T10:00:00.000Z",
            "message": {"role": "user", "content": "Why does the printer report E-4242 after a belt change?"},
            **common,
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-11-20T10:00:05.000Z",
            "message": {
                "role": "assistant",
                "model": "claude",
                "content": [
                    {"type": "text", "text": "E-4242 means the belt tension is out of range; re-tension to 110 Hz."}
                ],
            },
            **common,
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def hook_input(event: str, transcript: Path, cwd: Path) -> str:
    payload: dict[str, Any] = {
        "session_id": SESSION_ID,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": event,
    }
    extra: dict[str, dict[str, Any]] = {
        "SessionStart": {"source": "startup"},
        "UserPromptSubmit": {"prompt": "Why does the printer report E-4242 after a belt change?"},
        "PostToolUseFailure": {
            "tool_name": "Bash",
            "tool_input": {"command": "go build ./..."},
            "tool_use_id": "toolu_01",
            "error": FAILED_BUILD.format(line=88),
        },
        "SessionEnd": {"reason": "exit"},
        "PreCompact": {"trigger": "auto", "custom_instructions": ""},
    }
    payload.update(extra[event])
    return json.dumps(payload)


def hook_argv(event: str, plugin: Path) -> list[str]:
    """A declared hook as Claude Code runs it in exec form: its command and arguments with the plugin's
    variables filled in, and no shell."""
    (hook,) = declared_hooks(plugin)[event]
    fill = {"${user_config.python}": str(launcher_python()), "${CLAUDE_PLUGIN_ROOT}": str(plugin)}

    def filled(word: str) -> str:
        for name, value in fill.items():
            word = word.replace(name, value)
        return word

    return [filled(hook["command"]), *(filled(a) for a in hook["args"])]


@pytest.fixture(scope="module")
def plugin_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One plugin, laid out as `plugin install` does, for the tests that only run its hooks."""
    return built_plugin(tmp_path_factory.mktemp("plugin"))


def run_declared_hook(
    event: str, plugin: Path, project: Path, cwd: Path, transcript: Path, home: Path, **extra: str
) -> tuple[subprocess.CompletedProcess[str], float, int]:
    """Run the hook the way Claude Code does: exec form (no shell), with its variables set."""
    (hook,) = declared_hooks(plugin)[event]
    env = base_env(
        home,
        CLAUDE_PROJECT_DIR=str(project),
        CLAUDE_PLUGIN_ROOT=str(plugin),
        CLAUDE_CODE_SESSION_ID=SESSION_ID,
        CLAUDECODE="1",
        **extra,
    )
    if event == "SessionStart":
        env["CLAUDE_ENV_FILE"] = str(home / "session-env.sh")
    start = time.monotonic()
    result = subprocess.run(
        hook_argv(event, plugin),
        cwd=cwd,
        env=env,
        input=hook_input(event, transcript, cwd),
        capture_output=True,
        text=True,
        timeout=hook["timeout"] + 30,
    )
    return result, time.monotonic() - start, hook["timeout"]


def sessions_in(root: Path) -> list[Path]:
    folder = root / "sessions" / "compressed"
    return sorted(folder.rglob("*.md")) if folder.is_dir() else []


def wait_for_session(root: Path) -> list[Path]:
    deadline = time.monotonic() + HOOK_WAIT_SECONDS
    while time.monotonic() < deadline:
        found = sessions_in(root)
        if found:
            return found
        time.sleep(0.2)
    log = root / ".memory" / "logs" / "compress.log"
    raise AssertionError(
        f"no compressed session appeared in {root} within {HOOK_WAIT_SECONDS:.0f} s; "
        f"job log: {log.read_text() if log.exists() else '(none)'}"
    )


@pytest.fixture
def project(tmp_path: Path, server_bin: Path, home: Path) -> Path:
    """A project that is its own memory root, with a subfolder the session has moved into."""
    p = make_root(tmp_path / "project", server_bin, base_env(home))
    (p / "src").mkdir()
    return p


@pytest.mark.parametrize("event", ["SessionEnd", "PreCompact"])
def test_compressing_hooks_write_to_the_project_root(
    event: str, plugin_copy: Path, project: Path, home: Path, tmp_path: Path
) -> None:
    transcript = write_transcript(home / ".claude" / "projects" / "-work-project")
    result, elapsed, timeout = run_declared_hook(event, plugin_copy, project, project / "src", transcript, home)
    assert result.returncode == 0, show(result)
    assert elapsed < timeout, f"{event} took {elapsed:.1f} s; it declares a {timeout} s timeout"
    (written,) = wait_for_session(project)
    assert SESSION_ID in written.read_text(encoding="utf-8")
    assert not (project / "src" / "sessions").exists(), "the root is the project, not the session's cwd"


def test_hooks_follow_memory_root(
    plugin_copy: Path, project: Path, home: Path, tmp_path: Path, server_bin: Path
) -> None:
    notes = make_root(tmp_path / "notes", server_bin, base_env(home))
    transcript = write_transcript(home / ".claude" / "projects" / "-work-project")
    result, _, _ = run_declared_hook(
        "SessionEnd", plugin_copy, project, project, transcript, home, MEMORY_ROOT=str(notes)
    )
    assert result.returncode == 0, show(result)
    (written,) = wait_for_session(notes)
    assert SESSION_ID in written.read_text(encoding="utf-8")
    assert sessions_in(project) == []


def test_session_start_hook_is_quiet_until_a_dream_is_due(
    plugin_copy: Path, project: Path, home: Path, tmp_path: Path
) -> None:
    transcripts = home / ".claude" / "projects" / "-work-project"
    first = write_transcript(transcripts)
    result, elapsed, timeout = run_declared_hook("SessionStart", plugin_copy, project, project / "src", first, home)
    assert result.returncode == 0, show(result)
    assert elapsed < timeout
    assert result.stdout.strip() == "", "nothing to say: no session is waiting for a dream"

    for n in range(6):
        sid = f"{n:08d}-4b5a-4978-8695-a4b3c2d1e0f9"
        compress_transcript(write_transcript(transcripts, session_id=sid), MemoryRoot(project))
    result, elapsed, timeout = run_declared_hook("SessionStart", plugin_copy, project, project / "src", first, home)
    assert result.returncode == 0, show(result)
    assert elapsed < timeout
    assert "/dream" in result.stdout, show(result)
    assert (project / ".dream-pending").exists(), "the flag is set in the project root"
    assert not (project / "src" / ".dream-pending").exists()


def context_of(result: subprocess.CompletedProcess[str], event: str) -> str:
    """What a context hook's JSON answer adds to the model's context ("" when it printed nothing)."""
    assert result.returncode == 0, show(result)
    if not result.stdout.strip():
        return ""
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == event, show(result)
    return str(answer["additionalContext"])


def fixed_build_session(folder: Path) -> Path:
    """A session in which `go build` failed with an error, an edit fixed it, and the build then passed."""
    from session_script import Script

    s = Script("7a7a7a7a-4b5a-4978-8695-a4b3c2d1e0f9", dt.datetime(2026, 11, 19, 9, tzinfo=dt.UTC), cwd="/work/project")
    s.user("Fix the belt tension module build.")
    s.bash("go build ./...", FAILED_BUILD.format(line=41).removeprefix("Exit code 1\n"), error=True)
    s.edit("belt/tension.go", "retensionBelt(b)", "belt.Retension(b)")
    s.bash("go build ./...", "")
    s.assistant("Fixed: retensionBelt moved to belt.Retension.")
    return s.save(folder)


def test_context_hooks_as_declared(plugin_copy: Path, project: Path, home: Path) -> None:
    """The plugin's context hooks, run as Claude Code runs them: the brief at session start, the earlier fix of
    an error met before, and nothing from the per-prompt hook while it is off (the default)."""
    from memory_server.api import Memory

    transcripts = home / ".claude" / "projects" / "-work-project"
    compress_transcript(fixed_build_session(transcripts), MemoryRoot(project))
    with Memory(project, keyword_only=True) as memory:
        memory.index()
    first = write_transcript(transcripts)

    result, elapsed, timeout = run_declared_hook("SessionStart", plugin_copy, project, project / "src", first, home)
    brief = context_of(result, "SessionStart")
    assert elapsed < timeout and brief.startswith("<memory-brief>"), show(result)
    assert "belt.Retension" in brief and "sessions/compressed/" in brief

    result, elapsed, timeout = run_declared_hook("PostToolUseFailure", plugin_copy, project, project, first, home)
    fix = context_of(result, "PostToolUseFailure")
    assert elapsed < timeout and fix.startswith("<memory-earlier-fix>"), show(result)
    assert "belt.Retension" in fix and "7a7a7a7a" in fix and len(fix) <= 600

    result, elapsed, timeout = run_declared_hook("UserPromptSubmit", plugin_copy, project, project, first, home)
    assert elapsed < timeout and context_of(result, "UserPromptSubmit") == "", "per-prompt recall is off by default"


def test_a_real_session_receives_the_brief_the_prompt_hits_and_the_earlier_fix(
    any_claude_bin: str, project: Path, home: Path, tmp_path: Path
) -> None:
    """A real Claude Code session (each checked version) with the plugin, against a stand-in for the model's API
    on a loopback port (tests/fake_anthropic.py): the model calls Bash, the command fails with an error a past
    session fixed. What Claude Code sends the model holds the brief (SessionStart), the prompt's memory hits
    (UserPromptSubmit, turned on here), and, after the failed call, the earlier fix (PostToolUseFailure)."""
    from fake_anthropic import fake_model

    from memory_server.api import Memory

    compress_transcript(fixed_build_session(tmp_path / "transcripts"), MemoryRoot(project))
    with Memory(project, keyword_only=True) as memory:
        memory.index()
    (project / "memory.yaml").write_text("hooks:\n  prompt_recall: true\n  prompt_bar: 0.0\n", encoding="utf-8")
    plugin = built_plugin(tmp_path)
    configure_inline(home)
    failing = "echo 'belt/tension.go:88:7: undefined: retensionBelt' >&2; exit 1"
    prompt = "The belt tension module build fails again, please fix it"
    with fake_model(failing) as (model, url):
        env = base_env(home, ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="not-a-key", CLAUDE_CODE_MAX_RETRIES="0")
        argv = [any_claude_bin, "--plugin-dir", str(plugin), "-p", prompt, "--allowedTools", "Bash"]
        result = run(argv, cwd=project, env=env)
        sent = model.sent()
    assert result.returncode == 0, show(result)
    called = [i for i, body in enumerate(sent) if "toolu_fake_1" in body and "tool_result" in body]
    assert len(called) == 1, f"the model's one Bash call came back {len(called)} times\n{show(result)}"
    before, after = sent[: called[0]], sent[called[0]]
    assert any("<memory-brief>" in body and "belt.Retension" in body for body in before), "the brief"
    assert any("<memory-recall>" in body for body in before), "the prompt's memory hits"
    assert "<memory-earlier-fix>" in after and "belt.Retension" in after and "7a7a7a7a" in after, "the earlier fix"
    assert "retensionBelt" in after


@pytest.mark.parametrize("event", list(HOOK_EVENTS))
def test_hooks_never_fail_the_session(event: str, plugin_copy: Path, home: Path, tmp_path: Path) -> None:
    """Bad input and a folder that is not a memory root: the hook says so on stderr and exits 0."""
    not_a_root = tmp_path / "plain"
    not_a_root.mkdir()
    plugin = plugin_copy
    (hook,) = declared_hooks(plugin)[event]
    env = base_env(home, CLAUDE_PROJECT_DIR=str(not_a_root), CLAUDE_PLUGIN_ROOT=str(plugin))
    for stdin in ("not json", "", hook_input(event, tmp_path / "missing.jsonl", not_a_root)):
        result = subprocess.run(
            hook_argv(event, plugin),
            cwd=not_a_root,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=hook["timeout"] + 30,
        )
        assert result.returncode == 0, show(result)
        assert "Traceback" not in result.stderr, show(result)


def test_hints_name_the_plugin_s_launcher_not_a_bare_memory_server(
    plugin_copy: Path, home: Path, tmp_path: Path
) -> None:
    """Run through the plugin's launcher (as the server, the hooks and the /dream skill are), a hint names the
    launcher by its path: PATH has no `memory-server` here, so a bare one would be "command not found"."""
    plain = tmp_path / "plain"
    plain.mkdir()
    launcher = plugin_copy / "bin" / "memory-server"
    env = base_env(home, CLAUDE_PROJECT_DIR=str(plain))
    env["PATH"] = os.pathsep.join(p for p in ("/usr/bin", "/bin") if not (Path(p) / "memory-server").exists())
    searched = run([str(launcher_python()), str(launcher), "search", "belts"], cwd=plain, env=env)
    assert searched.returncode == 2 and f"run `{launcher} init --root {plain}`" in searched.stderr, show(searched)
    stdin = hook_input("SessionStart", tmp_path / "missing.jsonl", plain)
    started = run(hook_argv("SessionStart", plugin_copy), cwd=plain, env=env, stdin=stdin)
    assert started.returncode == 0 and f"run `{launcher} init --root {plain}`" in started.stderr, show(started)
    assert not list(plain.iterdir())

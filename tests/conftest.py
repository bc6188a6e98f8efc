"""Shared fixtures: small real memory roots in tmp_path, a deterministic fake embedder, and the command line."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/mcp_client.py

from memory_server import Memory  # noqa: E402
from memory_server.files.scaffold import init_root  # noqa: E402
from memory_server.testing import FakeEmbedder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# Data that is not in the repository (real transcripts, benchmark sets): ../shared beside it, or
# MEMORY_SERVER_SHARED. Tests that need it skip, with a one-line reason, when it is absent.
SHARED = Path(os.environ.get("MEMORY_SERVER_SHARED") or REPO.parent / "shared").expanduser()
SHARED_TRANSCRIPTS = SHARED / "transcripts"
CLI = [sys.executable, "-m", "memory_server"]  # what the `memory-server` script runs

# Settings come only from the test itself: never from the user's own config file or environment.
os.environ["MEMORY_SERVER_CONFIG"] = os.devnull
for _name in ("MEMORY_TRANSCRIPTS_DIR", "MEMORY_AUTO_MEMORY_DIR", "MEMORY_VECTORS_URL", "MEMORY_VECTORS_TOKEN"):
    os.environ.pop(_name, None)


def require_shared(path: Path) -> Path:
    """`path` (data beside the repository); skips the calling test, naming the path, when it is missing."""
    if not path.exists():
        where = "../shared or MEMORY_SERVER_SHARED" if path.is_relative_to(SHARED) else "MEMORY_BENCH_DATA"
        pytest.skip(f"needs {path}: data beside the repository ({where}), see README")
    return path


# Every process a test starts carries this mark in its environment (tests that build an environment by
# hand copy it), so the end of the run can tell whether any of them outlived the test that started it.
RUN_MARK = "MEMORY_SERVER_TEST_RUN"
os.environ.setdefault(RUN_MARK, uuid.uuid4().hex)
ORPHAN_GRACE_SECONDS = 10.0  # detached session-end compressions may still be finishing
TEST_WORKER = "exec(eval(sys.stdin.readline()))"  # how execnet starts pytest-xdist's workers


def marked_processes() -> dict[int, str]:
    """Live processes (other than this one and the run's own test workers) whose environment carries this run's
    mark: pid -> command."""
    mark = f"{RUN_MARK}={os.environ[RUN_MARK]}".encode()
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if mark not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if TEST_WORKER in command:  # the run's own test workers (pytest -n), not something a test started
            continue
        if state != "Z":
            found[int(entry)] = command.strip()
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No process a test started may survive the run: the suite fails, naming them (and kills them). With
    test workers (pytest -n), the run that started them checks, at its end."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    deadline = time.monotonic() + ORPHAN_GRACE_SECONDS
    orphans = marked_processes()
    while orphans and time.monotonic() < deadline:
        time.sleep(0.2)
        orphans = marked_processes()
    if not orphans:
        return
    for pid in orphans:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = "\n".join(f"  pid {pid}: {command[:200]}" for pid, command in sorted(orphans.items()))
    message = f"processes started by the tests outlived the run (now killed):\n{lines}"
    if reporter is not None:
        reporter.write_line(message, red=True)
    else:
        print(message, file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


PRINTER_TOPIC = """\
---
title: Printer
description: How the 3D printer is set up
updated: 2026-03-01
tags: [hardware, klipper]
---
# Printer

The printer runs Klipper on 192.168.1.50. After editing printer.cfg, send `SAVE_CONFIG`.

## Belts

- Belt tension: tightened the X belt until it twangs at 110 Hz.
- Error code E-1042 means the endstop did not trigger.

## Firmware

```bash
make menuconfig && make flash FLASH_DEVICE=/dev/ttyACM0
```
"""

TOOLING_TOPIC = """\
---
title: Tooling
description: Build and test tools
updated: 2026-02-10
---
# Tooling

We package the project with poetry and run the tests with pytest.
"""

SESSION = """\
---
session_id: abcd1234-0000-0000-0000-000000000000
started: 2026-03-02T10:00:00Z
ended: 2026-03-02T11:00:00Z
---
# Belt tuning

## Requests

- We tried loosening the belt because of ringing; it made it worse.
- Check the `SAVE_CONFIG` step again.
"""


@dataclass
class CliResult:
    """What a command printed and how it ended, as a finished process would report it."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(
    *args: str,
    input: str | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> CliResult:
    """Run `memory-server ARGS...` in this process with click's CliRunner: the same command tree and the same
    exit handling (`main`) as the script, its stdin, stdout and stderr captured, log lines included. Tests
    about real processes (signals, pipes, terminals, kills) use run_cli_process."""
    from click.testing import CliRunner

    from memory_server.cli import main
    from memory_server.commands.common import LOG_FORMAT

    root_logger = logging.getLogger()
    level, formats = root_logger.level, [(h, h.formatter) for h in root_logger.handlers]
    with contextlib.chdir(cwd or os.getcwd()), CliRunner().isolation(input=input, env=env) as (out, err, _):
        handler = logging.StreamHandler(sys.stderr)  # the runner's stderr, for as long as the command runs
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root_logger.addHandler(handler)
        try:
            code = main(list(args))
        finally:
            root_logger.removeHandler(handler)
            root_logger.setLevel(level)
            for h, formatter in formats:
                h.setFormatter(formatter)
        stdout, stderr = out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace")
    return CliResult(code, stdout, stderr)


def run_cli_process(
    *args: str,
    input: str | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run `memory-server ARGS...` as a subprocess, as the plugin and a person do."""
    return subprocess.run(
        [*CLI, *args],
        input=input,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def small_root(r: Path) -> Path:
    """Make `r` a small memory root: two topics, one session, MEMORY.md and CLAUDE.md."""
    init_root(r)
    write(r, "topics/printer.md", PRINTER_TOPIC)
    write(r, "topics/tooling.md", TOOLING_TOPIC)
    write(r, "sessions/compressed/2026/2026-03-02-abcd1234-belt-tuning.md", SESSION)
    return r


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A small memory root: two topics, one session, MEMORY.md and CLAUDE.md."""
    return small_root(tmp_path / "memory")


@pytest.fixture
def memory(root: Path):
    """Memory over `root` with the keyword index only (no model, no Chroma)."""
    m = Memory(root, keyword_only=True)
    m.index()
    yield m
    m.close()


@pytest.fixture
def fake_memory(root: Path):
    """Memory over `root` with a real embedded Chroma and the deterministic fake embedder."""
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    yield m
    m.close()

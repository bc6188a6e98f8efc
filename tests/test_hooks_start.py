"""`memory-server hook session-start`, as Claude Code runs it: a short line when a dream is due, nothing at all
otherwise (the brief it adds from sessions with content is tested in test_hooks_context.py); fast, light, and
never a failed session."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli

from memory_server.cli import main
from memory_server.dream.gate import DreamGate
from memory_server.dream.start_hook import MAX_CONTEXT_CHARS
from memory_server.files.scaffold import init_root
from memory_server.settings import Settings

HOUR = 3600.0
HEAVY = ("chromadb", "onnxruntime", "tokenizers", "watchdog", "mcp")


def payload(root: Path, source: str = "startup") -> dict:
    return {
        "session_id": "8c1b7d1e-0f3a-4c55-9e2b-6a1f2d3c4b5a",
        "transcript_path": "/home/dev/.claude/projects/x/8c1b7d1e-0f3a-4c55-9e2b-6a1f2d3c4b5a.jsonl",
        "cwd": str(root),
        "hook_event_name": "SessionStart",
        "source": source,
    }


def make_root(tmp_path: Path, sessions: int, hours_since: float) -> Path:
    root = tmp_path / "root"
    init_root(root)
    for i in range(sessions):
        rel = root / f"sessions/compressed/2026/2026-01-{i % 28 + 1:02d}-{i:08x}-work.md"
        rel.parent.mkdir(parents=True, exist_ok=True)
        rel.write_text(f"---\nsession_id: s{i}\n---\n# Work {i}\n")
    DreamGate(root, Settings()).record_dream(time.time() - hours_since * HOUR)
    return root


def hook(root: Path, data: dict | str, *args: str):
    text = data if isinstance(data, str) else json.dumps(data)
    return run_cli("hook", "session-start", *args, input=text, env={"MEMORY_ROOT": ""}, timeout=60)


def context_of(stdout: str) -> str:
    """The text a hook's JSON answer adds to the model's context."""
    answer = json.loads(stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return str(answer["hookSpecificOutput"]["additionalContext"])


def test_due_prints_one_short_line_and_sets_the_flag(tmp_path: Path) -> None:
    root = make_root(tmp_path, sessions=5, hours_since=30)
    done = hook(root, payload(root), "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1, "one JSON line"
    text = context_of(done.stdout)
    assert "/dream" in text and "5 session summaries are new" in text and "30 hours ago" in text
    assert len(text) <= MAX_CONTEXT_CHARS and "\n" not in text, "sessions with nothing to brief: the line alone"
    assert (root / ".dream-pending").read_text().startswith("dream due:")


@pytest.mark.parametrize("sessions, hours", [(4, 30), (5, 23.5)])
def test_not_due_prints_nothing_and_clears_the_flag(tmp_path: Path, sessions: int, hours: float) -> None:
    root = make_root(tmp_path, sessions=sessions, hours_since=hours)
    (root / ".dream-pending").write_text("stale flag\n")
    done = hook(root, payload(root, "resume"), "--root", str(root))
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert not (root / ".dream-pending").exists()


def test_the_root_comes_from_root_then_memory_root_then_the_hook_cwd(tmp_path: Path) -> None:
    root = make_root(tmp_path, sessions=6, hours_since=48)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert "/dream" in hook(root, payload(root)).stdout  # no --root, no MEMORY_ROOT: the hook input's cwd
    assert hook(root, payload(root), "--root", str(elsewhere)).stdout == ""  # --root wins
    done = run_cli("hook", "session-start", input=json.dumps(payload(elsewhere)), env={"MEMORY_ROOT": str(root)})
    assert "/dream" in done.stdout


def test_fast_and_light(tmp_path: Path, monkeypatch, capsys) -> None:
    root = make_root(tmp_path, sessions=300, hours_since=48)
    started = time.monotonic()
    done = hook(root, payload(root), "--root", str(root))
    assert done.returncode == 0 and "/dream" in done.stdout
    assert time.monotonic() - started < 3.0  # interpreter start-up included; the hook's own work is timed below
    for _attempt in range(2):  # the first call imports; the second is the hook's own work
        monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(payload(root))))
        started = time.perf_counter()
        assert main(["hook", "session-start", "--root", str(root)]) == 0
        seconds = time.perf_counter() - started
    busy = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))  # a loaded machine's queue is not the hook's work
    assert seconds < 0.25 * busy and "/dream" in capsys.readouterr().out
    code = (
        "import sys; from memory_server.cli import main; main(['hook', 'session-start', '--root', sys.argv[1]]); "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    light = subprocess.run(
        [sys.executable, "-c", code, str(root)],
        input=json.dumps(payload(root)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert light.stdout.strip().splitlines()[-1] == "[]", light.stdout + light.stderr


def test_never_breaks_the_session(tmp_path: Path) -> None:
    root = make_root(tmp_path, sessions=5, hours_since=48)
    for bad in ("this is not json", "[1]", "[" * 50_000 + "]" * 50_000):
        done = hook(root, bad, "--root", str(root))
        assert done.returncode == 0 and done.stdout == "" and "Traceback" not in done.stderr
    not_a_root = tmp_path / "elsewhere"
    not_a_root.mkdir()
    done = hook(not_a_root, payload(not_a_root), "--root", str(not_a_root))
    assert done.returncode == 0 and done.stdout == ""
    (root / "memory.yaml").write_text("dream: [broken\n")
    done = hook(root, payload(root), "--root", str(root))
    assert done.returncode == 0 and "/dream" in done.stdout  # a broken memory.yaml: default thresholds
    (root / "memory.yaml").write_text("dream:\n  min_sessions: 0.5\n")
    done = hook(root, payload(root), "--root", str(root))
    assert done.returncode == 0 and "/dream" in done.stdout  # a bad value: default thresholds too

"""The SessionStart hook: a short line when a dream is due, nothing at all otherwise; fast."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_server.dream.gate import DreamGate
from memory_server.dream.start_hook import MAX_CONTEXT_CHARS, session_start
from memory_server.files.scaffold import init_root
from memory_server.settings import Settings

SRC = str(Path(__file__).resolve().parents[1] / "src")
HOUR = 3600.0


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
        rel = root / f"sessions/compressed/2026/2026-01-{i + 1:02d}-{i:08x}-work.md"
        rel.parent.mkdir(parents=True, exist_ok=True)
        rel.write_text(f"---\nsession_id: s{i}\n---\n# Work {i}\n")
    DreamGate(root, Settings()).record_dream(time.time() - hours_since * HOUR)
    return root


def run_hook(root: Path, data: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "memory_server.dream.start_hook"],
        input=data, capture_output=True, text=True, timeout=30, env={**os.environ, "PYTHONPATH": SRC},
        cwd=root,
    )
    return proc, time.monotonic() - started


def test_due_prints_one_short_line_and_sets_the_flag(tmp_path: Path) -> None:
    root = make_root(tmp_path, sessions=5, hours_since=30)
    text = session_start(payload(root), root)
    assert "/dream" in text and "5 session summaries are new" in text and "30 hours ago" in text
    assert len(text) <= MAX_CONTEXT_CHARS and "\n" not in text
    assert (root / ".dream-pending").read_text().startswith("dream due:")


@pytest.mark.parametrize("sessions, hours", [(4, 30), (5, 23)])
def test_not_due_prints_nothing_and_clears_the_flag(tmp_path: Path, sessions: int, hours: float) -> None:
    root = make_root(tmp_path, sessions=sessions, hours_since=hours)
    (root / ".dream-pending").write_text("stale flag\n")
    assert session_start(payload(root), root) == ""
    assert not (root / ".dream-pending").exists()


def test_controllable_clock(tmp_path: Path) -> None:
    root = make_root(tmp_path, sessions=5, hours_since=0)
    now = time.time()
    assert session_start(payload(root, "resume"), root, clock=lambda: now + 23.5 * HOUR) == ""
    assert "/dream" in session_start(payload(root, "clear"), root, clock=lambda: now + 24 * HOUR)


def test_as_a_subprocess_with_the_hook_json_on_stdin(tmp_path: Path) -> None:
    root = make_root(tmp_path, sessions=6, hours_since=48)
    proc, seconds = run_hook(root, json.dumps(payload(root)))
    assert proc.returncode == 0, proc.stderr
    assert "/dream" in proc.stdout and len(proc.stdout) <= MAX_CONTEXT_CHARS + 1
    assert seconds < 2.0  # interpreter start-up included; the hook's own work is timed below
    DreamGate(root, Settings()).record_dream(time.time())
    proc, _ = run_hook(root, json.dumps(payload(root, "compact")))
    assert proc.returncode == 0 and proc.stdout == ""
    assert not (root / ".dream-pending").exists()


def test_fast_and_light(tmp_path: Path) -> None:
    root = make_root(tmp_path, sessions=300, hours_since=48)
    started = time.perf_counter()
    assert session_start(payload(root), root)
    assert time.perf_counter() - started < 0.25
    code = (
        "import io, json, sys; from memory_server.dream import start_hook as h; "
        f"h.main([], io.StringIO({json.dumps(json.dumps(payload(root)))}), io.StringIO()); "
        "print(sorted(m for m in ('chromadb', 'onnxruntime', 'tokenizers', 'watchdog') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": SRC})
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_never_breaks_the_session(tmp_path: Path) -> None:
    root = make_root(tmp_path, sessions=5, hours_since=48)
    proc, _ = run_hook(root, "this is not json")
    assert proc.returncode == 0 and proc.stdout == ""
    not_a_root = tmp_path / "elsewhere"
    not_a_root.mkdir()
    assert session_start(payload(not_a_root), not_a_root) == ""
    (root / "memory.yaml").write_text("dream: [broken\n")
    assert "/dream" in session_start(payload(root), root)  # a broken memory.yaml: default thresholds

"""The dream due-gate: hours since the last dream and sessions closed since, with a controllable clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_server.dream.gate import DreamGate
from memory_server.files.scaffold import init_root
from memory_server.settings import Settings, load_settings

HOUR = 3600.0
T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def add_sessions(root: Path, count: int, start: int = 0) -> list[str]:
    made = []
    for i in range(start, start + count):
        rel = f"sessions/compressed/2026/2026-01-{i % 28 + 1:02d}-{i:08x}-work.md"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"---\nsession_id: s{i}\n---\n# Work {i}\n\n## Goal\n\nDo thing {i}.\n")
        made.append(rel)
    return made


@pytest.fixture
def root(tmp_path: Path) -> Path:
    init_root(tmp_path / "root")
    return tmp_path / "root"


def test_not_due_at_23_hours_or_4_sessions_due_at_24_hours_and_5(root: Path) -> None:
    clock = Clock(T0)
    gate = DreamGate(root, Settings(), clock=clock)
    gate.record_dream(T0)
    add_sessions(root, 4)
    clock.now = T0 + 23 * HOUR
    due, why = gate.due()
    assert not due and "4 sessions closed since, needs 5" in why and "23.0 hours ago" in why
    clock.now = T0 + 24 * HOUR
    due, why = gate.due()
    assert (due, why) == (False, "dream not due: 4 sessions closed since, needs 5")
    add_sessions(root, 1, start=4)
    clock.now = T0 + 23 * HOUR
    due, why = gate.due()
    assert not due and "needs 24 hours" in why and "sessions" not in why
    clock.now = T0 + 24 * HOUR
    due, why = gate.due()
    assert due and why.startswith("dream due: 5 sessions closed since and the last dream was 24.0 hours ago")


def test_processed_sessions_no_longer_count(root: Path) -> None:
    clock = Clock(T0 + 48 * HOUR)
    gate = DreamGate(root, Settings(), clock=clock)
    made = add_sessions(root, 6)
    assert gate.due()[0]  # never dreamed: only the sessions count
    gate.mark_processed(made[:2], "20260101-000000")
    gate.record_dream(T0)
    assert gate.unprocessed_sessions() == made[2:]
    due, why = gate.due()
    assert not due and "4 sessions closed since, needs 5" in why


def test_thresholds_are_settings(root: Path) -> None:
    (root / "memory.yaml").write_text("dream:\n  min_hours: 1\n  min_sessions: 2\n")
    clock = Clock(T0 + 2 * HOUR)
    gate = DreamGate(root, load_settings(root), clock=clock)
    gate.record_dream(T0)
    add_sessions(root, 2)
    assert gate.due()[0]


def test_state_is_rebuilt_from_the_proposals_when_dot_memory_is_gone(root: Path) -> None:
    made = add_sessions(root, 5)
    folder = root / "dreams" / "20260101-000000"
    folder.mkdir(parents=True)
    meta = {
        "id": folder.name,
        "created": T0,
        "sessions": made[:3],
        "hunks": [{"n": 1, "fingerprints": ["abc"], "status": "rejected"}],
    }
    (folder / "proposal.json").write_text(json.dumps(meta))
    gate = DreamGate(root, Settings(), clock=Clock(T0 + 30 * HOUR))
    state = gate.load_state()
    assert state["last_dream"] == T0 and "abc" in state["rejected"]
    assert gate.unprocessed_sessions() == made[3:]
    assert not gate.due()[0]


def test_files_that_are_not_sessions_do_not_count(root: Path) -> None:
    add_sessions(root, 4)
    d = root / "sessions" / "compressed" / "2026"
    (d / ".2026-01-09-x.md.tmp").write_text("partial")
    (d / "notes.txt").write_text("not markdown")
    gate = DreamGate(root, Settings(), clock=Clock(T0))
    assert len(gate.session_files()) == 4

"""`status` warns before Claude Code's clean-up deletes transcripts nobody kept; `keep` keeps them.

Claude Code's settings come from a throwaway CLAUDE_CONFIG_DIR; transcripts are aged by their modification
time, as Claude Code's clean-up reads them. The command line runs in process (CliRunner)."""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

import pytest
from conftest import run_cli
from session_script import Script

from memory_server import Memory
from memory_server.files.claude_home import user_settings
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import init_root
from memory_server.sessions.compress import compress_transcript
from memory_server.sessions.kept import find_kept

DAY = 86400.0


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Three compressed sessions, none kept (compressed with keeping off, as before kept copies existed):
    transcripts last changed 6, 2 and 1 days ago; Claude Code's cleanupPeriodDays is 10."""
    claude = tmp_path / "claude"
    folder = claude / "projects" / "-home-dev-project"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("MEMORY_TRANSCRIPTS_DIR", str(folder))
    (claude / "settings.json").parent.mkdir(parents=True, exist_ok=True)
    (claude / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 10, "model": "opus"}))
    root = tmp_path / "project"
    init_root(root)
    (root / "memory.yaml").write_text("transcripts:\n  keep: false\n", encoding="utf-8")
    out = {"root": root, "claude": claude, "folder": folder}
    now = time.time()
    for n, age in ((1, 6), (2, 2), (3, 1)):
        s = Script(f"{n}{n}{n}{n}{n}{n}{n}{n}-0000-4000-8000-00000000000{n}", dt.datetime(2026, 3, n, tzinfo=dt.UTC))
        s.user(f"Task number {n}: rename the config loader.")
        s.assistant("Renamed it.")
        path = s.save(folder)
        assert compress_transcript(path, MemoryRoot(root))
        os.utime(path, (now - age * DAY, now - age * DAY))
        out[f"t{n}"] = path
    (root / "memory.yaml").write_text("", encoding="utf-8")  # keeping on again (the default)
    return out


def test_claude_codes_cleanup_period_comes_from_its_user_settings(setup: dict[str, Path]) -> None:
    assert user_settings().cleanup_period_days == 10
    (setup["claude"] / "settings.json").write_text("{not json")
    broken = user_settings()
    assert broken.cleanup_period_days == 30 and "not valid JSON" in (broken.problem or "")
    (setup["claude"] / "settings.json").write_text(json.dumps({"cleanupPeriodDays": "forever"}))
    assert user_settings().cleanup_period_days == 30
    (setup["claude"] / "settings.json").unlink()
    assert user_settings().cleanup_period_days == 30 and user_settings().problem is None


def test_status_warns_about_transcripts_deleted_within_a_week_that_are_not_kept(setup: dict[str, Path]) -> None:
    with Memory(setup["root"], keyword_only=True) as memory:
        kept = memory.status().kept_transcripts
    assert kept is not None
    assert kept.cleanup_period_days == 10 and kept.transcripts == 3 and kept.kept == 0
    # 10 days after the last change: 4, 8 and 9 days left; a week's warning covers the first only
    assert kept.at_risk_count == 1
    risk = kept.at_risk[0]
    assert risk.transcript == str(setup["t1"]) and risk.state == "not kept"
    assert 3.9 < risk.deleted_in_days < 4.1
    shown = run_cli("status", "--root", str(setup["root"]))
    assert shown.returncode == 0, shown.stderr
    assert "1 at risk" in shown.stdout and f"at risk: {setup['t1']}" in shown.stdout
    assert "memory-server keep" in shown.stdout  # the note says what to do


def test_keep_keeps_every_transcript_not_kept_yet_and_status_is_quiet_after(setup: dict[str, Path]) -> None:
    done = run_cli("keep", "--root", str(setup["root"]))
    assert done.returncode == 0, done.stderr
    assert "3 kept now, 0 already kept, 0 gone" in done.stdout
    for n in (1, 2, 3):
        assert find_kept(MemoryRoot(setup["root"]), setup[f"t{n}"].stem) is not None
    again = run_cli("keep", "--root", str(setup["root"]))
    assert "0 kept now, 3 already kept" in again.stdout
    with Memory(setup["root"], keyword_only=True) as memory:
        kept = memory.status().kept_transcripts
    assert kept is not None and kept.kept == 3 and kept.at_risk_count == 0


def test_a_transcript_that_grew_after_it_was_kept_is_at_risk_until_kept_again(setup: dict[str, Path]) -> None:
    with Memory(setup["root"], keyword_only=True) as memory:
        memory.keep_transcripts()
        t1 = setup["t1"]
        stamp = t1.stat().st_mtime
        with open(t1, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": "one more thing"}}) + "\n")
        os.utime(t1, (stamp + 60, stamp + 60))  # changed after its copy... but the copy is newer still
        kept_copy = find_kept(MemoryRoot(setup["root"]), t1.stem)
        assert kept_copy is not None
        os.utime(kept_copy, (stamp, stamp))
        kept = memory.status().kept_transcripts
        assert kept is not None and [r.state for r in kept.at_risk] == ["kept in part"]
        report = memory.keep_transcripts()
        assert [r.lines_added for r in report.kept] == [1]
        kept = memory.status().kept_transcripts
        assert kept is not None and kept.at_risk_count == 0


def test_a_transcript_deleted_before_it_was_kept_is_reported_gone(setup: dict[str, Path]) -> None:
    setup["t1"].unlink()
    with Memory(setup["root"], keyword_only=True) as memory:
        report = memory.keep_transcripts()
        assert report.gone == [str(setup["t1"])] and len(report.kept) == 2
        status = memory.status()
    assert status.kept_transcripts is not None and status.kept_transcripts.gone_count == 1
    assert any("deleted by Claude Code before they were kept" in n for n in status.notes)
    done = run_cli("keep", "--root", str(setup["root"]), "--json")
    assert json.loads(done.stdout)["gone"] == [str(setup["t1"])]

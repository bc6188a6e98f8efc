"""A session end is never lost: when its compression cannot run (another compression holds the lock past the
job's wait), the transcript waits in a queue on disk, `status` says so and why, and the next hook, the server
or `memory-server compress --pending` compresses it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from filelock import FileLock

from memory_server import Memory
from memory_server.cli import main
from memory_server.files.locks import COMPRESS_LOCK
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import init_root
from memory_server.sessions.hooks import session_end

LOCK_SECONDS_ENV = "MEMORY_SERVER_COMPRESS_LOCK_SECONDS"


def queued(root: MemoryRoot) -> list:
    from memory_server.sessions.pending import queued as waiting

    return waiting(root)


def enqueue(root: MemoryRoot, transcript: Path, reason: str) -> None:
    from memory_server.sessions.pending import enqueue as put

    put(root, transcript, reason)


SID = "5e551011-0000-4000-8000-0000000000aa"
WAIT_SECONDS = 60.0


def _transcript(folder: Path, sid: str = SID) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    records = [
        {"type": "user", "sessionId": sid, "timestamp": "2026-03-01T10:00:00Z",
         "message": {"role": "user", "content": "Move the retry loop into the uploader"}},
        {"type": "assistant", "sessionId": sid, "timestamp": "2026-03-01T10:01:00Z",
         "message": {"role": "assistant", "id": "m1", "content": [{"type": "text", "text": "Done."}]}},
    ]  # fmt: skip
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _sessions(root: Path) -> list[Path]:
    return sorted((root / "sessions" / "compressed").rglob("*.md"))


def _wait(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _status(root: Path) -> dict:
    with Memory(root, keyword_only=True) as memory:
        return memory.status().model_dump(mode="json", exclude_none=True)


@pytest.fixture
def memroot(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    init_root(root)
    return root


def test_a_session_end_that_cannot_get_the_lock_waits_and_is_compressed_later(
    memroot: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = _transcript(tmp_path / "projects")
    monkeypatch.setenv(LOCK_SECONDS_ENV, "1")  # the job gives up on the lock after a second
    root = MemoryRoot(memroot)
    with FileLock(str(root.ensure_state_dir() / COMPRESS_LOCK)):  # a long compression holds the lock
        session_end({"transcript_path": str(transcript), "hook_event_name": "SessionEnd"}, root)
        _wait(lambda: any("held" in p.reason for p in queued(root)), "the job did not record why it waits")
        assert _sessions(memroot) == []
        queue = _status(memroot)["sessions_queue"]
        assert queue["waiting"] == 1 and queue["items"][0]["transcript"] == str(transcript)
        assert "compress --pending" in queue["how"]
    assert main(["status", "--root", str(memroot)]) == 0
    assert "session waiting:" in capsys.readouterr().out
    assert main(["compress", "--pending", "--root", str(memroot)]) == 0
    assert len(_sessions(memroot)) == 1 and queued(root) == []
    assert _status(memroot)["sessions_queue"] == {"waiting": 0, "failed": 0}


def test_the_next_hook_compresses_what_waits(memroot: Path, tmp_path: Path) -> None:
    root = MemoryRoot(memroot)
    enqueue(root, _transcript(tmp_path / "projects"), "another compression held the lock")
    stdin = json.dumps({"hook_event_name": "SessionStart", "cwd": str(memroot), "source": "startup"})
    from click.testing import CliRunner

    from memory_server.cli import cli

    result = CliRunner().invoke(cli, ["hook", "session-start", "--root", str(memroot)], input=stdin)
    assert result.exit_code == 0, result.output
    _wait(lambda: len(_sessions(memroot)) == 1 and not queued(root), "the next hook did not compress it")


def test_the_server_compresses_what_waits(memroot: Path, tmp_path: Path) -> None:
    root = MemoryRoot(memroot)
    enqueue(root, _transcript(tmp_path / "projects"), "another compression held the lock")
    memory = Memory(memroot, keyword_only=True)
    worker = memory.background(watch=False)
    worker.start()
    try:
        _wait(lambda: len(_sessions(memroot)) == 1 and not queued(root), "the server did not compress it")
    finally:
        worker.stop()
        memory.close()


def test_a_transcript_that_cannot_be_read_is_listed_as_failed(
    memroot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = MemoryRoot(memroot)
    missing = tmp_path / "projects" / "gone.jsonl"
    enqueue(root, missing, "queued by SessionEnd")
    assert main(["compress", "--pending", "--root", str(memroot)]) == 2
    assert "failed:" in capsys.readouterr().err
    [item] = _status(memroot)["sessions_queue"]["items"]
    assert item["state"] == "failed" and "cannot read transcript" in item["reason"] and item["attempts"] == 1
    _transcript(tmp_path / "projects", "gone")  # it comes back: the next drain compresses it
    assert main(["compress", "--pending", "--root", str(memroot)]) == 0
    assert queued(root) == []


def test_a_manual_compress_that_waits_too_long_is_queued_not_lost(
    memroot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = MemoryRoot(memroot)
    transcript = _transcript(tmp_path / "projects")
    with FileLock(str(root.ensure_state_dir() / COMPRESS_LOCK)):
        assert main(["compress", str(transcript), "--lock-timeout", "0.2", "--root", str(memroot)]) == 0
    assert "queued" in capsys.readouterr().err
    assert [p.transcript for p in queued(root)] == [str(transcript)]

"""The SessionEnd and PreCompact hooks return at once and the session file appears in the background."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import SHARED_TRANSCRIPTS, require_shared
from filelock import FileLock

from memory_server.files.locks import COMPRESS_LOCK
from memory_server.files.root import MemoryRoot
from memory_server.parse.frontmatter import read_front_matter
from memory_server.sessions.hooks import log_path, pre_compact, session_end, spawn_compression

SESSION = "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
WAIT_SECONDS = 30.0


def require(path: Path) -> Path:
    return require_shared(path)


@pytest.fixture
def memroot(tmp_path: Path) -> MemoryRoot:
    (tmp_path / "root" / "topics").mkdir(parents=True)  # a memory root: only those get session records
    return MemoryRoot(tmp_path / "root")


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    """A copy of a real session where Claude Code would keep it."""
    folder = tmp_path / "projects" / "-path-to-Demo"
    folder.mkdir(parents=True)
    copy = folder / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    copy.write_bytes(require(SHARED_TRANSCRIPTS / SESSION).read_bytes())
    return copy


def payload(transcript: Path | str, event: str = "SessionEnd", **extra: object) -> dict:
    return {
        "session_id": "5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
        "transcript_path": str(transcript),
        "cwd": "/path/to/Demo",
        "hook_event_name": event,
        **extra,
    }


def session_files(root: MemoryRoot) -> list[Path]:
    return sorted(root.sessions_dir.rglob("*.md")) if root.sessions_dir.is_dir() else []


def wait_for(predicate, what: str, root: MemoryRoot) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    log = log_path(root)
    written = log.read_text() if log.exists() else "(none)"
    raise AssertionError(f"{what} within {WAIT_SECONDS:.0f} s; job log:\n{written}")


def test_session_end_returns_at_once_and_the_file_appears(transcript: Path, memroot: MemoryRoot) -> None:
    # With the compression lock held, a hook that compressed in-line would block; this one returns, and
    # the detached job writes the file once the lock is free.
    with FileLock(str(memroot.ensure_state_dir() / COMPRESS_LOCK)):
        session_end(payload(transcript, reason="exit"), memroot)
        assert session_files(memroot) == []
    wait_for(lambda: len(session_files(memroot)) == 1, "the compressed session did not appear", memroot)
    (out,) = session_files(memroot)
    meta = read_front_matter(out)
    assert meta["session_id"] == "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    assert meta["transcript"] == str(transcript)
    wait_for(lambda: "compressed" in log_path(memroot).read_text(), "the job did not log its work", memroot)


def test_pre_compact_then_session_end_gives_a_continuation(transcript: Path, memroot: MemoryRoot) -> None:
    lines = transcript.read_bytes().splitlines(keepends=True)
    transcript.write_bytes(b"".join(lines[:30]))
    pre_compact(payload(transcript, "PreCompact", trigger="auto"), memroot)
    wait_for(lambda: len(session_files(memroot)) == 1, "PreCompact wrote nothing", memroot)
    (first,) = session_files(memroot)
    first_bytes = first.read_bytes()

    with open(transcript, "ab") as fh:
        fh.write(b"".join(lines[30:]))
    session_end(payload(transcript, reason="exit"), memroot)
    wait_for(lambda: len(session_files(memroot)) == 2, "SessionEnd wrote no continuation", memroot)
    assert first.read_bytes() == first_bytes
    second = next(p for p in session_files(memroot) if p != first)
    assert second.name == first.stem + "-part2.md"
    assert read_front_matter(second)["lines"] == [31, len(lines)]


def test_racing_hooks_write_one_file_set(transcript: Path, memroot: MemoryRoot) -> None:
    jobs = [spawn_compression(transcript, memroot) for _ in range(4)]
    for job in jobs:
        assert job.wait(timeout=120) == 0
    assert len(session_files(memroot)) == 1


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"transcript_path": None},
        {"transcript_path": 42},
        {"transcript_path": ""},
        {"transcript_path": "/definitely/not/here.jsonl"},
        {"transcript_path": "bad\x00path"},
        "not even a dict",
    ],
    ids=["empty", "none", "number", "blank", "missing", "nul", "string"],
)
def test_a_bad_payload_is_logged_never_raised(bad: object, memroot: MemoryRoot, caplog) -> None:
    for hook in (session_end, pre_compact):
        hook(bad, memroot)  # type: ignore[arg-type]
    assert "nothing to compress" in caplog.text
    time.sleep(0.2)
    assert session_files(memroot) == []


def test_a_directory_as_transcript_is_ignored(tmp_path: Path, memroot: MemoryRoot) -> None:
    session_end(payload(tmp_path), memroot)
    assert session_files(memroot) == []


def test_a_folder_that_is_not_a_memory_root_gets_nothing(
    transcript: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = tmp_path / "project"
    bare.mkdir()
    session_end(payload(transcript), MemoryRoot(bare))
    assert "nothing recorded" in capsys.readouterr().err
    assert list(bare.iterdir()) == []


def test_hook_input_as_claude_code_sends_it(transcript: Path, memroot: MemoryRoot) -> None:
    """The payload is the hook's stdin JSON, decoded as the CLI would."""
    raw = json.dumps(payload(transcript, reason="clear"))
    session_end(json.loads(raw), memroot)
    wait_for(lambda: len(session_files(memroot)) == 1, "the compressed session did not appear", memroot)


def test_the_session_end_hook_stays_light(memroot: MemoryRoot, tmp_path: Path) -> None:
    """Claude Code gives a SessionEnd hook about 1.5 s, then kills it: the hook queues the transcript and starts
    the job without importing any compression code (the parser, the redaction patterns, the kept copy's writer),
    the settings' pydantic models or anything else heavy. When the queue's module imported the compressor, a
    busy machine took longer than that: the hook was killed after queueing the session and before starting the
    job, and nothing recorded the session until the next one started."""
    import subprocess
    import sys

    from memory_server.sessions.kept import find_kept

    sid = "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
    records = [
        {"type": "user", "sessionId": sid, "timestamp": "2026-03-01T10:00:00Z",
         "message": {"role": "user", "content": "Move the retry loop into the uploader"}},
        {"type": "assistant", "sessionId": sid, "timestamp": "2026-03-01T10:01:00Z",
         "message": {"role": "assistant", "id": "m1", "content": [{"type": "text", "text": "Done."}]}},
    ]  # fmt: skip
    transcript = tmp_path / "projects" / f"{sid}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    heavy = (
        "memory_server.sessions.compress",
        "memory_server.sessions.keep",
        "memory_server.sessions.reader",
        "memory_server.sessions.redact",
        "memory_server.settings",
        "pydantic",
        "chromadb",
        "onnxruntime",
        "numpy",
    )
    code = (
        "import sys; from memory_server.cli import main; main(['hook', 'session-end', '--root', sys.argv[1]]); "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    hook_input = json.dumps({"hook_event_name": "SessionEnd", "transcript_path": str(transcript)})
    done = subprocess.run(
        [sys.executable, "-c", code, str(memroot.path)], input=hook_input, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr
    # The job the hook started records the session and keeps its transcript.
    wait_for(lambda: len(session_files(memroot)) == 1, "the compressed session did not appear", memroot)
    wait_for(lambda: find_kept(memroot, sid) is not None, "the transcript was not kept", memroot)

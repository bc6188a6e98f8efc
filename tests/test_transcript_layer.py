"""Compressed sessions are searchable; raw transcripts are the keyword-only arbitration layer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SHARED, require_shared

from memory_server import Memory, NotFoundError, PathRefusedError
from memory_server.files.root import MemoryRoot
from memory_server.sessions.compress import compress_transcript
from memory_server.testing import FakeEmbedder

TRANSCRIPTS = SHARED / "transcripts"
PUSH = "chiphuyen__sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl"


@pytest.fixture
def project(tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    require_shared(TRANSCRIPTS / PUSH)
    folder = tmp_path / "claude-projects" / "-Users-chip-dev-ai-music"
    folder.mkdir(parents=True)
    shutil.copy(TRANSCRIPTS / PUSH, folder / PUSH)
    # Another folder than this project's own: only the user's environment (or user config) may name it.
    monkeypatch.setenv("MEMORY_TRANSCRIPTS_DIR", str(folder))
    return root, folder


def test_a_real_transcript_becomes_a_searchable_session(project):
    root, folder = project
    written = compress_transcript(folder / PUSH, MemoryRoot(root))
    assert len(written) == 1
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    rel = MemoryRoot(root).relpath(written[0])
    hits = m.search_exact("git push origin main")
    assert hits[0].path == rel and hits[0].layer == "session"
    hits, mode = m.search_memory("push the code to github", layers=["session"])
    assert mode == "hybrid" and hits[0].path == rel
    m.close()


def test_transcripts_are_searched_only_when_asked(project):
    root, folder = project
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    virtual = "transcript:" + PUSH[:-6]
    assert all(h.layer != "transcript" for h in m.search_exact("git remote -v", k=10))
    hits = m.search_exact("git remote -v", k=3, layers=["transcript"])
    assert hits and hits[0].path == virtual and hits[0].layer == "transcript"
    # never embedded: the vector index holds only topic and session chunks
    assert m.vectors is not None
    transcript_ids = {cid for cid, path in m.fts.iter_chunk_ids() if path.startswith("transcript:")}
    assert transcript_ids and not (transcript_ids & m.vectors.ids())
    got = m.read(virtual, hits[0].start_line, hits[0].end_line)
    assert "git remote -v" in got.text
    assert m.status().keyword_index.fresh is True
    m.close()


def test_transcripts_outside_the_folder_are_refused(project, tmp_path: Path):
    root, folder = project
    m = Memory(root, keyword_only=True)
    m.index()
    with pytest.raises(NotFoundError):
        m.read("transcript:no-such-session")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(folder / PUSH, outside / "secret.jsonl")
    from memory_server.sessions import transcript_layer as transcript_index

    with pytest.raises(PathRefusedError, match="outside the transcript folder"):
        transcript_index.confine(outside / "secret.jsonl", m.settings)
    with pytest.raises(PathRefusedError):
        transcript_index.confine(root / "MEMORY.md", m.settings)
    m.close()


def test_a_transcript_that_grows_is_reindexed(project):
    root, folder = project
    m = Memory(root, keyword_only=True)
    m.index()
    with open(folder / PUSH, "a") as fh:
        fh.write(
            '{"type":"user","message":{"role":"user","content":"remember ZANZIBAR_PORT_4410"},'
            '"timestamp":"2025-06-10T12:40:00Z","sessionId":"fed8ce56"}\n'
        )
    r = m.index()
    assert r.updated == ["transcript:" + PUSH[:-6]]
    assert m.search_exact("ZANZIBAR_PORT_4410", layers=["transcript"])
    m.close()


def test_a_relative_transcripts_dir_is_read_where_it_was_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """memory.yaml's transcripts.dir is checked against the root (it must be this project's own Claude Code
    folder); a relative one was then read relative to the working directory: another folder than the one
    checked. It is the root's, in both."""
    from conftest import write

    from memory_server.settings import claude_project_dir, load_settings

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    root = tmp_path / "work" / "project"
    write(root, "MEMORY.md", "# Memory\n")
    own = claude_project_dir(root)
    own.mkdir(parents=True)
    sid = "3d4c2b1a-0000-4000-8000-0000000000aa"
    said = {"role": "user", "content": "the relay answers on port 47113 only"}
    record = {"type": "user", "sessionId": sid, "timestamp": "2026-03-01T10:00:00Z", "message": said}
    (own / f"{sid}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    relative = Path("..") / ".." / (own.relative_to(tmp_path))
    write(root, "memory.yaml", f"transcripts:\n  dir: {relative.as_posix()}\n")
    elsewhere = tmp_path / "elsewhere" / "deeper"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)  # from here, the relative path names a folder that does not exist
    assert load_settings(root).transcripts.dir == str(own.resolve())
    with Memory(root, keyword_only=True) as m:
        m.index()
        hits = m.search_exact("port 47113", layers=["transcript"])
    assert [h.path for h in hits] == [f"transcript:{sid}"]

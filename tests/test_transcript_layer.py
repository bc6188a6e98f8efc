"""Compressed sessions are searchable; raw transcripts are the keyword-only arbitration layer."""

from __future__ import annotations

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

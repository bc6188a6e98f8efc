"""Corrupt or missing derived state is detected and rebuilt from the files, with a message on stderr and
in memory_status; it is never fatal.

Covered: a truncated and a garbage keyword index (before the server starts and while it runs), a deleted
and a garbage Chroma store, a manifest that disagrees with the stored chunks and vectors, and a damaged
embedding cache and recall log.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
from pathlib import Path

import anyio
import pytest
from conftest import write
from mcp_client import connect, finds, payload, wait_until_indexed

from memory_server import Memory
from memory_server.testing import FakeEmbedder

PRINTER = "topics/printer.md"


def many_files(root: Path, n: int = 40) -> None:
    for i in range(n):
        write(root, f"topics/extra{i}.md", f"# Extra {i}\n\nToken zzextra{i} lives here.\n\n- item {i} of a list\n")


def indexed(root: Path, embedder: FakeEmbedder | None = None) -> None:
    """Write the extra files and index them (keyword only, unless an embedder is given), then close (the last
    connection checkpoints the WAL into the main file, so damage to it is damage to the index)."""
    many_files(root)
    with Memory(root, keyword_only=embedder is None, embedder=embedder) as m:
        m.index()


def damage(path: Path, how: str) -> None:
    if how == "truncated":
        with open(path, "r+b") as fh:
            fh.truncate(os.path.getsize(path) // 2)
    else:
        size = os.path.getsize(path)
        with open(path, "r+b") as fh:  # same file, garbage inside: what a bad disk or a stray write leaves
            fh.write(os.urandom(min(size, 64 * 1024)))


def all_found(memory: Memory, n: int = 40) -> bool:
    return all(any(h.path == f"topics/extra{i}.md" for h in memory.search_exact(f"zzextra{i}", k=3)) for i in range(n))


# -- the keyword index ------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_a_damaged_keyword_index_is_rebuilt_by_the_next_index_run(root: Path, how: str, caplog) -> None:
    indexed(root)
    damage(root / ".memory" / "index.sqlite3", how)

    m = Memory(root, keyword_only=True)
    with caplog.at_level(logging.WARNING):
        m.index()
    try:
        assert all_found(m)
        assert any("unreadable" in note and "rebuilt" in note for note in m.status().notes), m.status().notes
        assert "unreadable" in caplog.text
    finally:
        m.close()


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_a_search_on_a_damaged_keyword_index_repairs_it_and_answers(root: Path, how: str) -> None:
    indexed(root)
    damage(root / ".memory" / "index.sqlite3", how)
    m = Memory(root, keyword_only=True)
    try:
        hits = m.search_exact("zzextra39", k=3)  # the first thing this process does
        assert [h.path for h in hits] == ["topics/extra39.md"]
        assert all_found(m)
    finally:
        m.close()


def test_server_with_a_garbage_index_answers_and_says_what_it_did(root: Path, tmp_path: Path) -> None:
    indexed(root)
    damage(root / ".memory" / "index.sqlite3", "garbage")
    errlog = tmp_path / "server.err"

    async def main() -> None:
        with open(errlog, "w") as err:
            async with connect(root, errlog=err) as s:
                result = await s.call_tool("search_exact", {"query": "zzextra7"})
                assert not result.is_error, result
                assert [h["path"] for h in payload(result)["hits"]] == ["topics/extra7.md"]
                status = payload(await s.call_tool("memory_status", {}))
                assert any("unreadable" in n for n in status["notes"]), status["notes"]

    anyio.run(main)
    assert "unreadable" in errlog.read_text()


def test_index_replaced_by_garbage_while_the_server_runs(root: Path, tmp_path: Path) -> None:
    """Another process (or a restore from a bad backup) puts a garbage file where the index was, WAL files
    gone: the server's next search notices, rebuilds from the files, and answers."""
    many_files(root)
    errlog = tmp_path / "server.err"

    async def main() -> None:
        with open(errlog, "w") as err:
            async with connect(root, errlog=err) as s:
                await wait_until_indexed(s, semantic=False, until=finds("zzextra3"))
                db = root / ".memory" / "index.sqlite3"
                garbage = db.with_name("garbage.tmp")
                garbage.write_bytes(os.urandom(200_000))
                os.replace(garbage, db)
                for suffix in ("-wal", "-shm"):
                    Path(str(db) + suffix).unlink(missing_ok=True)
                result = await s.call_tool("search_exact", {"query": "zzextra17"})
                assert not result.is_error, result
                assert [h["path"] for h in payload(result)["hits"]] == ["topics/extra17.md"]
                status = payload(await s.call_tool("memory_status", {}))
                assert any("unreadable" in n for n in status["notes"]), status["notes"]
                for i in (5, 39):
                    hits = payload(await s.call_tool("search_exact", {"query": f"zzextra{i}"}))["hits"]
                    assert [h["path"] for h in hits] == [f"topics/extra{i}.md"]

    anyio.run(main)
    assert "unreadable" in errlog.read_text()


# -- the vector index ---------------------------------------------------------------------------------


def vectors_match_chunks(m: Memory) -> bool:
    assert m.vectors is not None
    return m.vectors.ids() == {cid for cid, _ in m.fts.iter_chunk_ids()}


def test_a_deleted_chroma_folder_is_refilled_from_the_files_without_the_model(root: Path, caplog) -> None:
    indexed(root, FakeEmbedder())
    shutil.rmtree(root / ".memory" / "chroma")

    m = Memory(root, embedder=FakeEmbedder())
    try:
        with caplog.at_level(logging.WARNING):
            report = m.index()
        assert vectors_match_chunks(m)
        assert report.chunks_embedded == 0, "vectors came back from the embedding cache, not the model"
        assert any("vector index disagreed" in n for n in m.status().notes)
        assert "vector index disagreed" in caplog.text
        hits, mode = m.search_memory("Token zzextra5", k=3)
        assert mode == "hybrid" and hits[0].path == "topics/extra5.md"
    finally:
        m.close()


def test_a_garbage_chroma_store_is_made_anew(root: Path, caplog) -> None:
    indexed(root, FakeEmbedder())
    store = root / ".memory" / "chroma" / "chroma.sqlite3"
    store.write_bytes(os.urandom(100_000))

    m = Memory(root, embedder=FakeEmbedder())
    try:
        with caplog.at_level(logging.WARNING):
            m.index()
        assert vectors_match_chunks(m)
        assert any("could not be opened" in n for n in m.status().notes), m.status().notes
        assert "could not be opened" in caplog.text
    finally:
        m.close()


def test_chroma_folder_deleted_while_the_server_runs(root: Path, tmp_path: Path) -> None:
    async def main() -> None:
        async with connect(root, errlog=open(tmp_path / "server.err", "w")) as s:
            await wait_until_indexed(s)
            shutil.rmtree(root / ".memory" / "chroma")
            result = await s.call_tool("search_memory", {"query": "how tight should the belt be?"})
            assert not result.is_error, result
            st = await wait_until_indexed(s)
            assert st["semantic_index"]["vectors"] > 0
            assert any("vector index disagreed" in n for n in st["notes"]), st["notes"]
            got = payload(await s.call_tool("search_memory", {"query": "how tight should the belt be?"}))
            assert got["mode"] == "hybrid" and got["hits"][0]["path"] == PRINTER

    anyio.run(main)


# -- the manifest ---------------------------------------------------------------------------------------


def test_a_manifest_that_disagrees_with_the_stored_chunks_and_vectors_is_repaired(root: Path, caplog) -> None:
    indexed(root, FakeEmbedder())
    db = sqlite3.connect(root / ".memory" / "index.sqlite3")
    with db:
        db.execute("DELETE FROM chunks WHERE path = 'topics/extra1.md'")  # its chunks went missing
        db.execute(  # chunks of a file the manifest does not know
            "INSERT INTO chunks(id, path, layer, start_line, end_line, title, heading, date, text) "
            "VALUES ('ghost', 'topics/ghost.md', 'topic', 1, 1, 'Ghost', '', NULL, 'zzghost haunts the index')"
        )
    db.close()
    m = Memory(root, embedder=FakeEmbedder())
    try:
        assert m.vectors is not None
        m.vectors.delete_paths(["topics/extra2.md"])  # its vectors went missing, the manifest says they are there
        with caplog.at_level(logging.WARNING):
            m.index()
        assert all_found(m)
        assert m.search_exact("zzghost") == []
        assert vectors_match_chunks(m)
        notes = m.status().notes
        assert any("disagreed with its manifest" in n for n in notes), notes
        assert any("vector index disagreed" in n for n in notes), notes
    finally:
        m.close()


# -- caches and logs ----------------------------------------------------------------------------------


def test_a_damaged_embedding_cache_and_recall_log_are_set_aside(root: Path, caplog) -> None:
    many_files(root, 5)
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    m.search_exact("zzextra1")
    m.close()
    state = root / ".memory"
    (state / "embeddings.sqlite3").write_bytes(os.urandom(50_000))
    (state / "recall.sqlite3").write_bytes(os.urandom(50_000))

    m = Memory(root, embedder=FakeEmbedder())
    try:
        with caplog.at_level(logging.WARNING):
            m.index(rebuild=True)  # needs the cache: every vector is looked up again
            hits, _ = m.search_memory("Token zzextra3", k=2)
            m.search_exact("zzextra4")
        assert hits and hits[0].path == "topics/extra3.md"
        assert vectors_match_chunks(m)
        assert m.recall.count() >= 1, "searches are recorded again in a new log"
        assert (state / "embeddings.sqlite3.corrupt").exists() and (state / "recall.sqlite3.corrupt").exists()
        assert "embedding cache" in caplog.text and "recall log" in caplog.text
    finally:
        m.close()


def tamper_keeping_size_and_time(path: Path, old: str, new: str) -> None:
    """Change a file's content while keeping its size and modification time (a restore from a backup that
    preserves times can do this): the manifest's cheap check cannot see it."""
    st = path.stat()
    text = path.read_text(encoding="utf-8")
    assert len(old) == len(new) and old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_a_file_changed_behind_the_manifest_is_caught_by_verify(root: Path, caplog) -> None:
    many_files(root)
    m = Memory(root, keyword_only=True)
    try:
        m.index()
        tamper_keeping_size_and_time(root / "topics/extra4.md", "zzextra4", "zzfresh4")
        m.index()
        assert m.search_exact("zzfresh4") == [], "size and time match: a plain index trusts the manifest"
        with caplog.at_level(logging.WARNING):
            report = m.index(verify=True)
        assert report.updated == ["topics/extra4.md"]
        assert [h.path for h in m.search_exact("zzfresh4")] == ["topics/extra4.md"]
        assert m.search_exact("zzextra4") == []
        assert any("without its size or modification time changing" in n for n in m.status().notes)
        assert "without its size or modification time changing" in caplog.text
        assert m.index(verify=True).updated == []  # nothing left to repair
    finally:
        m.close()


def test_the_server_verifies_every_file_when_it_starts(root: Path, tmp_path: Path) -> None:
    indexed(root)
    tamper_keeping_size_and_time(root / "topics/extra9.md", "zzextra9", "zzfresh9")

    async def main() -> None:
        async with connect(root, errlog=open(tmp_path / "server.err", "w")) as s:
            await wait_until_indexed(s, semantic=False, until=finds("zzfresh9"))
            assert not payload(await s.call_tool("search_exact", {"query": "zzextra9"}))["hits"]

    anyio.run(main)

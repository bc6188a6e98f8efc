"""Incremental indexing by content hash: add, edit, delete, rename; nothing changed means nothing written."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import write

from memory_server import Memory
from memory_server.testing import FakeEmbedder


def chunk_paths(m: Memory) -> dict[str, int]:
    out: dict[str, int] = {}
    for _id, path in m.fts.iter_chunk_ids():
        out[path] = out.get(path, 0) + 1
    return out


def test_second_run_reads_nothing_and_writes_nothing(root: Path):
    m = Memory(root, embedder=FakeEmbedder())
    first = m.index()
    assert first.added and first.vectors_written > 0
    conn = m.fts.conn()
    changes = conn.total_changes
    generation = m.fts.generation()
    db_stat = os.stat(m.fts.path)
    second = m.index()
    assert second.files_read == 0 and not second.changed and second.vectors_written == 0
    assert second.chunks_embedded == 0
    assert conn.total_changes == changes
    assert m.fts.generation() == generation
    assert os.stat(m.fts.path).st_mtime_ns == db_stat.st_mtime_ns
    m.close()


def test_add_edit_delete_rename(root: Path):
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    before = chunk_paths(m)
    assert "topics/printer.md" in before

    write(root, "topics/new.md", "# New\n\nA brand new ZEBRA_TOKEN fact.\n")
    r = m.index()
    assert r.added == ["topics/new.md"] and r.files_read == 1
    assert m.search_exact("ZEBRA_TOKEN")[0].path == "topics/new.md"

    write(root, "topics/new.md", "# New\n\nNow it says GIRAFFE_TOKEN instead.\n")
    r = m.index()
    assert r.updated == ["topics/new.md"]
    assert m.search_exact("ZEBRA_TOKEN") == [] or m.search_exact("ZEBRA_TOKEN")[0].match != "phrase"
    assert m.search_exact("GIRAFFE_TOKEN")[0].path == "topics/new.md"

    os.rename(root / "topics/new.md", root / "topics/renamed.md")
    r = m.index()
    assert r.added == ["topics/renamed.md"] and r.removed == ["topics/new.md"]
    assert r.chunks_embedded == 0  # same text: the embedding cache answers
    assert m.search_exact("GIRAFFE_TOKEN")[0].path == "topics/renamed.md"

    (root / "topics/renamed.md").unlink()
    r = m.index()
    assert r.removed == ["topics/renamed.md"]
    assert "topics/renamed.md" not in chunk_paths(m)
    assert m.search_exact("GIRAFFE_TOKEN") == []
    assert chunk_paths(m) == before
    # Chroma holds exactly the chunks FTS holds, under the same ids
    assert m.vectors is not None
    assert m.vectors.ids() == {cid for cid, _ in m.fts.iter_chunk_ids()}
    m.close()


def test_touched_but_unchanged_file_is_not_reparsed(root: Path):
    m = Memory(root, keyword_only=True)
    m.index()
    path = root / "topics/printer.md"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    r = m.index()
    assert r.files_read == 1 and not r.changed
    r = m.index()
    assert r.files_read == 0
    m.close()


def test_rebuild_starts_from_nothing_and_reuses_embeddings(root: Path):
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    ids = {cid for cid, _ in m.fts.iter_chunk_ids()}
    m.fts.conn().execute(
        "INSERT INTO files(path, layer, size, mtime_ns, sha256) VALUES ('topics/ghost.md','topic',1,1,'x')"
    )
    r = m.index(rebuild=True)
    assert r.chunks_embedded == 0 and r.vectors_written == len(ids)
    assert {cid for cid, _ in m.fts.iter_chunk_ids()} == ids
    assert "topics/ghost.md" not in m.fts.files()
    assert m.vectors is not None and m.vectors.ids() == ids
    m.close()


def test_only_memory_files_are_indexed(root: Path):
    write(root, "notes/elsewhere.md", "# Not memory\n\nOUTSIDE_TOKEN\n")
    write(root, "topics/.draft.md", "# Hidden\n\nHIDDEN_TOKEN\n")
    write(root, "topics/readme.txt", "TXT_TOKEN\n")
    m = Memory(root, keyword_only=True)
    m.index()
    for token in ("OUTSIDE_TOKEN", "HIDDEN_TOKEN", "TXT_TOKEN"):
        assert m.search_exact(token) == []
    assert "MEMORY.md" in m.fts.files()
    m.close()


def test_deleting_the_index_loses_nothing(root: Path):
    m = Memory(root, keyword_only=True)
    m.index()
    before = sorted(m.fts.iter_chunk_ids())
    m.close()
    for p in (root / ".memory").glob("index.sqlite3*"):
        p.unlink()
    m2 = Memory(root, keyword_only=True)
    m2.index()
    assert sorted(m2.fts.iter_chunk_ids()) == before
    m2.close()


def test_a_rebuild_drops_cached_embeddings_no_chunk_needs(root: Path):
    """Edited passages leave their old vectors (and token vectors) in the cache; a rebuild keeps only what
    the files hold now, and re-embeds nothing to do it."""
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    kept = m.indexer.cache.count()
    path = root / "topics" / "printer.md"
    text = path.read_text(encoding="utf-8").replace("192.168.1.50", "192.168.1.51")  # that passage's old version
    path.write_text(text + "\nA new paragraph about the spool holder.\n", encoding="utf-8")
    write(root, "topics/gone.md", "# Gone\n\nA passage that will be deleted.\n")
    m.index()
    (root / "topics" / "gone.md").unlink()
    m.index()
    assert m.indexer.cache.count() == kept + 3  # the edited passage, the new one and the deleted file's
    conn = m.indexer.cache._conn()
    tokens_before = conn.execute("SELECT count(*) FROM tokens").fetchone()[0]
    report = m.index(rebuild=True)
    assert report.chunks_embedded == 0 and report.cache_pruned == 2  # the old passage, the deleted one
    assert "2 unused cached embeddings dropped" in report.summary()
    assert m.indexer.cache.count() == kept + 1
    assert conn.execute("SELECT count(*) FROM tokens").fetchone()[0] < tokens_before
    hits, _ = m.search_memory("spool holder", k=3)
    assert any("spool holder" in h.text for h in hits)
    assert m.index().cache_pruned == 0  # an ordinary sync never prunes
    m.close()

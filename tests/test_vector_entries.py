"""Rewriting a file updates its vector entries in place: the store stays the same size however often a topic is
rewritten, search finds the new text and never the old, and a store keyed the old way (by chunk text) is
remade once, from the embedding cache, with a line in the log."""

from __future__ import annotations

import logging
from pathlib import Path

from conftest import write

from memory_server import Memory
from memory_server.index.vectors import entry_id
from memory_server.testing import FakeEmbedder

TOPIC = "topics/rewritten.md"
SECTIONS = 30


def topic_text(version: int, sections: int = SECTIONS) -> str:
    parts = [
        f"## Part {i}\n\nversion {version} of part {i}: word{version}x{i} and alpha{version}." for i in range(sections)
    ]
    return "# Rewritten\n\n" + "\n\n".join(parts) + "\n"


def store_bytes(root: Path) -> int:
    store = root / ".memory" / "chroma"
    return sum(p.stat().st_size for p in store.rglob("*") if p.is_file())


def rewrite(root: Path, m: Memory, versions: range) -> None:
    for version in versions:
        write(root, TOPIC, topic_text(version))
        m.index(paths=[TOPIC])


def chunk_ids_of(m: Memory, path: str) -> list[str]:
    return [c.id for c in m.fts.chunks_of(path)]


def test_rewriting_a_topic_many_times_leaves_the_vector_store_the_same_size(root: Path) -> None:
    write(root, TOPIC, topic_text(0))
    m = Memory(root, embedder=FakeEmbedder())
    try:
        m.index()
        # Past Chroma's first flush of its HNSW graph to disk (every 1,000 writes or so), then as many again.
        rewrite(root, m, range(1, 41))
        m.close()
        settled, chunks = store_bytes(root), m.fts.chunk_count()
        m = Memory(root, embedder=FakeEmbedder())
        rewrite(root, m, range(41, 81))
        assert m.vectors is not None and m.vectors.count() == chunks
        m.close()
        grown = store_bytes(root) - settled
        # Keyed by chunk text, every rewrite added 30 HNSW elements (1.6 KiB each, kept as deleted ones): +1.9 MiB.
        assert grown <= 64 * 1024, f"the vector store grew by {grown:,} bytes over 40 rewrites"
    finally:
        m.close()


def test_entries_keep_their_place_and_search_finds_the_new_text_not_the_old(root: Path) -> None:
    write(root, TOPIC, topic_text(0))
    m = Memory(root, embedder=FakeEmbedder())
    try:
        m.index()
        assert m.vectors is not None
        old = chunk_ids_of(m, TOPIC)
        rewrite(root, m, range(1, 4))
        new = chunk_ids_of(m, TOPIC)
        assert len(new) == len(old) and not set(new) & set(old)
        entries = m.vectors.entries()
        assert {entry_id(TOPIC, place): cid for place, cid in enumerate(new)}.items() <= entries.items()
        assert not set(old) & set(entries.values())

        hits, _mode = m.search_memory("word3x7 alpha3", k=3)
        assert hits and hits[0].path == TOPIC and "word3x7" in hits[0].text
        assert not any("word0x" in h.text or "version 0 " in h.text for h in hits)
        nearest = m.vectors.query(m.embedder.embed(["version 3 of part 7: word3x7 and alpha3."])[0], 5)  # type: ignore[union-attr]
        # HNSW is approximate, and the fake embedder's vectors of neighbouring parts are close: the new part is
        # among the nearest, and no old entry is (once, in a clean-clone run, another entry came first)
        found = [cid for cid, _, _ in nearest]
        assert new[7] in found and set(found) <= set(new) | vector_ids_elsewhere(m), (found, new[7])

        # A shorter rewrite deletes the entries past its new chunk count.
        write(root, TOPIC, topic_text(4, sections=5))
        m.index(paths=[TOPIC])
        places = sorted(int(e.rsplit("#", 1)[1]) for e in m.vectors.entries() if e.startswith(TOPIC + "#"))
        assert places == list(range(len(chunk_ids_of(m, TOPIC))))
        assert m.vectors.ids() == {cid for cid, _ in m.fts.iter_chunk_ids()}
    finally:
        m.close()


def vector_ids_elsewhere(m: Memory) -> set[str]:
    return {cid for cid, path in m.fts.iter_chunk_ids() if path != TOPIC}


def key_by_chunk_text(m: Memory) -> int:
    """Turn the store into one the earlier code wrote: an entry per chunk under the chunk's own id, with its
    path, layer and date only, and no note in the index of how entries are keyed."""
    assert m.vectors is not None
    col = m.vectors._open()
    got = col.get(include=["embeddings", "metadatas"])
    chunk_ids = [meta["chunk"] for meta in got["metadatas"]]
    col.delete(ids=got["ids"])
    metadatas = [{k: meta[k] for k in ("path", "layer", "date_num")} for meta in got["metadatas"]]
    col.add(ids=chunk_ids, embeddings=got["embeddings"], metadatas=metadatas)
    m.fts.conn().execute("DELETE FROM meta WHERE key = 'vector_ids'")
    return len(chunk_ids)


def test_a_store_keyed_by_chunk_text_still_answers_and_is_remade_from_the_cache(root: Path, caplog) -> None:
    write(root, TOPIC, topic_text(0))
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    stored = key_by_chunk_text(m)
    m.close()
    m = Memory(root, embedder=FakeEmbedder())
    try:
        assert m.vectors is not None
        assert all("#" not in e for e in m.vectors.entries())  # the old keys, as an upgrade finds them
        hits, mode = m.search_memory("word0x7 alpha0", k=3)  # before the remake: the old entries still answer
        assert mode == "hybrid" and hits[0].path == TOPIC and "word0x7" in hits[0].text
        with caplog.at_level(logging.WARNING):
            report = m.index()
        assert "keyed its entries by chunk text" in caplog.text
        assert report.chunks_embedded == 0 and report.vectors_written == stored  # from the cache: no model work
        entries = m.vectors.entries()
        assert len(entries) == stored and all("#" in e for e in entries)
        assert set(entries.values()) == {cid for cid, _ in m.fts.iter_chunk_ids()}
        assert m.index().vectors_written == 0  # once
        rewrite(root, m, range(1, 3))
        assert m.vectors.count() == stored
        hits, _mode = m.search_memory("word2x7 alpha2", k=3)
        assert hits[0].path == TOPIC and "word2x7" in hits[0].text
    finally:
        m.close()


def test_entries_keyed_by_chunk_text_left_behind_are_deleted_by_the_consistency_check(root: Path) -> None:
    """The keyword index was remade (so it has no note of how the store was keyed) over a store of old keys: the
    files are written again under the new keys and the check that follows deletes the old entries."""
    write(root, TOPIC, topic_text(0))
    m = Memory(root, embedder=FakeEmbedder())
    m.index()
    stored = key_by_chunk_text(m)
    m.close()
    for suffix in ("", "-wal", "-shm"):
        (root / ".memory" / f"index.sqlite3{suffix}").unlink(missing_ok=True)
    m = Memory(root, embedder=FakeEmbedder())
    try:
        m.index()
        assert m.vectors is not None
        entries = m.vectors.entries()
        assert len(entries) == stored and all("#" in e for e in entries)
        assert set(entries.values()) == {cid for cid, _ in m.fts.iter_chunk_ids()}
    finally:
        m.close()

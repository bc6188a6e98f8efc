"""`Memory`: one memory root with its indices, the API the MCP tools and the command line both call.

    from memory_server import Memory
    memory = Memory("~/notes/memory")
    memory.index()
    for hit in memory.search_exact("SAVE_CONFIG"):
        print(hit.path, hit.start_line, hit.text)
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from memory_server.dream.gate import DreamGate
from memory_server.dream.recall import RecallLog
from memory_server.errors import (
    ConfigError,
    LockedError,
    MemoryServerError,
    NotFoundError,
    PathRefusedError,
    VectorStoreError,
)
from memory_server.files.paths import confine_memory
from memory_server.files.reading import read_window
from memory_server.files.root import MemoryRoot
from memory_server.files.sqlite import is_damage
from memory_server.index.embed_cache import EmbeddingCache, text_key
from memory_server.index.embed_text import embed_text
from memory_server.index.embedder import Embedder, MiniLMEmbedder
from memory_server.index.fts import CorruptIndexError, FtsIndex
from memory_server.index.indexer import Indexer, Progress, SyncReport, default_index_paths
from memory_server.index.vectors import VectorIndex
from memory_server.parse.frontmatter import split_front_matter
from memory_server.parse.markdown import Chunk, iso_date
from memory_server.parse.memory_md import check_memory_index, memory_index_notes
from memory_server.search.hybrid import Hit, search_exact, search_hybrid, validate
from memory_server.sessions import transcript_layer as transcript_index
from memory_server.settings import Settings, load_settings

log = logging.getLogger(__name__)

T = TypeVar("T")

READ_MAX_LINES = 400
REPAIR_WAIT_SECONDS = 30.0
READ_MAX_CHARS = 24000
STATUS_LIST_LIMIT = 20  # memory_status lists at most this many problem files, unlisted topics, notes


def in_rank_order(hits: list[Hit]) -> list[Hit]:
    """Shown scores fall with rank: ranking steps after scoring (diversity, literal tiers) may put a hit
    below one that scored less, and a list whose scores rise part-way down reads as a mistake."""
    floor = None
    for hit in hits:
        if floor is not None and hit.score > floor:
            hit.score = floor
        floor = hit.score
    return hits


class Memory:
    """A memory root opened for indexing and search.

    `embedder`: None for the real all-MiniLM-L6-v2 (loaded on first use), an Embedder (tests pass a fake),
    or False for keyword-only operation (no Chroma, no model).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        settings: Settings | None = None,
        embedder: Embedder | None | bool = None,
    ) -> None:
        self.root = MemoryRoot(root)
        self.config_error: str | None = None
        self.settings = settings if settings is not None else load_settings(self.root.path)
        settings = self.settings
        fts_path, cache_path, chroma_path = default_index_paths(self.root)
        self.fts = FtsIndex(fts_path)
        self.embedder: Embedder | None
        if embedder is False:
            self.embedder, self.vectors = None, None
        else:
            self.embedder = embedder or MiniLMEmbedder(  # type: ignore[assignment]
                model_dir=settings.embedding.model_dir,
                batch_size=settings.embedding.batch_size,
                threads=settings.embedding.threads,
            )
            self.vectors = VectorIndex(settings.vectors, chroma_path, dim=384)
        self.indexer = Indexer(
            self.root, settings, self.fts, self.vectors, self.embedder, EmbeddingCache(cache_path)
        )
        self.vector_error: str | None = None
        # Why background indexing stopped (the error, and when it is tried again); None while it works.
        self.index_failure: str | None = None
        self.on_repair_needed: Callable[[], None] | None = None  # the server's background sync sets this
        self.recall = RecallLog(self.root.state_dir, max_events=settings.dream.recall_max_events)

    @classmethod
    def open_lenient(cls, root: str | os.PathLike[str], **kwargs: Any) -> Memory:
        """Open with default settings when memory.yaml is broken, keeping the error for status (the server)."""
        try:
            return cls(root, **kwargs)
        except ConfigError as exc:
            log.error("%s; running with default settings", exc)
            memory = cls(root, settings=Settings(), **kwargs)
            memory.config_error = str(exc)
            return memory

    def close(self) -> None:
        self.recall.close()
        self.fts.close()
        self.indexer.cache.close()
        if self.vectors is not None:
            self.vectors.close()

    # -- indexing ---------------------------------------------------------------------------------

    def index(
        self,
        *,
        rebuild: bool = False,
        paths: Sequence[str] | None = None,
        vectors: bool = True,
        timeout: float = 120.0,
        progress: Progress | None = None,
        verify: bool = False,
    ) -> SyncReport:
        """Bring the indices up to date (only what changed), or rebuild them from the files. `verify` also
        reads the files whose size and modification time look unchanged, and re-indexes those that are not."""
        self.indexer.ensure_healthy(timeout=timeout)
        try:
            report = self.indexer.sync(
                rebuild=rebuild, paths=paths, vectors=vectors, timeout=timeout, progress=progress, verify=verify
            )
        except (sqlite3.DatabaseError, CorruptIndexError) as exc:
            if isinstance(exc, sqlite3.DatabaseError) and not is_damage(exc):
                raise
            # The database was damaged since this process checked it: check again, rebuild, carry on.
            log.warning("keyword index unreadable while indexing (%s); rebuilding it from the files", exc)
            self.indexer.ensure_healthy(force=True, timeout=timeout)
            report = self.indexer.sync(
                rebuild=rebuild, paths=None, vectors=vectors, timeout=timeout, progress=progress
            )
        if report.vectors_written:
            self.vector_error = None
        return report

    # -- searching --------------------------------------------------------------------------------

    def search_exact(
        self,
        query: str,
        k: int | None = None,
        layers: Sequence[str] | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> list[Hit]:
        """Literal search: the query as typed, then all its terms, then any, by BM25."""
        q = validate(query, k, layers, after, before, self.settings.search)
        hits = in_rank_order(
            self._keyword_guard(lambda: search_exact(self.fts, q, self.settings.search, self.settings.ranking))
        )
        self.recall.record("search_exact", query, hits)
        return hits

    def search_memory(
        self,
        query: str,
        k: int | None = None,
        layers: Sequence[str] | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> tuple[list[Hit], str]:
        """Meaning-based search fused with keywords. Returns (hits, mode): mode is hybrid, or keyword
        while the semantic index is unavailable."""
        q = validate(query, k, layers, after, before, self.settings.search)
        vectors = self.vectors if self.embedder is not None else None

        def run() -> tuple[list[Hit], str]:
            try:
                found = search_hybrid(
                    self.fts, vectors, self.embedder, q, self.settings.search, self.settings.ranking,
                    vector_lookup=self._cached_vectors,
                )
                if found[1] != "keyword":
                    self.vector_error = None  # the semantic side answered: any earlier error is over
                return found
            except (VectorStoreError, LockedError) as exc:
                if vectors is None:
                    raise
                self.vector_error = str(exc)
                log.warning("semantic index unavailable, answering from keywords: %s", exc)
                return search_hybrid(self.fts, None, None, q, self.settings.search, self.settings.ranking)

        hits, mode = self._keyword_guard(run)
        hits = in_rank_order(hits)
        if vectors is not None and vectors.replaced and self.on_repair_needed is not None:
            self.on_repair_needed()  # the vector store vanished under us: have it refilled now
        self.recall.record("search_memory", query, hits)
        return hits, mode

    def search_note(self, mode: str, *, found: bool, semantic: bool = True) -> str | None:
        """Why an answer may be incomplete (indexing under way, never indexed, semantic side not ready, an
        empty memory), or None when it is not."""
        progress = self.indexer.progress
        stage, done, total = progress.get("stage"), int(progress.get("done", 0)), int(progress.get("total", 0))
        indexed = self.fts.counts()["files"]
        # Only while the index is still filling: a later pass over files already indexed changes little, and
        # the stage keeps its name once it is over.
        if stage == "reading files" and done < total and indexed < total:
            return f"indexing: {done} of {total} files done; keyword results only, so far"
        if indexed == 0:
            waiting = sum(1 for _ in self.root.memory_files())
            if waiting:
                return (
                    f"the memory has not been indexed yet ({waiting} files waiting): try again in a few seconds, "
                    f"or run `memory-server index --root {self.root.path}`"
                )
            if not found:
                return "the memory is empty: no MEMORY.md, topics/*.md or sessions yet"
        if semantic and mode == "keyword" and self.vectors is not None:
            if self.vector_error:
                return f"semantic index unavailable ({self.vector_error}); keyword results only"
            if stage == "embedding" and done < total:
                return f"indexing: {done} of {total} chunks embedded; keyword results only"
            return "semantic index not ready yet; keyword results only"
        return None

    def _keyword_guard(self, run: Callable[[], T]) -> T:
        """Run a search; if the keyword index turns out to be unreadable (truncated, garbage, deleted under
        us), rebuild it from the files and run the search once more."""
        try:
            return run()
        except (sqlite3.Error, CorruptIndexError) as exc:
            if isinstance(exc, sqlite3.OperationalError) and not is_damage(exc):
                raise LockedError(f"the keyword index is busy ({exc}); try again in a moment") from exc
            log.warning("keyword index unreadable during a search (%s); rebuilding it from the files", exc)
        self.repair()
        return run()

    def repair(self) -> None:
        """Check the keyword index and rebuild it from the files if it is unreadable (vectors follow in the
        next full sync). Raises LockedError when another process is writing for too long."""
        self.indexer.ensure_healthy(force=True, timeout=REPAIR_WAIT_SECONDS)
        self.indexer.sync(vectors=False, timeout=REPAIR_WAIT_SECONDS)
        if self.on_repair_needed is not None:
            self.on_repair_needed()

    def _cached_vectors(self, chunks: list[Chunk]) -> dict[str, Any]:
        """Stored vectors of chunks, from the embedding cache (no model call)."""
        if self.embedder is None or not chunks:
            return {}
        keys = {c.id: text_key(self.embedder.name, embed_text(c)) for c in chunks}
        found = self.indexer.cache.get_many(list(set(keys.values())))
        return {cid: found[key] for cid, key in keys.items() if key in found}

    # -- reading ----------------------------------------------------------------------------------

    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> dict[str, Any]:
        """Lines `start_line`..`end_line` (1-based, inclusive) of a file inside the root, or, for a path
        `transcript:<session-id>`, the transcript's messages overlapping those JSONL lines."""
        if isinstance(path, str) and path.startswith(transcript_index.PREFIX):
            try:
                path.encode("utf-8")
            except UnicodeEncodeError:
                raise PathRefusedError(
                    "path is not valid Unicode (a lone surrogate): use a `path` from a search hit"
                ) from None
            return self._read_transcript(path, start_line, end_line)
        real = confine_memory(self.root.path, path)  # memory files only: never .env, .git/, sources
        rel = self.root.relpath(real)
        start = 1 if start_line is None else start_line
        bad = isinstance(start, bool) or isinstance(end_line, bool)
        if bad or start < 1 or (end_line is not None and end_line < 1):
            raise PathRefusedError("start_line and end_line are 1-based line numbers (1 or more)")
        if end_line is not None and end_line < start:
            raise PathRefusedError(f"end_line {end_line} is before start_line {start}")
        window = read_window(real, rel, start, end_line)  # streamed: bounded per answer and per line
        out: dict[str, Any] = {
            "path": rel,
            "start_line": window.start,
            "end_line": window.end,
            "total_lines": window.total,
            "text": "\n".join(window.lines),
        }
        if window.truncated:
            out["more"] = f"truncated: call read_memory with start_line={window.end + 1} for the rest"
        if window.cut_lines:
            out["cut_lines"] = list(window.cut_lines)
        return out

    def _read_transcript(self, virtual: str, start_line: int | None, end_line: int | None) -> dict[str, Any]:
        record = self.fts.file(virtual)
        if record is None or not record.source:
            raise NotFoundError(
                f"no indexed transcript {virtual!r}: use a path from a search_exact hit with layers=['transcript']"
            )
        source = transcript_index.confine(Path(record.source), self.settings)
        lines = transcript_index.read_transcript(source, start_line, end_line)
        text: list[str] = []
        used = 0
        for line in lines:
            if used + len(line) > READ_MAX_CHARS and text:
                text.append("… truncated: ask for a narrower line range")
                break
            text.append(line)
            used += len(line) + 1
        return {"path": virtual, "start_line": start_line or 1, "end_line": end_line, "text": "\n".join(text)}

    def topic_count(self) -> int:
        """How many topic files there are (list_topics shows the first few of a large root)."""
        return sum(1 for rel, layer in self.root.memory_files() if layer == "topic" and rel.startswith("topics/"))

    def list_topics(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Topic files with their title, description, updated date and tags (from front matter), in path
        order: all of them, or the first `limit` (only those files are read)."""
        topics: list[dict[str, Any]] = []
        for rel, layer in self.root.memory_files():
            if layer != "topic" or not rel.startswith("topics/"):
                continue
            if limit is not None and len(topics) >= limit:
                break
            meta: dict[str, Any] = {}
            try:
                text = self.root.read_text(rel, max_bytes=self.settings.index.max_file_bytes).text
                meta, _, _ = split_front_matter(text.splitlines())
            except Exception:
                pass
            tags = meta.get("tags") or []
            topics.append(
                {
                    "path": rel,
                    "title": str(meta.get("title") or Path(rel).stem),
                    "description": str(meta.get("description") or ""),
                    "updated": iso_date(meta.get("updated")),
                    "tags": [str(t) for t in tags] if isinstance(tags, list) else [str(tags)],
                }
            )
        return topics

    # -- status -----------------------------------------------------------------------------------

    def pending_files(self, on_disk: dict[str, str] | None = None) -> list[str]:
        """Memory files whose indexed copy is out of date (new, changed or deleted), by size and mtime.
        `on_disk`: the memory files (path -> layer) when the caller has listed them already."""
        known = self.fts.files()
        pending = []
        on_disk = dict(self.root.memory_files()) if on_disk is None else on_disk
        for rel in on_disk:
            rec = known.get(rel)
            try:
                st = os.stat(self.root.path / rel)
            except OSError:
                continue
            if rec is None or rec.size != st.st_size or rec.mtime_ns != st.st_mtime_ns:
                pending.append(rel)
        pending.extend(p for p, rec in known.items() if p not in on_disk and rec.layer != "transcript")
        return sorted(pending)

    def _vector_count(self) -> int | None:
        """Vectors in Chroma, when this process has it open (status never loads Chroma just to count)."""
        if self.vectors is None or not self.vectors.is_open:
            return None
        try:
            return self.vectors.count()
        except VectorStoreError as exc:
            self.vector_error = str(exc)
            return None

    def status(self) -> dict[str, Any]:
        """Counts, index freshness, problem files, and what is running."""
        return self._keyword_guard(self._status)

    def _status(self) -> dict[str, Any]:
        files = self.fts.files()
        counts = self.fts.counts()
        vector_pending = [
            f.path
            for f in files.values()
            if f.status != "skipped" and f.layer != "transcript" and f.vectors_sha256 != f.sha256
        ]
        problems = [
            {"path": f.path, "status": f.status, "reason": f.message}
            for f in sorted(files.values(), key=lambda f: f.path)
            if f.status != "ok"
        ]
        layers: dict[str, int] = {}
        for f in files.values():
            layers[f.layer] = layers.get(f.layer, 0) + 1
        on_disk = dict(self.root.memory_files())  # one walk of the tree for the whole status
        pending = self.pending_files(on_disk)
        problems.extend({"path": path, "status": "skipped", "reason": why} for path, why in self.root.left_out)
        out: dict[str, Any] = {
            "root": str(self.root.path),
            "files": counts["files"],
            "files_by_layer": layers,
            "chunks": counts["chunks"],
            "chunks_by_layer": {k[7:]: v for k, v in counts.items() if k.startswith("chunks_")},
            "keyword_index": {"fresh": not pending, "pending_files": pending[:20], "pending_count": len(pending)},
            "semantic_index": {
                "enabled": self.vectors is not None,
                "backend": self.vectors.description if self.vectors is not None else None,
                "pending_files": len(vector_pending) if self.vectors is not None else 0,
                "vectors": self._vector_count(),
                "model": getattr(self.embedder, "name", None),
                "model_loaded": bool(getattr(self.embedder, "is_loaded", False)),
                "error": self.vector_error,
            },
            "indexing": {**self.indexer.progress, **({"stopped": self.index_failure} if self.index_failure else {})},
            "problem_files": problems,
            "notes": list(self.indexer.notes),
        }
        out["dream"] = self._dream_status()
        topic_paths = sorted(p for p, layer in on_disk.items() if layer == "topic" and p.startswith("topics/"))
        index_report = check_memory_index(self.root.path, topic_paths)
        out["memory_index"] = index_report
        out["notes"].extend(memory_index_notes(index_report))
        # Bounded whatever the root holds: counts, plus the first few of each list.
        out["problem_count"] = len(problems)
        out["problem_files"] = problems[:STATUS_LIST_LIMIT]
        for key in ("unlisted_topics", "broken_links"):
            items = index_report.get(key) or []
            index_report[key.split("_")[0] + "_count"] = len(items)
            index_report[key] = items[:STATUS_LIST_LIMIT]
        if len(out["notes"]) > STATUS_LIST_LIMIT:
            more = len(out["notes"]) - STATUS_LIST_LIMIT
            out["notes"] = [*out["notes"][:STATUS_LIST_LIMIT], f"and {more} more notes"]
        if self.config_error:
            out["config_error"] = self.config_error
        return out

    def _dream_status(self) -> dict[str, Any]:
        try:
            due, reason = DreamGate(self.root.path, self.settings).due()
        except MemoryServerError as exc:
            return {"due": False, "reason": str(exc)}
        return {"due": due, "reason": reason, "how": "run /dream (without an agent: memory-server dream run)" if due else None}

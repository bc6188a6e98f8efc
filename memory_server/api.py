"""`Memory`: one memory root with its indices, the API the MCP tools and the command line both call; each
command of the command line is one call here (docs/python-api.md).

    from memory_server import Memory
    with Memory("~/notes/memory") as memory:
        memory.index()
        for hit in memory.search_exact("SAVE_CONFIG"):
            print(hit.path, hit.start_line, hit.text)
"""

from __future__ import annotations

import logging
import os
import shlex
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from memory_server import browse, status
from memory_server.background import Background
from memory_server.dream.commands import Dreams
from memory_server.dream.recall import RecallLog
from memory_server.errors import (
    ConfigError,
    CorruptIndexError,
    IndexCancelled,
    IndexUnavailableError,
    LockedError,
    MemoryServerError,
    VectorStoreError,
)
from memory_server.files.root import MemoryRoot
from memory_server.files.scaffold import Wiring, init_root, wire_root
from memory_server.files.sqlite import is_damage, unavailable_reason
from memory_server.index.embed_cache import EmbeddingCache, text_key
from memory_server.index.embed_text import embed_text
from memory_server.index.embedder import Embedder, MiniLMEmbedder
from memory_server.index.fts import FtsIndex
from memory_server.index.indexer import Indexer, Progress, SyncReport, default_index_paths
from memory_server.index.vectors import VectorIndex
from memory_server.parse.markdown import Chunk
from memory_server.search.hybrid import search_exact, search_hybrid
from memory_server.search.query import Hit, Mode, validate
from memory_server.sessions.compress import LOCK_TIMEOUT
from memory_server.sessions.compression import CompressReport, compress_sessions
from memory_server.sessions.keep import KeepReport
from memory_server.sessions.keep_all import keep_transcripts
from memory_server.settings import Settings, load_settings
from memory_server.tool_results import ReadResult, Status, Topic

log = logging.getLogger(__name__)

T = TypeVar("T")

REPAIR_WAIT_SECONDS = 30.0
CACHE_KEYS_KEPT = 20_000  # embedding-cache keys of search candidates remembered (_cache_key)
Vector = NDArray[np.float32]
STOP_WAIT_SECONDS = 0.5  # at close, background indexing gets this long to stop between two steps


@dataclass(frozen=True)
class InitReport:
    """What `Memory.init` did: the files and folders it made, and each edit to an existing CLAUDE.md or
    .gitignore (made, or with `edit=False` left to the person, with the lines to add)."""

    root: Path
    created: list[str]
    wired: list[Wiring]


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
    """A memory root opened for indexing and search: what the MCP tools and the command line both call.

    A context manager: `with Memory(root) as memory: ...` closes its indices (and stops its background
    worker, if it started one) at the end. `keyword_only=True` opens it without the embedding model and
    Chroma (search_memory then answers from keywords); `embedder` replaces the real all-MiniLM-L6-v2
    (loaded on first use) with another model, a fake in tests.
    """

    # Sections whose change needs the model or the vector store opened again: they apply at the next start.
    RESTART_SECTIONS = ("embedding", "vectors")

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        settings: Settings | None = None,
        keyword_only: bool = False,
        embedder: Embedder | None = None,
    ) -> None:
        if keyword_only and embedder is not None:
            raise ValueError("a keyword-only Memory has no embedder: pass one or the other")
        self.root = MemoryRoot(root)
        self.config_error: str | None = None  # why memory.yaml was not used (open_lenient), for status
        self.settings = settings if settings is not None else load_settings(self.root.path)
        fts_path, cache_path, chroma_path = default_index_paths(self.root)
        self.fts = FtsIndex(fts_path)
        self.embedder: Embedder | None = None
        self.vectors: VectorIndex | None = None
        if not keyword_only:
            self.embedder = embedder or MiniLMEmbedder(
                model_dir=self.settings.embedding.model_dir,
                batch_size=self.settings.embedding.batch_size,
                threads=self.settings.embedding.threads,
            )
            self.vectors = VectorIndex(self.settings.vectors, chroma_path, dim=384)
        cache = EmbeddingCache(cache_path)
        self.indexer = Indexer(self.root, self.settings, self.fts, self.vectors, self.embedder, cache)
        self.vector_error: str | None = None  # why the semantic side last failed; None once it answers again
        self._cache_keys: dict[tuple[str, str, str, str | None], str] = {}
        self.recall = RecallLog(self.root.ensure_state_dir(), max_events=self.settings.dream.recall_max_events)
        self._closed = False
        self._background: Background | None = None
        self.settings_pending: list[str] = []  # changed settings sections that apply at the next start
        self.dream = Dreams(self.root, lambda: self.settings, lambda: self.embedder)

    @classmethod
    def open_lenient(
        cls, root: str | os.PathLike[str], *, keyword_only: bool = False, embedder: Embedder | None = None
    ) -> Memory:
        """Open with default settings when memory.yaml is broken, keeping the error for status (the server)."""
        try:
            return cls(root, keyword_only=keyword_only, embedder=embedder)
        except ConfigError as exc:
            log.error("%s; running with default settings", exc)
            memory = cls(root, settings=Settings(), keyword_only=keyword_only, embedder=embedder)
            memory.config_error = str(exc)
            return memory

    @staticmethod
    def init(root: str | os.PathLike[str], *, edit: bool = True) -> InitReport:
        """`memory-server init`: make a memory root (nothing existing is replaced), and wire it into the
        project's CLAUDE.md and .gitignore (with `edit=False`, say what to add instead)."""
        path = Path(root).expanduser()
        return InitReport(path, init_root(path), wire_root(path, edit=edit))

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self, wait: float = STOP_WAIT_SECONDS) -> None:
        """Stop the background worker (waiting up to `wait` s) and close the indices. When the worker is still
        inside a step (loading the model, say), the indices stay open: the process ends with them."""
        if self._background is not None and not self._background.stop(wait):
            log.info("background indexing is still finishing a step; the indices close with the process")
            return
        self._closed = True
        self.recall.close()
        self.fts.close()
        self.indexer.cache.close()
        if self.vectors is not None:
            self.vectors.close()

    def apply_settings(self, settings: Settings) -> list[str]:
        """Use `settings` from now on (memory.yaml was edited); return the sections that wait for a restart.

        Search, ranking, indexing limits, transcripts and dream settings apply at once (new chunk limits to the
        files indexed from now on); the embedding and vector-store sections keep their running values."""
        pending = [name for name in self.RESTART_SECTIONS if getattr(settings, name) != getattr(self.settings, name)]
        kept = {name: getattr(self.settings, name) for name in self.RESTART_SECTIONS}
        self.settings = settings.model_copy(update=kept)
        self.indexer.settings = self.settings
        self.recall.max_events = max(1, settings.dream.recall_max_events)
        self.settings_pending = pending
        return pending

    # -- the background worker (the server's) -------------------------------------------------------

    def background(self, *, watch: bool = True) -> Background:
        """The memory's one background worker (start-up indexing, the file watcher, repairs), made on the first
        call and not started; `close()` stops it. `watch`: follow file changes once started."""
        if self._background is None:
            self._background = Background(self, watch=watch)
        return self._background

    def wait_for_keyword_pass(self, timeout: float) -> None:
        """When the background worker runs and has not finished its first keyword pass, wait up to `timeout`."""
        if self._background is not None and not self._background.keyword_ready.is_set():
            self._background.wait_for_keyword_pass(timeout)

    @property
    def index_failure(self) -> str | None:
        """Why background indexing stopped (the error, and when it is tried again); None while it works."""
        return self._background.failure if self._background is not None else None

    def cancel(self) -> None:
        """Stop indexing at once, between two steps (the client has gone; the process is ending)."""
        self.indexer.cancel.set()

    def _request_repair(self) -> None:
        """Have the background worker compare every file with the indices now (a store vanished or is damaged)."""
        if self._background is not None:
            self._background.request_full_sync()

    # -- compression ----------------------------------------------------------------------------------

    def compress(
        self,
        transcripts: Sequence[str | os.PathLike[str]] = (),
        *,
        all_in: str | os.PathLike[str] | None = None,
        pending: bool = False,
        automatic: bool = False,
        transcript_root: str | os.PathLike[str] | None = None,
        lock_timeout: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> CompressReport:
        """`memory-server compress`: write the compressed session files of `transcripts`, of every transcript
        under `all_in` (a project folder), and (`pending`) of the sessions waiting in the queue. A transcript
        that waits too long for another compression is queued, never lost; one that fails does not stop the
        others. `automatic` (the hooks' job) skips transcripts that keep failing."""
        return compress_sessions(
            self.root,
            transcripts,
            all_in=all_in,
            pending=pending,
            automatic=automatic,
            transcript_root=transcript_root,
            lock_timeout=LOCK_TIMEOUT if lock_timeout is None else lock_timeout,
            progress=progress,
        )

    def keep_transcripts(self, *, lock_timeout: float = LOCK_TIMEOUT) -> KeepReport:
        """`memory-server keep`: keep every transcript a compressed session names that is not kept to its end
        yet (a redacted, compressed copy in sessions/transcripts/), before Claude Code's clean-up deletes it."""
        return keep_transcripts(self.root, self.settings, lock_timeout=lock_timeout)

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
        try:
            report = self._sync(rebuild, paths, vectors, timeout, progress, verify)
        except (LockedError, IndexCancelled):
            raise
        except MemoryServerError as exc:  # the model or the vector store, mostly: status says so
            self.vector_error = str(exc)
            raise
        if report.vectors_written:
            self.vector_error = None
        return report

    def _sync(
        self,
        rebuild: bool,
        paths: Sequence[str] | None,
        vectors: bool,
        timeout: float,
        progress: Progress | None,
        verify: bool,
    ) -> SyncReport:
        self.indexer.ensure_healthy(timeout=timeout)
        try:
            return self.indexer.sync(
                rebuild=rebuild, paths=paths, vectors=vectors, timeout=timeout, progress=progress, verify=verify
            )
        except (sqlite3.DatabaseError, CorruptIndexError) as exc:
            if isinstance(exc, sqlite3.DatabaseError) and not is_damage(exc):
                raise
            # The database was damaged since this process checked it: check again, rebuild, carry on.
            log.warning("keyword index unreadable while indexing (%s); rebuilding it from the files", exc)
            self.indexer.ensure_healthy(force=True, timeout=timeout)
            return self.indexer.sync(rebuild=rebuild, paths=None, vectors=vectors, timeout=timeout, progress=progress)

    def index_kept(self) -> str:
        """What an interrupted `index` kept (files indexed, vectors written): said when it is interrupted."""
        return self.indexer.report.kept()

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
    ) -> tuple[list[Hit], Mode]:
        """Meaning-based search fused with keywords. Returns (hits, mode): mode is hybrid, or keyword
        while the semantic index is unavailable."""
        q = validate(query, k, layers, after, before, self.settings.search)
        vectors = self.vectors if self.embedder is not None else None

        def run() -> tuple[list[Hit], Mode]:
            try:
                found = search_hybrid(
                    self.fts,
                    vectors,
                    self.embedder,
                    q,
                    self.settings.search,
                    self.settings.ranking,
                    vector_lookup=self._cached_vectors,
                    token_lookup=self._cached_tokens if self.settings.embedding.token_vectors != "off" else None,
                )
                if found[1] != "keyword":
                    self.vector_error = None  # the semantic side answered: any earlier error is over
                return found
            except (VectorStoreError, LockedError) as exc:
                if vectors is None:
                    raise
                self.vector_error = str(exc)
                log.warning("semantic index unavailable, answering from keywords: %s", exc)
                if vectors.damaged:
                    self._request_repair()  # the store is damaged: the background worker remakes it now
                return search_hybrid(self.fts, None, None, q, self.settings.search, self.settings.ranking)

        hits, mode = self._keyword_guard(run)
        hits = in_rank_order(hits)
        if vectors is not None and vectors.replaced:
            self._request_repair()  # the vector store vanished under us: have it refilled now
        self.recall.record("search_memory", query, hits)
        return hits, self._answered_by(mode)

    def vector_backlog(self) -> tuple[int, int]:
        """(files waiting for their vectors, files that get vectors), from the indexer while it writes vectors,
        else counted from the manifest once after each pass (a search does not count files every time)."""
        backlog = self.indexer.vector_backlog
        if backlog is None:
            backlog = self.indexer.vector_backlog = self.fts.vector_backlog()
        return backlog

    def _answered_by(self, mode: Mode) -> Mode:
        """The mode as the answer reports it: while files wait for their vectors the semantic side answered for
        only part of the memory ("partial"), or for none of it ("keyword")."""
        if mode == "keyword" or self.vectors is None:
            return mode
        waiting, eligible = self.vector_backlog()
        if not waiting:
            return mode
        return "keyword" if waiting >= eligible else "partial"

    def search_note(self, mode: Mode, *, found: bool, semantic: bool = True) -> str | None:
        """Why an answer may be incomplete (indexing under way, never indexed, semantic side not ready, an
        empty memory), or None when it is not."""
        progress = self.indexer.progress
        stage, done, total = progress.stage, progress.done, progress.total
        indexed = self.fts.file_count()  # not counts(): counting 100k chunks took 42 ms on every search
        # Only while the index is still filling: a later pass over files already indexed changes little, and
        # the stage keeps its name once it is over.
        if stage == "reading files" and done < total and indexed < total:
            return f"indexing: {total - done} of {total} files not read yet; keyword results only, so far"
        if indexed == 0:
            waiting = sum(1 for _ in self.root.memory_files())
            if waiting:
                return f"the memory has not been indexed yet ({waiting} files waiting): {self._how_to_index()}"
            if not found:
                return "the memory is empty: no MEMORY.md, topics/*.md or sessions yet"
        if semantic and mode in ("keyword", "partial") and self.vectors is not None:
            return self._vector_note(mode)
        return None

    def _vector_note(self, mode: Mode) -> str:
        """Why an answer's semantic side is missing or covers part of the memory."""
        if self.vector_error:
            return f"semantic index unavailable ({self.vector_error}); keyword results only"
        waiting, eligible = self.vector_backlog()
        progress = self.indexer.progress
        embedding = (
            f" ({progress.done} of {progress.total} chunks embedded)"
            if progress.stage in ("embedding", "writing") and progress.done < progress.total
            else ""
        )
        if not waiting:
            return f"semantic index not built yet; keyword results only: {self._how_to_index()}"
        found_by = "keywords only" if mode == "keyword" else "keywords only, the others by meaning too"
        return (
            f"indexing: {waiting} of {eligible} files wait for their vectors{embedding}; those are found by {found_by}"
        )

    def _how_to_index(self) -> str:
        """What brings the index up: this memory's own worker (the server's) when it runs, else a command."""
        if self._background is not None and self._background.running:
            return "indexing has started in the background; ask again in a few seconds"
        return (
            f"run `memory-server index --root {shlex.quote(str(self.root.path))}` (a server started on this root, "
            "`memory-server serve`, also indexes it on start)"
        )

    def _keyword_guard(self, run: Callable[[], T]) -> T:
        """Run a search; if the keyword index turns out to be damaged (truncated, garbage, deleted under us),
        rebuild it from the files and run the search once more. The one place SQLite's errors become ours:
        only damage starts a repair (never a busy, full, read-only or closed database, never on shutdown)."""
        try:
            return run()
        except (sqlite3.Error, CorruptIndexError) as exc:
            if not isinstance(exc, CorruptIndexError) and not is_damage(exc):
                reason = unavailable_reason(exc)
                if "busy" in reason:
                    raise LockedError(reason) from exc
                raise IndexUnavailableError(reason) from exc
            if self.closing:
                raise IndexUnavailableError(
                    f"the memory is shutting down; not repairing the index now ({exc})"
                ) from exc
            log.warning("keyword index unreadable during a search (%s); rebuilding it from the files", exc)
        self.repair()
        return run()

    @property
    def closing(self) -> bool:
        """True once the memory is closed or its server is stopping: no repair starts then."""
        return self._closed or self.indexer.cancel.is_set()

    def repair(self) -> None:
        """Check the keyword index and rebuild it from the files if it is unreadable (vectors follow in the
        next full sync). Raises LockedError when another process is writing for too long."""
        self.indexer.ensure_healthy(force=True, timeout=REPAIR_WAIT_SECONDS)
        self.indexer.sync(vectors=False, timeout=REPAIR_WAIT_SECONDS)
        self._request_repair()

    def _cached_vectors(self, chunks: list[Chunk]) -> dict[str, Vector]:
        """Stored vectors of chunks, from the embedding cache (no model call)."""
        return self._from_cache(chunks, self.indexer.cache.get_many)

    def _cached_tokens(self, chunks: list[Chunk]) -> dict[str, Vector]:
        """Stored token vectors of chunks, from the embedding cache (no model call)."""
        fmt = self.settings.embedding.token_vectors
        return self._from_cache(chunks, lambda keys: self.indexer.cache.get_tokens(keys, fmt))

    def _from_cache(self, chunks: list[Chunk], get: Callable[[list[str]], dict[str, Vector]]) -> dict[str, Vector]:
        """chunk id -> what `get` finds under the chunk's embedding-cache key."""
        if self.embedder is None or not chunks:
            return {}
        keys = {c.id: self._cache_key(c) for c in chunks}
        found = get(list(set(keys.values())))
        return {cid: found[key] for cid, key in keys.items() if key in found}

    def _cache_key(self, chunk: Chunk) -> str:
        # Building a chunk's embedding text costs more than the rest of the lookup on long chunks, and the
        # same candidates come back query after query: remember the key by what it is made of. The chunk's
        # id is a hash of its path, lines and text, so the text itself need not be kept in the memo.
        assert self.embedder is not None
        memo = (chunk.id, chunk.title, chunk.heading, chunk.date)
        key = self._cache_keys.get(memo)
        if key is None:
            if len(self._cache_keys) >= CACHE_KEYS_KEPT:
                self._cache_keys.clear()
            key = self._cache_keys[memo] = text_key(self.embedder.name, embed_text(chunk))
        return key

    # -- reading and status (browse.py, status.py) ---------------------------------------------

    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> ReadResult:
        """Lines `start_line`..`end_line` (1-based, inclusive) of a memory file, or, for a path
        `transcript:<session-id>`, the transcript's messages overlapping those JSONL lines."""
        return browse.read(self, path, start_line, end_line)

    def topic_count(self) -> int:
        return browse.topic_count(self)

    def list_topics(self, limit: int | None = None) -> list[Topic]:
        """Topic files with title, description, updated date and tags, in path order (the first `limit`)."""
        return browse.list_topics(self, limit)

    def pending_files(self, on_disk: dict[str, str] | None = None) -> list[str]:
        """Memory files whose indexed copy is out of date (new, changed or deleted), by size and mtime."""
        return status.pending_files(self, on_disk)

    def status(self) -> Status:
        """Counts, index freshness, problem files, and what is running."""
        return self._keyword_guard(lambda: status.build_status(self))

    def vector_count(self) -> int | None:
        """Vectors in Chroma, when this process has it open (status never loads Chroma just to count)."""
        if self.vectors is None or not self.vectors.is_open:
            return None
        try:
            return self.vectors.count()
        except VectorStoreError as exc:
            self.vector_error = str(exc)
            return None

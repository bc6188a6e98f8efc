"""Keep the derived indices (FTS5 and Chroma) in step with the memory files.

Only this module writes the indices, and only while holding `.memory/index.lock`: one writer at a time
across every process on the root (several Claude Code sessions each run a server). Readers never take
the lock. A file is re-read only when its size or mtime changed, re-chunked only when its sha256 changed,
and re-embedded only for text the embedding cache has not seen. FTS5 is updated first (keyword search
sees an edit at once); vectors follow, tracked per file by `files.vectors_sha256`, so a crash between the
two is repaired by the next run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memory_server.errors import FileSkipped, IndexCancelled
from memory_server.files.crashpoints import crash_point
from memory_server.files.locks import INDEX_LOCK, WriterLock
from memory_server.files.paths import HardLinks
from memory_server.files.root import Layer, MemoryRoot, layer_of
from memory_server.index.auto_memory_sync import AutoMemorySync
from memory_server.index.embed_cache import EmbeddingCache, text_key
from memory_server.index.embed_text import EMBED_RECIPE, embed_text
from memory_server.index.embedder import Embedder
from memory_server.index.fts import FTS_FILE, FileRecord, FtsIndex
from memory_server.index.repair import IndexRepairs
from memory_server.index.vectors import ENTRY_IDS, VectorIndex
from memory_server.parse.markdown import Chunk, parse_document
from memory_server.parse.text import as_data
from memory_server.sessions.transcript_layer import Increment, TranscriptFollower, transcript_sources
from memory_server.settings import Settings

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]  # (stage, done, total)
EMBED_SLICE = 64  # chunks embedded between checks for cancellation


@dataclass(frozen=True)
class IndexProgress:
    """What the indexer is doing now: a stage ("reading files", "embedding", "writing", "idle"), how far."""

    stage: str = "idle"
    done: int = 0
    total: int = 0


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unchanged: int = 0
    files_read: int = 0
    chunks_embedded: int = 0
    vectors_written: int = 0
    cache_pruned: int = 0  # a rebuild: cached embeddings of text no chunk holds any more, dropped
    transcript_bytes_read: int = 0  # of transcripts, only what is new since this process last read them
    seconds: float = 0.0
    files_total: int = 0  # files the keyword pass went through, and how many of them are committed
    files_done: int = 0
    chunks_total: int = 0  # chunks waiting for vectors when the vector pass began

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def kept(self) -> str:
        """What an interrupted update left in place (every commit stays; the next run goes on from there)."""
        parts = [f"the keyword index is up to date for {self.files_done:,} of {self.files_total:,} files"]
        if self.chunks_total:
            parts.append(f"vectors of {self.vectors_written:,} of {self.chunks_total:,} chunks are stored")
        if self.chunks_embedded:
            parts.append(f"{self.chunks_embedded:,} chunks embedded now are cached and will not be embedded again")
        return "; ".join(parts)

    def summary(self) -> str:
        return (
            f"{len(self.added)} added, {len(self.updated)} updated, {len(self.removed)} removed, "
            f"{self.unchanged} unchanged, {len(self.skipped)} skipped; "
            f"{self.chunks_embedded} chunks embedded, {self.vectors_written} vectors written"
            + (f", {self.cache_pruned} unused cached embeddings dropped" if self.cache_pruned else "")
            + f" in {self.seconds:.2f}s"
        )


class Indexer(IndexRepairs, AutoMemorySync):
    """The single writer of a root's indices. Safe to share between threads of one process."""

    def __init__(
        self,
        root: MemoryRoot,
        settings: Settings,
        fts: FtsIndex,
        vectors: VectorIndex | None = None,
        embedder: Embedder | None = None,
        cache: EmbeddingCache | None = None,
    ) -> None:
        self.root = root
        self.settings = settings
        self.fts = fts
        self.vectors = vectors
        self.embedder = embedder
        self.cache = cache or EmbeddingCache(root.ensure_state_dir() / "embeddings.sqlite3")
        self.lock = WriterLock(
            root.ensure_state_dir() / INDEX_LOCK,
            "another process has been writing the index for over {timeout}s ({path}); try again when it finishes",
        )
        self.progress = IndexProgress()
        # (files waiting for their vectors, files that get vectors), kept up to date while vectors are written;
        # None when a pass may have changed it (Memory counts it again from the manifest when asked).
        self.vector_backlog: tuple[int, int] | None = None
        self.notes: list[str] = []  # recoveries worth telling the user (shown by status)
        self._transcripts: dict[str, Path] = {}
        self._links = HardLinks(root.path)
        self._followers: dict[str, TranscriptFollower] = {}  # growing transcripts, read where the last read stopped
        self.cancel = threading.Event()  # set by the server on shutdown; checked between files and batches
        self.report = SyncReport()  # the update under way (or the last one): what an interruption kept
        self._checked = False  # the FTS database passed its integrity check in this process
        self._used_keys: set[str] | None = None  # during a rebuild: the cache keys of every chunk embedded

    # -- syncing ------------------------------------------------------------------------------

    def _writer(self, timeout: float) -> contextlib.AbstractContextManager[None]:
        return self.lock.held(timeout)

    def sync(
        self,
        *,
        rebuild: bool = False,
        paths: Iterable[str] | None = None,
        vectors: bool = True,
        timeout: float = 120.0,
        progress: Progress | None = None,
        verify: bool = False,
    ) -> SyncReport:
        """Bring the indices up to date with the files (all of them, or just `paths`), or rebuild them.

        `verify` reads every file, even those whose size and modification time match the manifest, and
        re-indexes any whose content differs (a file restored with its old time, say). Raises LockedError
        when another process keeps the writer lock for longer than `timeout` seconds.
        """
        started = time.monotonic()
        report = self.report = SyncReport()
        self.vector_backlog = None  # this pass may add files: the backlog is counted again (or by the vector pass)
        self._links = HardLinks(self.root.path)  # counted once per pass, if a file has several names
        with self._writer(timeout):
            if rebuild:
                self._rebuild_keyword(report, progress)
                crash_point("index-rebuild-after-keyword")
                if self.vectors is not None and vectors:
                    self._reset_vectors()
            else:
                self._sync_keyword(report, paths, progress, verify)
            if self.vectors is not None and self.embedder is not None and vectors:
                self._set_progress("opening the vector index", 0, 0, progress)
                self._open_vectors()
                self._check_recipe(rebuild)
                # A rebuild embeds every chunk, so it knows every text the cache still needs.
                self._used_keys = set() if rebuild else None
                try:
                    self._sync_vectors(report, progress)
                    # Now every file's vectors should be stored: a count that disagrees means the store lost
                    # or kept something behind the manifest's back (deleted folder, crash, another writer).
                    if (paths is None or self.vectors.replaced) and not self._check_vectors():
                        self._sync_vectors(report, progress)
                    if self._used_keys is not None:
                        report.cache_pruned = self.cache.prune(self._used_keys)
                finally:
                    self._used_keys = None
            if report.changed or report.vectors_written or rebuild:
                self.fts.bump_generation()
        report.seconds = time.monotonic() - started
        self._set_progress("idle", 0, 0)
        if not (self.vectors is not None and self.embedder is not None and vectors):
            self.vector_backlog = None  # files changed and no vectors followed: count again when asked
        return report

    def _check_recipe(self, rebuilt: bool) -> None:
        """Start the vectors afresh when the model or what it is shown changed since they were made."""
        assert self.vectors is not None and self.embedder is not None
        tokens = self.settings.embedding.token_vectors
        recipe = f"{self.embedder.name}|{EMBED_RECIPE}" + ("" if tokens == "off" else f"|tokens:{tokens}")
        made, keyed = self.fts.get_meta("vector_recipe"), self.fts.get_meta("vector_ids")
        if made == recipe and keyed == ENTRY_IDS:
            return
        if not rebuilt and made is not None:
            if made != recipe:
                self._note("the embedding model, chunk context or token vectors changed; re-embedding every chunk")
            else:
                self._note(
                    "the vector index keyed its entries by chunk text, so every rewrite of a file left its old "
                    "vectors behind; storing them again by file and place (from the embedding cache)"
                )
            self._reset_vectors()
        self.fts.conn().execute("UPDATE files SET vectors_sha256 = NULL WHERE layer != 'transcript'")
        self.fts.set_meta("vector_recipe", recipe)
        self.fts.set_meta("vector_ids", ENTRY_IDS)

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise IndexCancelled()

    def _set_progress(self, stage: str, done: int, total: int, progress: Progress | None = None) -> None:
        self.progress = IndexProgress(stage, done, total)
        if progress is not None:
            progress(stage, done, total)

    def _wanted(self, paths: Iterable[str] | None) -> dict[str, Layer]:
        if paths is None:
            self._transcripts = transcript_sources(self.root, self.settings)
            wanted = dict(self.root.memory_files())
            wanted.update({virtual: "transcript" for virtual in self._transcripts})
            wanted.update(self._auto_memory_wanted())
            return wanted
        out: dict[str, Layer] = {}
        for rel in paths:
            layer = layer_of(rel)
            if layer is not None:
                out[rel] = layer
        return out

    def _sync_keyword(
        self, report: SyncReport, paths: Iterable[str] | None, progress: Progress | None, verify: bool = False
    ) -> None:
        if paths is None:
            self._check_manifest()
        known = self.fts.files()
        wanted = self._wanted(paths)
        if paths is None:
            gone = [p for p in known if p not in wanted]
        else:
            known = {p: r for p, r in known.items() if p in wanted}
            gone = [p for p in wanted if p in known and not (self.root.path / p).is_file()]
            wanted = {p: layer for p, layer in wanted.items() if (self.root.path / p).is_file()}
        total = report.files_total = len(wanted)
        self._set_progress("reading files", 0, total, progress)
        self.fts.begin()
        try:
            for n, (rel, layer) in enumerate(sorted(wanted.items()), 1):
                self._check_cancel()
                self._sync_file(rel, layer, known.get(rel), report, verify)
                if n % 200 == 0:
                    self.fts.commit()
                    report.files_done = n
                    self.fts.begin()
                self._set_progress("reading files", n, total, progress)
            for rel in gone:
                self.fts.remove_file(rel)
                report.removed.append(rel)
            self.fts.commit()
            report.files_done = total
        except BaseException:
            self.fts.rollback()
            raise
        if gone and self.vectors is not None:
            self.vectors.delete_paths(gone)

    def _rebuild_keyword(self, report: SyncReport, progress: Progress | None) -> None:
        wanted = self._wanted(None)
        report.files_total = len(wanted)
        self._set_progress("reading files", 0, len(wanted), progress)
        self.fts.begin()
        try:
            self.fts.clear()  # readers keep seeing the old index until this transaction commits
            for n, (rel, layer) in enumerate(sorted(wanted.items()), 1):
                self._sync_file(rel, layer, None, report)
                if n == len(wanted) // 2:
                    crash_point("index-rebuild-mid-keyword")
                self._set_progress("reading files", n, len(wanted), progress)
            self.fts.commit()  # one transaction: an interrupted rebuild keeps the old index whole
            report.files_done = len(wanted)
        except BaseException:
            self.fts.rollback()
            raise

    def _sync_file(
        self, rel: str, layer: Layer, old: FileRecord | None, report: SyncReport, verify: bool = False
    ) -> None:
        """Index one file if it changed; with `verify`, read it even when its size and time look unchanged."""
        if layer in ("transcript", "auto_memory"):
            self._sync_outside(rel, layer, old, report)
            return
        path = self.root.path / rel
        try:
            st = os.stat(path)
        except FileNotFoundError:
            if old is not None:
                self.fts.remove_file(rel)
                report.removed.append(rel)
            return
        except OSError as exc:  # a symlink loop, no permission: say so in status, never stop the rest
            self._skip_unreadable(rel, layer, old, report, exc)
            return
        same_stat = old is not None and old.size == st.st_size and old.mtime_ns == st.st_mtime_ns
        if same_stat and not (verify and old is not None and old.status != "skipped"):
            report.unchanged += 1
            return
        report.files_read += 1
        try:
            content = self.root.read_text(rel, max_bytes=self.settings.index.max_file_bytes, links=self._links)
        except FileSkipped as why:
            self._skip(rel, layer, old, st, report, why)
            return
        if old is not None and old.sha256 == content.sha256 and old.status != "skipped":
            if not same_stat:
                self.fts.touch_file(rel, content.size, content.mtime_ns)  # touched, not changed
            report.unchanged += 1
            return
        if same_stat:
            self._note(f"{rel} changed without its size or modification time changing; re-indexed it")
        doc = parse_document(rel, layer, content.text, max_chunk_chars=self.settings.index.max_chunk_chars)
        record = FileRecord.parsed(rel, layer, content, doc)
        self.fts.replace_file(record, doc.chunks)
        (report.added if old is None else report.updated).append(rel)

    def _sync_outside(self, virtual: str, layer: Layer, old: FileRecord | None, report: SyncReport) -> None:
        """A file outside the root under a virtual path: a transcript (or its kept copy), or auto memory."""
        if layer == "transcript":
            self._sync_transcript(virtual, old, report)
        elif not self._sync_auto_memory(virtual, old, report.added, report.updated):
            report.unchanged += 1

    def _skip(
        self, rel: str, layer: Layer, old: FileRecord | None, st: os.stat_result, report: SyncReport, why: FileSkipped
    ) -> None:
        """Record a file that cannot be indexed, with why (status lists it); a known one is only touched."""
        record = FileRecord.skipped(rel, layer, st.st_size, st.st_mtime_ns, str(why))
        if old is None or old.status != "skipped" or old.message != str(why) or old.size != st.st_size:
            self.fts.replace_file(record, [])
            report.skipped.append(rel)
        else:
            self.fts.touch_file(rel, st.st_size, st.st_mtime_ns)
        log.warning("skipped %s: %s", as_data(rel), why)

    def _skip_unreadable(
        self, rel: str, layer: Layer, old: FileRecord | None, report: SyncReport, exc: OSError
    ) -> None:
        why = f"cannot be read: {exc.strerror or exc}"
        try:
            lst = os.lstat(self.root.path / rel)
            size, mtime_ns = lst.st_size, lst.st_mtime_ns
        except OSError:
            size, mtime_ns = -1, 0
        if old is None or old.status != "skipped" or old.message != why:
            record = FileRecord.skipped(rel, layer, size, mtime_ns, why)
            self.fts.replace_file(record, [])
            report.skipped.append(rel)
        log.warning("skipped %s: %s", as_data(rel), why)

    def _sync_transcript(self, virtual: str, old: FileRecord | None, report: SyncReport) -> None:
        source = self._transcripts.get(virtual)
        try:
            st = os.stat(source) if source is not None else None
        except OSError:
            st = None
        if source is None or st is None:
            if old is not None:
                self.fts.remove_file(virtual)
                report.removed.append(virtual)
            return
        if old is not None and old.size == st.st_size and old.mtime_ns == st.st_mtime_ns:
            report.unchanged += 1
            return
        report.files_read += 1
        increment = self._follow(virtual, source, old)
        sha = f"{st.st_size}:{st.st_mtime_ns}"  # transcripts only grow; never embedded, so no content hash
        record = FileRecord(
            virtual,
            "transcript",
            st.st_size,
            st.st_mtime_ns,
            sha,
            increment.title,
            increment.date,
            "ok",
            "",
            len(increment.chunks),
            sha,
            str(source),
        )
        if increment.from_line > 1:
            self.fts.extend_file(record, increment.chunks, increment.from_line)
        else:
            self.fts.replace_file(record, increment.chunks)
        report.transcript_bytes_read += increment.bytes_read
        (report.added if old is None else report.updated).append(virtual)

    def _follow(self, virtual: str, source: Path, old: FileRecord | None) -> Increment:
        """What is new in a transcript: read from where this process last read it when it is the same file
        and its chunks are in the index; else from the start."""
        follower = self._followers.get(virtual)
        if follower is not None and follower.source == source and old is not None:
            increment = follower.read()
            if increment is not None:
                return increment
        follower = self._followers[virtual] = TranscriptFollower(virtual, source)
        increment = follower.read()
        assert increment is not None  # a new follower reads from the start
        return increment

    def _sync_vectors(self, report: SyncReport, progress: Progress | None) -> None:
        assert self.vectors is not None and self.embedder is not None
        eligible = [f for f in self.fts.files().values() if f.status != "skipped" and f.layer != "transcript"]
        pending = [f for f in eligible if f.vectors_sha256 != f.sha256]
        total = report.chunks_total = sum(f.chunks for f in pending)
        self.vector_backlog = (len(pending), len(eligible))
        if total:
            self._set_progress("embedding", 0, total, progress)  # at once: the model may take seconds to load
        done = 0
        group: list[FileRecord] = []
        group_chunks = 0
        for record in pending:
            self._check_cancel()
            group.append(record)
            group_chunks += record.chunks
            if group_chunks >= 512:
                done += self._embed_group(group, report, progress, done, total)
                group, group_chunks = [], 0
        if group:
            done += self._embed_group(group, report, progress, done, total)
        if total:
            self._set_progress("writing", done, total, progress)

    def _embed_group(
        self,
        records: list[FileRecord],
        report: SyncReport,
        progress: Progress | None = None,
        done: int = 0,
        total: int = 0,
    ) -> int:
        """Embed the chunks of `records` (from the cache where it can) and write their vectors, reporting
        progress as `done` (chunks before this group) plus how far it got, of `total`."""
        assert self.vectors is not None and self.embedder is not None
        chunks: list[Chunk] = []
        for r in records:
            chunks.extend(self.fts.chunks_of(r.path))
        misses = self.cache.misses
        texts = [embed_text(c) for c in chunks]
        if self._used_keys is not None:
            self._used_keys.update(text_key(self.embedder.name, t) for t in texts)
        # Slices of similar length (so the model's batches pad little), checking for cancellation between
        # them: a slice takes a second or two, so a closing server never waits long.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        for i in range(0, len(order), EMBED_SLICE):
            self._check_cancel()
            part = order[i : i + EMBED_SLICE]
            vectors[part] = self.cache.embed(
                self.embedder, [texts[j] for j in part], self.settings.embedding.token_vectors
            )
            report.chunks_embedded += self.cache.misses - misses  # cached as it goes: an interruption keeps them
            misses = self.cache.misses
            self._set_progress("embedding", done + i + len(part), total, progress)
            if i + EMBED_SLICE < len(order):
                crash_point("index-embedding-between-slices")
        self._set_progress("writing", done + len(chunks), total, progress)
        self.vectors.replace_files([r.path for r in records], chunks, vectors)
        report.vectors_written += len(chunks)
        crash_point("index-vectors-before-manifest")
        self.fts.begin()
        try:
            for r in records:
                self.fts.set_vectors_sha(r.path, r.sha256)
            self.fts.commit()
        except BaseException:
            self.fts.rollback()
            raise
        if self.vector_backlog is not None:
            waiting, eligible = self.vector_backlog
            self.vector_backlog = (max(0, waiting - len(records)), eligible)
        return len(chunks)


def default_index_paths(root: MemoryRoot) -> tuple[Path, Path, Path]:
    """(FTS database, embedding cache, Chroma folder) under `.memory/`."""
    state = root.ensure_state_dir()
    return state / FTS_FILE, state / "embeddings.sqlite3", state / "chroma"

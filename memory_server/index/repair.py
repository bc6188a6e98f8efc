"""Repairs of the derived indices, done by the indexer under its writer lock.

Each check is cheap enough to run on every full sync, and each repair rebuilds from the files (vectors from
the embedding cache, so no model work for unchanged text). What was repaired goes to the log and to
`notes`, which `memory_status` shows.

- `ensure_healthy`: the FTS database opens and passes quick_check and FTS5's integrity-check (once per
  process); otherwise it is deleted and every file is indexed again.
- `_check_manifest`: the manifest's chunk counts match the stored chunks; chunks of unlisted files go.
- `_open_vectors`: an embedded Chroma store that cannot be opened is deleted and made anew.
- `_check_vectors`: the vector count matches the manifest; otherwise entries holding no current chunk are
  deleted and files whose entries are missing (or hold another chunk) are embedded again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from memory_server.errors import CorruptIndexError, LockedError, VectorStoreError
from memory_server.index.fts import FtsIndex
from memory_server.index.vectors import VectorIndex, entry_id, places_in_files
from memory_server.settings import Settings

log = logging.getLogger(__name__)

MAX_NOTES = 20


class IndexRepairs:
    """Mixed into Indexer: the checks and repairs of its indices."""

    fts: FtsIndex
    vectors: VectorIndex | None
    settings: Settings
    notes: list[str]
    _checked: bool
    _writer: Callable[[float], Any]

    def ensure_healthy(self, *, force: bool = False, timeout: float = 60.0) -> None:
        """Check the FTS database (once per process, or again when `force`d after an error) under the writer
        lock; if it is corrupt, delete it so the next sync rebuilds it from the files."""
        if self._checked and not force:
            return
        with self._writer(timeout):
            try:
                self.fts.check()
            except CorruptIndexError as exc:
                self._note(f"keyword index at {self.fts.path} was unreadable ({exc}); rebuilt it from the files")
                self.fts.destroy()
                self.fts.conn()
                # Every file now counts as new, so the next sync re-indexes it and replaces its vectors (from
                # the embedding cache); vectors of chunks that no longer exist are removed by _check_vectors.
            self._checked = True

    def _check_manifest(self) -> None:
        """Make the manifest and the stored chunks agree: a file whose chunks are not all there (or not only
        its own) is read again; chunks of files the manifest does not list are deleted."""
        c = self.fts.conn()
        wrong = [
            r[0]
            for r in c.execute(
                "SELECT f.path FROM files f LEFT JOIN (SELECT path, count(*) AS n FROM chunks GROUP BY path) k "
                "ON k.path = f.path WHERE f.status != 'skipped' AND f.chunks != coalesce(k.n, 0)"
            )
        ]
        sql = "SELECT DISTINCT path FROM chunks WHERE path NOT IN (SELECT path FROM files)"
        orphans = [r[0] for r in c.execute(sql)]
        if not wrong and not orphans:
            return
        self.fts.begin()
        try:
            for path in wrong:  # forget what we knew, so the sync reads and chunks it again
                c.execute("UPDATE files SET size = -1, sha256 = '', vectors_sha256 = NULL WHERE path = ?", (path,))
            for path in orphans:
                c.execute("DELETE FROM chunks WHERE path = ?", (path,))
            self.fts.commit()
        except BaseException:
            self.fts.rollback()
            raise
        self._note(
            f"the keyword index disagreed with its manifest ({len(wrong)} files with missing or extra chunks, "
            f"{len(orphans)} unlisted files); re-indexed them from the files"
        )

    def _reset_vectors(self) -> None:
        """Start the vectors from nothing."""
        assert self.vectors is not None
        self._use_or_remake_store(self.vectors.reset)

    def _open_vectors(self) -> None:
        """Open the vector store; when it had to be made anew, every file's vectors are stored again (from
        the embedding cache)."""
        assert self.vectors is not None
        if self.vectors.damaged and self.settings.vectors.backend == "persistent":
            self._note("the vector index reported damage; deleted it and rebuilt it from the files")
            self.vectors.destroy()
            self.fts.conn().execute("UPDATE files SET vectors_sha256 = NULL WHERE layer != 'transcript'")
            return
        if not self._use_or_remake_store(self.vectors.check):
            self.fts.conn().execute("UPDATE files SET vectors_sha256 = NULL WHERE layer != 'transcript'")

    def _use_or_remake_store(self, action: Callable[[], object]) -> bool:
        """Run `action` on the vector store. An embedded store that cannot be opened (damaged) is deleted
        and made anew instead, and False returned; a server's errors and a busy lock are raised."""
        assert self.vectors is not None
        try:
            action()
            return True
        except LockedError:
            raise
        except VectorStoreError as exc:
            if self.settings.vectors.backend != "persistent":
                raise
            self._note(f"the vector index could not be opened ({exc}); deleted it and rebuilt it from the files")
            self.vectors.destroy()
            return False

    def _check_vectors(self) -> bool:
        """Make the vector index agree with the manifest (after a deleted folder, a crash, another writer):
        entries that hold no chunk of the index now are deleted; files whose entries are missing or hold
        other chunks are embedded again (from the cache, so no model work for unchanged text)."""
        assert self.vectors is not None
        replaced, self.vectors.replaced = self.vectors.replaced, False
        stored = self.vectors.count()
        expected = sum(
            f.chunks
            for f in self.fts.files().values()
            if f.layer != "transcript" and f.status != "skipped" and f.vectors_sha256 == f.sha256
        )
        if stored == expected and not replaced:
            return True
        have = self.vectors.entries()
        chunks = list(self.fts.iter_embedded_chunks())
        places = places_in_files(path for _cid, path in chunks)
        # entry id -> (chunk id, path)
        wanted = {entry_id(path, place): (cid, path) for (cid, path), place in zip(chunks, places, strict=True)}
        extra = have.keys() - wanted.keys()
        missing_files = {path for entry, (cid, path) in wanted.items() if have.get(entry) != cid}
        if extra:
            self.vectors.delete_ids(sorted(extra))
        self.fts.begin()
        try:
            for path in missing_files:
                self.fts.set_vectors_sha(path, None)
            self.fts.commit()
        except BaseException:
            self.fts.rollback()
            raise
        if extra or missing_files:
            self._note(
                f"the vector index disagreed with the files ({len(have)} vectors for {len(wanted)} chunks: "
                f"{len(extra)} stale deleted, {len(missing_files)} files re-added)"
            )
        return not missing_files

    def _note(self, note: str) -> None:
        log.warning(note)
        self.notes.append(note)
        del self.notes[:-MAX_NOTES]

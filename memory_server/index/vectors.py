"""The semantic side of the index: chunk vectors in ChromaDB.

By default the embedded persistent client under `.memory/chroma`; with `vectors.backend: http` a Chroma
server (`chroma run`, or a hosted one). Chroma never embeds anything itself here (no embedding function,
so no model download): vectors come from our own embedder. Telemetry is off. chromadb is imported on
first use, never at start-up.

Several processes, one embedded store. Chroma's persistent client is not safe for several processes: each
keeps the HNSW graph in memory, and even a query may write (it applies the write-ahead log and persists
the graph). So every use of the embedded store, read or write, holds an exclusive lock on
`.memory/chroma.lock` (a few milliseconds for a query; writes go in small batches, so a reader waits at
most one batch). A process that writes first stamps `.memory/chroma.epoch` with a new random value; any
process whose in-memory view was loaded under another stamp drops it and reloads from disk before it
touches the store. So no process ever works from, or writes back, a view older than the last write. A
Chroma server needs none of this: it is one process.

Entries keep their ids when a file is rewritten. A chunk's id is a hash of its text, so a rewrite gives every
chunk a new one; had the store used those ids, each rewrite would delete the file's entries and add new ones,
and HNSW keeps a deleted element for good (in memory and on disk: the store grew with every edit). So an
entry's id is its file and its place in the file (`entry_id`), and the chunk's id rides in its metadata: a
rewrite updates the file's entries in place and deletes only those past its new chunk count. (An entry deleted
and later added again still costs a new element: a file that shrinks and grows back leaves a few behind.)

Chroma's errors are translated in one place, `_chroma_errors`: whatever a call raises, an exception or a
panic of its Rust core (pyo3's PanicException, a BaseException), becomes a VectorStoreError saying what to
do, and a store found damaged (a panic, SQLite's "malformed", "not a database") is marked `damaged`, so the
indexer deletes it and refills it from the embedding cache instead of failing on it again.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from memory_server.errors import LockedError, VectorStoreError
from memory_server.files.crashpoints import crash_point
from memory_server.files.locks import CHROMA_LOCK, FileLock
from memory_server.files.writing import atomic_write
from memory_server.parse.markdown import Chunk
from memory_server.settings import VectorSettings

log = logging.getLogger(__name__)

# Belt and braces: chromadb also reads these at import time.
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("CHROMA_TELEMETRY_IMPL", "none")

WRITE_BATCH = 256  # vectors per locked write: bounds how long a reader in another process waits
READ_LOCK_SECONDS = 10.0  # a search waits this long for the store, then answers from keywords
WRITE_LOCK_SECONDS = 120.0


_NOT_FOREIGN = (KeyboardInterrupt, SystemExit, GeneratorExit)  # ours to propagate, never Chroma's failure
_DAMAGE_WORDS = ("malformed", "not a database", "corrupt", "no such table", "disk image", "panicked")


def is_damage_report(exc: BaseException) -> bool:
    """Whether a Chroma failure says its files are damaged: a panic of its Rust core, or SQLite's words for it."""
    if type(exc).__name__ == "PanicException":
        return True
    text = f"{type(exc).__name__} {exc}".lower()
    return any(word in text for word in _DAMAGE_WORDS)


#: How entries are keyed (the indexer remakes a store keyed another way): by file and place in the file.
ENTRY_IDS = "file-place"


def date_number(date: str | None) -> int:
    return int(date.replace("-", "")) if date else 0


def entry_id(path: str, place: int) -> str:
    """The id of the entry holding the vector of a file's `place`-th chunk (0-based, in line order)."""
    return f"{path}#{place}"


def places_in_files(paths: Iterable[str]) -> list[int]:
    """Each chunk's place in its file (0-based), for chunks given as their paths, a file's in line order: the
    one numbering `entry_id` is given, whether entries are written or checked."""
    seen: Counter[str] = Counter()
    out = []
    for path in paths:
        out.append(seen[path])
        seen[path] += 1
    return out


def _chunk_ids(entries: Sequence[str], metadatas: Any) -> list[str]:
    """The chunk id each entry holds, from its metadata (`metadatas` as Chroma returns them, a list per query);
    in a store keyed the old way an entry has none, its id being the chunk's own."""
    found = metadatas[0] if metadatas else None
    metas: Sequence[Any] = found if found is not None and len(found) == len(entries) else [None] * len(entries)
    out = []
    for entry, meta in zip(entries, metas, strict=True):
        chunk = meta.get("chunk") if isinstance(meta, Mapping) else None
        out.append(chunk if isinstance(chunk, str) else entry)
    return out


class VectorIndex:
    """One Chroma collection holding a vector per chunk, in the entry of its file and place, with the chunk's id,
    path, layer and date."""

    def __init__(self, settings: VectorSettings, persist_dir: Path, dim: int = 384) -> None:
        self.settings = settings
        self.persist_dir = Path(persist_dir)
        self.dim = dim
        self._client: Any = None
        self._collection: Any = None
        self._lock = threading.RLock()
        self._shared = settings.backend == "persistent"  # an embedded store other processes also open
        self._store_lock = FileLock(
            self.persist_dir.parent / CHROMA_LOCK,
            "another process has held the vector index ({path}) for over {timeout}s; "
            "search answers from keywords meanwhile; try again shortly",
            poll=0.005,
        )
        self._epoch_path = self.persist_dir.parent / "chroma.epoch"
        self._store_lock_taken = False  # False while reading a read-only root, where no lock file can be made
        self._depth = 0
        self._epoch: str | None = None  # the stamp this process's view was loaded under
        self._store_id: tuple[int, int] | None = None  # (device, inode) of chroma.sqlite3 when opened
        self.replaced = False  # set when the store vanished or was replaced under us (the indexer repairs)
        self.damaged = False  # set when Chroma reported its files damaged (the indexer deletes and refills it)

    @property
    def description(self) -> str:
        if self.settings.backend == "http":
            return f"chroma server {self.settings.url}"
        return f"chroma persistent {self.persist_dir}"

    @property
    def is_open(self) -> bool:
        return self._collection is not None

    # -- the one boundary for Chroma's errors ----------------------------------------------------------

    @contextmanager
    def _chroma_errors(self, what: str) -> Iterator[None]:
        """Run a Chroma call; any failure (a panic included) becomes a VectorStoreError saying what to do, and
        the client is dropped so the next call starts afresh."""
        try:
            yield
        except (VectorStoreError, LockedError):
            raise
        except BaseException as exc:
            if isinstance(exc, _NOT_FOREIGN):
                raise
            damaged = is_damage_report(exc)
            self.damaged = self.damaged or damaged
            self._drop()
            self._forget_broken_system()
            advice = (
                "the embedded store is damaged: `memory-server index` deletes it and refills it from the files"
                if damaged and self._shared
                else "for a server, check it is running and vectors.url is right; for the embedded store, run "
                "`memory-server index --rebuild`"
            )
            failure = f"{type(exc).__name__}: {exc}"
            raise VectorStoreError(f"{what} ({self.description}) failed: {failure}. {advice}") from exc

    # -- cross-process access -----------------------------------------------------------------------

    @contextmanager
    def _access(self, *, write: bool = False, timeout: float | None = None) -> Iterator[Any]:
        """The open collection, used under the store lock; `write` stamps a new epoch first."""
        with self._lock:
            outer = self._depth == 0
            if outer and self._shared:
                wait = timeout if timeout is not None else (WRITE_LOCK_SECONDS if write else READ_LOCK_SECONDS)
                self._acquire(wait, optional=not write)
            self._depth += 1
            try:
                if self._shared:
                    self._follow_other_processes()
                    if write:
                        self._stamp()
                yield self._open()
            finally:
                self._depth -= 1
                if outer and self._shared:
                    self._release()

    def _acquire(self, timeout: float, *, optional: bool = False) -> None:
        self._store_lock_taken = self._store_lock.acquire(timeout, optional=optional)

    def _release(self) -> None:
        if self._store_lock_taken:
            self._store_lock_taken = False
            self._store_lock.release()

    def _read_epoch(self) -> str:
        try:
            return self._epoch_path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return ""

    def _stamp(self) -> None:
        epoch = os.urandom(8).hex()
        atomic_write(self._epoch_path, epoch)
        self._epoch = epoch

    def _follow_other_processes(self) -> None:
        """Drop this process's view when another process wrote since it was loaded, or the store was
        deleted or replaced on disk."""
        epoch = self._read_epoch()
        if self._collection is not None:
            store = self._store_identity()
            if store != self._store_id:
                log.warning("the vector index at %s was deleted or replaced; reopening it", self.persist_dir)
                self.replaced = True
                self._drop()
            elif epoch != self._epoch:
                self._drop()
        self._epoch = epoch

    def _store_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.persist_dir / "chroma.sqlite3")
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    # -- opening --------------------------------------------------------------------------------------

    def _open(self) -> Any:
        with self._lock:
            if self._collection is not None:
                return self._collection
            try:
                import chromadb
                from chromadb.config import Settings as ChromaSettings
            except ImportError as exc:  # pragma: no cover - chromadb is a dependency
                raise VectorStoreError("chromadb is not installed: pip install chromadb") from exc
            chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=True)
            with self._chroma_errors("opening the vector index"):
                if self.settings.backend == "http":
                    self._client = self._http_client(chromadb, chroma_settings)
                elif self.settings.backend == "persistent":
                    self.persist_dir.mkdir(parents=True, exist_ok=True)
                    self._client = chromadb.PersistentClient(path=str(self.persist_dir), settings=chroma_settings)
                else:
                    raise VectorStoreError(
                        f"vectors.backend is {self.settings.backend!r}: use 'persistent' or 'http' in memory.yaml"
                    )
                self._collection = self._client.get_or_create_collection(
                    self.settings.collection,
                    embedding_function=None,
                    configuration={"hnsw": {"space": "cosine", "ef_search": 100}},
                )
                self._store_id = self._store_identity()
            return self._collection

    def _http_client(self, chromadb: Any, chroma_settings: Any) -> Any:
        if not self.settings.url:
            raise VectorStoreError("vectors.backend is 'http' but vectors.url is not set in memory.yaml")
        url = urlparse(self.settings.url)
        headers = {"Authorization": f"Bearer {self.settings.token}"} if self.settings.token else None
        return chromadb.HttpClient(
            host=url.hostname or "127.0.0.1",
            port=url.port or (443 if url.scheme == "https" else 8000),
            ssl=url.scheme == "https",
            headers=headers,
            settings=chroma_settings,
        )

    def _forget_broken_system(self) -> None:
        """chromadb caches one system per path, even one that failed to start; forget it, so that the next
        open (after the store was repaired) starts a fresh one instead of reusing the broken one."""
        if not self._shared:
            return
        try:
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient._identifier_to_system.pop(str(self.persist_dir), None)
            SharedSystemClient._identifier_to_refcount.pop(str(self.persist_dir), None)
        except (ImportError, AttributeError):  # pragma: no cover - a chromadb without this cache needs nothing here
            pass
        self.replaced = True  # what was loaded is gone: the next full sync checks the store against the files

    def _drop(self) -> None:
        """Forget the open client, so the next use loads what is on disk (or on the server) now."""
        with self._lock:
            client, self._client, self._collection = self._client, None, None
            self._store_id = None
            if client is not None:
                try:
                    client.close()  # the last client of a path stops its system, freeing the in-memory graph
                except BaseException as exc:  # a broken client may even panic: forgetting it is all that is left
                    if isinstance(exc, _NOT_FOREIGN):
                        raise
                    log.debug("closing the vector index client failed: %s", exc)

    def close(self) -> None:
        self._drop()

    def check(self) -> int:
        """Open the store and count its vectors; raises VectorStoreError when it cannot be used."""
        return self.count()

    def destroy(self) -> None:
        """Delete the embedded store from disk (it is derived; the indexer refills it from the cache)."""
        if not self._shared:
            self.reset()
            return
        with self._lock:
            self._acquire(WRITE_LOCK_SECONDS)
            try:
                self._drop()
                self._forget_broken_system()
                shutil.rmtree(self.persist_dir, ignore_errors=True)
                self._stamp()
                self.damaged = False
            finally:
                self._release()

    # -- writing --------------------------------------------------------------------------------

    def replace_files(self, paths: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Store the vectors of the files at `paths`: `chunks` holds every chunk they have now, a file's in line
        order. Each goes into the entry of its place in its file (updated in place when the file had one
        there), and the entries past each file's new chunk count are deleted."""
        places = places_in_files(c.path for c in chunks)
        counts: Counter[str] = Counter({path: 0 for path in paths})
        counts.update(c.path for c in chunks)
        for i in range(0, len(chunks), WRITE_BATCH):
            if i:
                crash_point("index-vectors-between-batches")
            part = list(zip(chunks[i : i + WRITE_BATCH], places[i : i + WRITE_BATCH], strict=True))
            with self._access(write=True) as col, self._chroma_errors("writing to the vector index"):
                col.upsert(
                    ids=[entry_id(c.path, place) for c, place in part],
                    embeddings=vectors[i : i + WRITE_BATCH],
                    metadatas=[
                        {
                            "path": c.path,
                            "place": place,
                            "chunk": c.id,
                            "layer": c.layer,
                            "date_num": date_number(c.date),
                        }
                        for c, place in part
                    ],
                )
        self.delete_beyond(list(counts.items()))

    def delete_beyond(self, counts: Sequence[tuple[str, int]]) -> None:
        """Delete the entries of each (file, count) at places `count` and later (all of them for 0)."""
        for i in range(0, len(counts), 100):
            clauses: list[dict[str, Any]] = [
                {"$and": [{"path": path}, {"place": {"$gte": n}}]} for path, n in counts[i : i + 100]
            ]
            where = clauses[0] if len(clauses) == 1 else {"$or": clauses}
            with self._access(write=True) as col, self._chroma_errors("deleting from the vector index"):
                col.delete(where=where)

    def delete_paths(self, paths: Sequence[str]) -> None:
        for i in range(0, len(paths), 200):
            with self._access(write=True) as col, self._chroma_errors("deleting from the vector index"):
                col.delete(where={"path": {"$in": list(paths[i : i + 200])}})

    def delete_ids(self, ids: Sequence[str]) -> None:
        ids = list(ids)
        for i in range(0, len(ids), WRITE_BATCH):
            with self._access(write=True) as col, self._chroma_errors("deleting from the vector index"):
                col.delete(ids=ids[i : i + WRITE_BATCH])

    def reset(self) -> None:
        """Remove every vector (a rebuild)."""
        with self._access(write=True):
            try:
                with self._chroma_errors("deleting the vector collection"):
                    self._client.delete_collection(self.settings.collection)
            except VectorStoreError as exc:
                log.info("%s; making the collection anew", exc)
            self._collection = None
            self._open()

    # -- reading --------------------------------------------------------------------------------

    def _read(self, what: Any) -> Any:
        """Run `what(collection)` under the lock; on failure reload the view once (another process may
        have replaced the collection) before giving up."""
        for attempt in (1, 2):
            try:
                with self._access() as col, self._chroma_errors("reading the vector index"):
                    return what(col)
            except VectorStoreError:
                if attempt == 2 or self.damaged:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def count(self) -> int:
        return int(self._read(lambda col: col.count()))

    def entries(self) -> dict[str, str]:
        """Every entry's id with the chunk id it holds."""

        def page_all(col: Any) -> dict[str, str]:
            out: dict[str, str] = {}
            offset = 0
            while True:
                got = col.get(include=["metadatas"], limit=5000, offset=offset)
                out.update(zip(got["ids"], _chunk_ids(got["ids"], [got.get("metadatas")]), strict=True))
                if len(got["ids"]) < 5000:
                    return out
                offset += 5000

        found: dict[str, str] = self._read(page_all)
        return found

    def ids(self) -> set[str]:
        """The ids of the chunks whose vectors are stored."""
        return set(self.entries().values())

    def query(
        self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float, np.ndarray | None]]:
        """Nearest chunks as (id, cosine similarity, vector) pairs, best first."""
        res = self._read(
            lambda col: col.query(
                query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
                n_results=max(1, n),
                where=where or None,
                include=["distances", "embeddings", "metadatas"],
            )
        )
        ids = _chunk_ids(res["ids"][0], res.get("metadatas"))
        dists = res["distances"][0]
        embs = res.get("embeddings")
        vecs = embs[0] if embs is not None and len(embs) else [None] * len(ids)
        out: dict[str, tuple[str, float, np.ndarray | None]] = {}
        for i, d, v in zip(ids, dists, vecs, strict=False):
            # Best first, so the first entry of a chunk wins (two hold one only while a store keyed the old way
            # is being remade).
            out.setdefault(i, (i, 1.0 - float(d), None if v is None else np.asarray(v)))
        return list(out.values())

"""A content-hash cache of embeddings, so unchanged text is never embedded twice, across rebuilds too.

Kept in its own SQLite file (`.memory/embeddings.sqlite3`) so that `index --rebuild`, which starts the
indices from nothing, still finds every vector it made before. The key is the hash of the model's name
and the exact text the model saw: a new model or a changed chunk context misses, nothing else does.
Beside each vector it keeps the text's token vectors (table `tokens`, packed as index/token_vectors.py
says) when the indexer asks for them, for late-interaction reranking.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_server.files.sqlite import ThreadConnections, connect, file_identity, is_damage, quarantine, rollback
from memory_server.index.embedder import Embedder, TokenEmbedder
from memory_server.index.token_vectors import TokenFormat, pack, unpack_many

log = logging.getLogger(__name__)


def text_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._connections = ThreadConnections(self._open_or_recover)
        self.hits = 0
        self.misses = 0

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection to the cache file as it is now (another process may have set a damaged one
        aside and made a new one)."""
        return self._connections.get(file_id=file_identity(self.path))

    def _open_or_recover(self) -> sqlite3.Connection:
        try:
            return self._open()
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            self._recover(exc)
            return self._open()

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        c = connect(self.path, busy_seconds=30.0, synchronous=False)
        try:
            c.execute("CREATE TABLE IF NOT EXISTS vectors(key TEXT PRIMARY KEY, dim INTEGER, vector BLOB)")
            c.execute(
                "CREATE TABLE IF NOT EXISTS tokens(key TEXT PRIMARY KEY, format TEXT, count INTEGER, dim INTEGER,"
                " data BLOB)"
            )
        except BaseException:
            c.close()
            raise
        return c

    def _recover(self, exc: BaseException) -> None:
        """The cache is only a cache: a damaged one is set aside and started afresh (texts get embedded
        again as they are needed)."""
        self.close()
        aside = quarantine(self.path)
        log.warning(
            "the embedding cache %s was damaged (%s); moved it to %s and started a new one", self.path, exc, aside
        )

    def close(self) -> None:
        self._connections.close()

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        try:
            return self._get_many(keys)
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            self._recover(exc)
            return {}

    def _rows_in(self, select: str, keys: Sequence[str], *args: str) -> list[tuple[Any, ...]]:
        """`select` (ending in `key IN ({marks})`, after `args`' placeholders) over `keys`, 500 at a time:
        SQLite caps a statement's variables."""
        c = self._conn()
        rows: list[tuple[Any, ...]] = []
        for i in range(0, len(keys), 500):
            part = list(keys[i : i + 500])
            rows.extend(c.execute(select.format(marks=",".join("?" * len(part))), [*args, *part]))
        return rows

    def _get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self._rows_in("SELECT key, dim, vector FROM vectors WHERE key IN ({marks})", keys)
        return {key: np.frombuffer(blob, dtype=np.float32, count=dim) for key, dim, blob in rows}

    def get_tokens(self, keys: Sequence[str], fmt: TokenFormat) -> dict[str, np.ndarray]:
        """Token vectors stored in `fmt` under `keys` (unit rows, float32); keys without them are left out."""
        if fmt == "off" or not keys:
            return {}
        try:
            found = self._rows_in(
                "SELECT key, count, dim, data FROM tokens WHERE format = ? AND key IN ({marks})", keys, fmt
            )
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            self._recover(exc)
            return {}
        out: dict[str, np.ndarray] = {}
        unpacked = unpack_many([(blob, count, dim) for _, count, dim, blob in found], fmt)
        for (key, *_), rows_of_key in zip(found, unpacked, strict=True):
            if rows_of_key is None:  # a damaged row: that text simply has no token vectors
                log.debug("token vectors of %s unreadable", key)
            else:
                out[key] = rows_of_key
        return out

    def _keys_with_tokens(self, keys: Sequence[str], fmt: TokenFormat) -> set[str]:
        return {
            key for (key,) in self._rows_in("SELECT key FROM tokens WHERE format = ? AND key IN ({marks})", keys, fmt)
        }

    def put_many(
        self, items: dict[str, np.ndarray], tokens: dict[str, np.ndarray] | None = None, fmt: TokenFormat = "off"
    ) -> None:
        rows = [(k, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]
        token_rows = (
            [(k, fmt, int(t.shape[0]), int(t.shape[1]), pack(t, fmt)) for k, t in (tokens or {}).items()]
            if fmt != "off"
            else []
        )
        try:
            self._put_rows(rows, token_rows)
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            self._recover(exc)
            self._put_rows(rows, token_rows)

    def _put_rows(
        self, rows: Sequence[tuple[str, int, bytes]], token_rows: Sequence[tuple[str, str, int, int, bytes]]
    ) -> None:
        c = self._conn()
        c.execute("BEGIN IMMEDIATE")
        try:
            c.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?)", rows)
            c.executemany("INSERT OR REPLACE INTO tokens VALUES (?,?,?,?,?)", token_rows)
            c.execute("COMMIT")
        except BaseException:
            rollback(c)
            raise

    def prune(self, keep: set[str]) -> int:
        """Drop every cached vector (and its token vectors) whose key is not in `keep`; returns how many.
        A rebuild calls it with the keys of every chunk it embedded, so text no file holds any more (old
        versions of edited passages, another model's vectors) stops taking space."""
        c = self._conn()
        c.execute("BEGIN IMMEDIATE")
        try:
            c.execute("CREATE TEMP TABLE IF NOT EXISTS keep_keys(key TEXT PRIMARY KEY)")
            c.execute("DELETE FROM keep_keys")
            c.executemany("INSERT OR IGNORE INTO keep_keys VALUES (?)", ((k,) for k in keep))
            dropped = c.execute("DELETE FROM vectors WHERE key NOT IN (SELECT key FROM keep_keys)").rowcount
            c.execute("DELETE FROM tokens WHERE key NOT IN (SELECT key FROM keep_keys)")
            c.execute("DELETE FROM keep_keys")
            c.execute("COMMIT")
        except BaseException:
            rollback(c)
            raise
        return int(dropped)

    def count(self) -> int:
        return int(self._conn().execute("SELECT count(*) FROM vectors").fetchone()[0])

    def embed(self, embedder: Embedder, texts: Sequence[str], tokens: TokenFormat = "off") -> np.ndarray:
        """Vectors for `texts`, from the cache where present; the rest are embedded and stored. With a
        `tokens` format (and an embedder that gives token vectors), a text counts as present only when its
        token vectors are stored too, and both are stored for the texts embedded now."""
        keys = [text_key(embedder.name, t) for t in texts]
        unique_keys = list(dict.fromkeys(keys))
        found = self.get_many(unique_keys)
        with_tokens = tokens != "off" and isinstance(embedder, TokenEmbedder)
        if with_tokens and found:
            have = self._keys_with_tokens([k for k in unique_keys if k in found], tokens)
            found = {k: v for k, v in found.items() if k in have}
        missing = [i for i, k in enumerate(keys) if k not in found]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            unique = list(dict.fromkeys(keys[i] for i in missing))
            first = {keys[i]: i for i in reversed(missing)}
            batch = [texts[first[k]] for k in unique]
            if with_tokens:
                assert isinstance(embedder, TokenEmbedder)
                fresh, token_rows = embedder.embed_with_tokens(batch)
                new = dict(zip(unique, fresh, strict=True))
                self.put_many(new, dict(zip(unique, token_rows, strict=True)), tokens)
            else:
                new = dict(zip(unique, embedder.embed(batch), strict=True))
                self.put_many(new)
            found.update(new)
        if not texts:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

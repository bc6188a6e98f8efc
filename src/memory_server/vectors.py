"""The semantic side of the index: chunk vectors in ChromaDB.

By default the embedded persistent client under `.memory/chroma`; with `vectors.backend: http` a Chroma
server (`chroma run`, or a hosted one). Chroma never embeds anything itself here (no embedding function,
so no model download): vectors come from our own embedder. Telemetry is off. chromadb is imported on
first use, never at start-up.

The persistent client keeps an in-memory copy of the index, so a process must `reopen()` after another
process wrote (the indexer compares the index generation before it writes or reads; see indexer.py).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlparse

import numpy as np

from .errors import VectorStoreError
from .markdown import Chunk
from .settings import VectorSettings

log = logging.getLogger(__name__)

# Belt and braces: chromadb also reads these at import time.
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("CHROMA_TELEMETRY_IMPL", "none")


def date_number(date: str | None) -> int:
    return int(date.replace("-", "")) if date else 0


class VectorIndex:
    """One Chroma collection holding a vector per chunk, with the chunk's path, layer and date."""

    def __init__(self, settings: VectorSettings, persist_dir: Path, dim: int = 384) -> None:
        self.settings = settings
        self.persist_dir = Path(persist_dir)
        self.dim = dim
        self._client: Any = None
        self._collection: Any = None
        self._lock = threading.RLock()

    @property
    def description(self) -> str:
        if self.settings.backend == "http":
            return f"chroma server {self.settings.url}"
        return f"chroma persistent {self.persist_dir}"

    @property
    def is_open(self) -> bool:
        return self._collection is not None

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
            try:
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
            except VectorStoreError:
                raise
            except Exception as exc:
                raise VectorStoreError(
                    f"cannot open the vector index ({self.description}): {exc}. "
                    "For a server, check it is running and vectors.url is right; for the embedded store, "
                    "run `memory-server index --rebuild`"
                ) from exc
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

    def reopen(self) -> None:
        """Drop the in-memory view so the next call reads what other processes wrote."""
        with self._lock:
            if self._client is not None and self.settings.backend == "persistent":
                try:
                    self._client.clear_system_cache()
                except Exception:  # pragma: no cover - best effort
                    pass
            self._client = None
            self._collection = None

    def close(self) -> None:
        self.reopen()

    # -- writing --------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        col = self._open()
        batch = 2000
        try:
            for i in range(0, len(chunks), batch):
                part = chunks[i : i + batch]
                col.upsert(
                    ids=[c.id for c in part],
                    embeddings=vectors[i : i + batch],
                    metadatas=[
                        {"path": c.path, "layer": c.layer, "date_num": date_number(c.date)} for c in part
                    ],
                )
        except Exception as exc:
            raise VectorStoreError(f"writing to the vector index failed: {exc}") from exc

    def delete_paths(self, paths: Sequence[str]) -> None:
        if not paths:
            return
        col = self._open()
        try:
            for i in range(0, len(paths), 200):
                col.delete(where={"path": {"$in": list(paths[i : i + 200])}})
        except Exception as exc:
            raise VectorStoreError(f"deleting from the vector index failed: {exc}") from exc

    def reset(self) -> None:
        """Remove every vector (a rebuild)."""
        with self._lock:
            self._open()
            try:
                self._client.delete_collection(self.settings.collection)
            except Exception:
                pass
            self._collection = None
            self._open()

    # -- reading --------------------------------------------------------------------------------

    def count(self) -> int:
        try:
            return int(self._open().count())
        except VectorStoreError:
            raise
        except Exception as exc:
            raise VectorStoreError(f"reading the vector index failed: {exc}") from exc

    def ids(self) -> set[str]:
        col = self._open()
        out: set[str] = set()
        offset = 0
        while True:
            got = col.get(include=[], limit=5000, offset=offset)
            out.update(got["ids"])
            if len(got["ids"]) < 5000:
                return out
            offset += 5000

    def query(
        self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float, np.ndarray | None]]:
        """Nearest chunks as (id, cosine similarity, vector) pairs, best first."""
        col = self._open()
        try:
            res = col.query(
                query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
                n_results=max(1, n),
                where=where or None,
                include=["distances", "embeddings"],
            )
        except Exception as exc:
            raise VectorStoreError(f"querying the vector index failed: {exc}") from exc
        ids = res["ids"][0]
        dists = res["distances"][0]
        embs = res.get("embeddings")
        vecs = embs[0] if embs is not None and len(embs) else [None] * len(ids)
        return [(i, 1.0 - float(d), None if v is None else np.asarray(v)) for i, d, v in zip(ids, dists, vecs)]

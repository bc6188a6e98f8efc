"""Test helpers that the program itself never imports: the deterministic fake embedder.

Tests and benchmarks of the plumbing (indexing, fusion, the vector store) use FakeEmbedder instead of the
real model; tests of retrieval quality use the real model (index/embedder.py).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from memory_server.errors import ConfigError
from memory_server.index.embedder import MINILM_DIM


class FakeEmbedder:
    """A deterministic stand-in embedder for tests of the plumbing: no model, microseconds a text.

    Each lowercase word adds weight to one of ``dim`` buckets (chosen and signed by a stable
    hash), and each of its character trigrams a little more, so texts that share words (or
    word stems) come out close and unrelated texts near orthogonal. Rows are L2-normalised;
    an empty text gets a fixed unit vector of its own. Same text, same vector, in every process.
    """

    _WORD = re.compile(r"\w+")
    _TRIGRAM_WEIGHT = 0.25

    def __init__(self, dim: int = MINILM_DIM) -> None:
        if dim < 8:
            raise ConfigError(f"FakeEmbedder needs at least 8 dimensions, not {dim}")
        self.dim: int = dim
        self.name: str = f"fake-hash-{dim}"

    def __repr__(self) -> str:
        return f"FakeEmbedder(dim={self.dim})"

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: float32, shape ``(len(texts), dim)``, L2-normalised rows."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string: use embed([text])")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = self._WORD.findall(text.lower())
            if not words:
                self._add(out[row], "\x00empty", 1.0)
            for word in words:
                self._add(out[row], "w:" + word, 1.0)
                padded = f"<{word}>"
                for i in range(len(padded) - 2):
                    self._add(out[row], "t:" + padded[i : i + 3], self._TRIGRAM_WEIGHT)
            norm = float(np.linalg.norm(out[row]))
            if norm == 0.0:  # every feature cancelled out by sign: fall back to the empty vector
                self._add(out[row], "\x00empty", 1.0)
                norm = 1.0
            out[row] /= norm
        return out

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[NDArray[np.float32], list[NDArray[np.float32]]]:
        """``embed(texts)`` and, per text, one unit vector per word (the word's own embedding), so
        late-interaction plumbing can be tested: a question's word finds the same word in a passage."""
        pooled = self.embed(texts)
        tokens = [self.embed(self._WORD.findall(text.lower()) or [""]) for text in texts]
        return pooled, tokens

    def _add(self, row: NDArray[np.float32], feature: str, weight: float) -> None:
        # blake2b, not hash(): Python salts str hashes per process.
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        sign = 1.0 if value & 1 else -1.0
        row[(value >> 1) % self.dim] += sign * weight

"""The first stage of meaning-based search: the candidates each retriever offers for a parsed query.

- keyword: BM25 over the chunks' own text, for any of the query's content words;
- phrase: chunks whose text holds the query as typed (the literal tier: `3.2.7`, `SAVE_CONFIG`);
- context: chunks under a title or heading holding some of the query's words (the file or section is about
  the query: they get a small context score later, never a keyword score);
- semantic: the nearest chunks by embedding (and the question's token vectors, for the late rerank).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from memory_server.files.root import Layer
from memory_server.index.embedder import Embedder, TokenEmbedder
from memory_server.index.fts import FtsIndex
from memory_server.index.vectors import VectorIndex, date_number
from memory_server.parse.markdown import Chunk
from memory_server.search.exact import match, phrase_matches
from memory_server.search.parsed import ParsedQuery
from memory_server.search.query import EMBEDDED_LAYERS, Mode, Query
from memory_server.settings import RankingSettings, SearchSettings

Vector = NDArray[np.float32]
Where = dict[str, object]  # a Chroma `where` filter


@dataclass(frozen=True)
class Candidates:
    keyword: list[tuple[Chunk, float]]  # (chunk, BM25, higher is better), best first
    phrase: list[tuple[Chunk, float]]  # chunks that hold the query as typed
    context: list[Chunk]  # chunks under a title or heading that holds some of the query's words
    semantic: list[tuple[str, float, Vector | None]]  # (chunk id, cosine, its vector), best first
    query_tokens: Vector | None  # the question's token vectors, when late interaction reranks
    mode: Mode  # which signals answered: hybrid, semantic, or keyword (no semantic side)


def find_candidates(
    fts: FtsIndex,
    vectors: VectorIndex | None,
    embedder: Embedder | None,
    q: Query,
    parsed: ParsedQuery,
    search: SearchSettings,
    ranking: RankingSettings,
    *,
    tokens: bool = False,
) -> Candidates:
    """Every retriever's candidates, `search.candidate_pool` of each (or `search.max_k`, when larger: never sized
    by the k asked for, so a larger answer starts with the smaller one). `tokens`: the late rerank runs, so the
    question's token vectors come from the same model call as its vector."""
    pool = max(search.candidate_pool, search.max_k)
    keyword_side = ranking.keyword_weight > 0
    semantic, query_tokens = semantic_candidates(vectors, embedder, q, pool, ranking, tokens=tokens)
    mode: Mode = "keyword" if semantic is None else "hybrid" if keyword_side else "semantic"
    return Candidates(
        keyword=keyword_candidates(fts, parsed, q, pool, "text") if keyword_side else [],
        phrase=phrase_candidates(fts, parsed, q, pool) if keyword_side else [],
        context=[c for c, _ in keyword_candidates(fts, parsed, q, pool, "title heading")]
        if keyword_side and ranking.context_weight > 0
        else [],
        semantic=semantic or [],
        query_tokens=query_tokens,
        mode=mode,
    )


def keyword_candidates(
    fts: FtsIndex, parsed: ParsedQuery, q: Query, limit: int, columns: Literal["text", "title heading"]
) -> list[tuple[Chunk, float]]:
    """BM25 over the query's content words (any of them) in `columns`: a chunk's own text (the keyword
    signal), or its title and heading (context for the file, not a match of every chunk under it)."""
    expression = parsed.expression
    if expression is None:
        return []
    return match(fts, f"{{{columns}}} : ({expression})", limit, q.layers, q.after, q.before)


def phrase_candidates(fts: FtsIndex, parsed: ParsedQuery, q: Query, limit: int) -> list[tuple[Chunk, float]]:
    """Chunks whose text holds the query itself (two or more tokens, as typed, case and spacing aside)."""
    words, wanted = parsed.terms.phrase_words, parsed.terms.wanted
    if len(words) < 2 or not wanted:
        return []
    return phrase_matches(fts, words, wanted, limit, q.layers, q.after, q.before)


def semantic_candidates(
    vectors: VectorIndex | None,
    embedder: Embedder | None,
    q: Query,
    limit: int,
    ranking: RankingSettings,
    *,
    tokens: bool,
) -> tuple[list[tuple[str, float, Vector | None]] | None, Vector | None]:
    """The nearest chunks to the question (None: no semantic side), and the question's token vectors."""
    layers = [layer for layer in q.layers if layer in EMBEDDED_LAYERS]  # transcripts are never embedded
    if vectors is None or embedder is None or not ranking.semantic_weight or not layers:
        return None, None
    query_tokens: Vector | None = None
    if tokens and isinstance(embedder, TokenEmbedder):
        vecs, token_vecs = embedder.embed_with_tokens([q.text])  # one model call gives both
        vector, query_tokens = vecs[0], token_vecs[0]
    else:
        vector = embedder.embed([q.text])[0]
    return vectors.query(vector, limit, where(layers, q.after, q.before)), query_tokens


def where(layers: Sequence[Layer], after: str | None, before: str | None) -> Where | None:
    """Chroma's filter for the layers and dates asked for (None: no filter)."""
    clauses: list[Where] = []
    if set(layers) != EMBEDDED_LAYERS:
        clauses.append({"layer": {"$in": list(layers)}})
    if after:
        clauses.append({"date_num": {"$gte": date_number(after)}})
    if before:
        clauses.append({"date_num": {"$lte": date_number(before)}})
        if not after:
            clauses.append({"date_num": {"$gt": 0}})  # undated chunks match no date filter
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}

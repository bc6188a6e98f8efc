"""Ranked hits from the indices: literal search, and meaning-based search fused with the keyword signal.

Ranking (every weight is a setting in `ranking:`):
- fusion of the semantic and BM25 candidate lists (normalised scores, or reciprocal ranks);
- context: the passages next to a strong candidate gain a share of its score;
- session routing: candidates from the file that answers best rise together;
- late interaction: the best candidates reranked token by token against the question (late.py);
- precedence: a per-layer bonus, so on equal relevance a topic beats Claude Code's auto memory, that a session,
  and a session a transcript;
- recency inside a layer: part of a session's score decays with its age (topics never decay);
- diversity: MMR against hits already chosen, a per-file quota, near-duplicates dropped.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memory_server.errors import QueryError
from memory_server.index.embedder import Embedder, TokenEmbedder
from memory_server.index.fts import FtsIndex
from memory_server.index.vectors import VectorIndex, date_number
from memory_server.parse.markdown import Chunk
from memory_server.search.diversity import diversify
from memory_server.search.exact import (
    KeywordHit,
    content_terms,
    context_candidates,
    exact_search,
    keyword_candidates,
    normalise,
    phrase_candidates,
    quote,
    terms,
)
from memory_server.search.late import TokenLookup, late_rerank
from memory_server.search.query import (
    EMBEDDED_LAYERS,
    LAYER_RANK,
    Hit,
    Query,
    fit_budget,
)
from memory_server.search.signals import context_scores, idf, is_assistant, keyword_scale, own_keyword_shares
from memory_server.settings import RankingSettings, SearchSettings

INDEX_FILE = "MEMORY.md"
MIN_COSINE_SPAN = 0.1


def _hit(chunk: Chunk, score: float, match: str | None = None) -> Hit:
    return Hit(
        chunk.path,
        chunk.start_line,
        chunk.end_line,
        chunk.layer,
        chunk.title,
        chunk.heading,
        chunk.date,
        score,
        chunk.text,
        match,
    )


def search_exact(
    fts: FtsIndex, q: Query, settings: SearchSettings, ranking: RankingSettings | None = None
) -> list[Hit]:
    """Literal-first keyword search (see exact.py), ties to the higher layer. Inside a tier, the index
    file (MEMORY.md: titles and links) comes after the content it points to, and below the literal tier
    the assistant's lines in sessions weigh `ranking.assistant_weight` of the user's."""
    found = exact_search(fts, q.text, q.k, q.layers, q.after, q.before)
    tier = {"phrase": 0, "substring": 0, "all_terms": 1, "any_terms": 2}
    speaker = ranking.assistant_weight if ranking is not None else 1.0

    def weighed(h: KeywordHit) -> float:
        return h.score * speaker if tier[h.match] and is_assistant(h.chunk) else h.score

    found.sort(
        key=lambda h: (tier[h.match], h.chunk.path == INDEX_FILE, -round(weighed(h), 6), LAYER_RANK[h.chunk.layer])
    )
    hits = [_hit(h.chunk, h.score, h.match) for h in found]
    return fit_budget(hits, [normalise(q.text), *terms(q.text)], settings)


def search_hybrid(
    fts: FtsIndex,
    vectors: VectorIndex | None,
    embedder: Embedder | None,
    q: Query,
    search: SearchSettings,
    ranking: RankingSettings,
    *,
    today: dt.date | None = None,
    vector_lookup: Callable[[list[Chunk]], dict[str, np.ndarray]] | None = None,
    token_lookup: TokenLookup | None = None,
) -> tuple[list[Hit], str]:
    """Meaning-based search fused with BM25. Returns (hits, mode) where mode says which signals answered.

    `vector_lookup` gives the stored vectors of keyword-only candidates, so diversity treats them alike;
    `token_lookup` the stored token vectors of candidates, for late-interaction reranking (late.py)."""
    pool = max(search.candidate_pool, q.k * 3)
    keyword = keyword_candidates(fts, q.text, pool, q.layers, q.after, q.before) if ranking.keyword_weight else []
    semantic: list[tuple[str, float, np.ndarray | None]] = []
    query_tokens: np.ndarray | None = None
    mode = "keyword"
    semantic_layers = [layer for layer in q.layers if layer != "transcript"]  # transcripts are never embedded
    if vectors is not None and embedder is not None and ranking.semantic_weight and semantic_layers:
        if token_lookup is not None and ranking.late_weight > 0 and isinstance(embedder, TokenEmbedder):
            qvecs, qtokens = embedder.embed_with_tokens([q.text])  # one model call gives both
            qvec, query_tokens = qvecs[0], qtokens[0]
        else:
            qvec = embedder.embed([q.text])[0]
        semantic = vectors.query(qvec, pool, _where(semantic_layers, q.after, q.before))
        mode = "hybrid" if ranking.keyword_weight else "semantic"
    if keyword:
        keyword = _own_keyword_scores(fts, q.text, keyword)
    phrase = phrase_candidates(fts, q.text, pool, q.layers, q.after, q.before) if ranking.keyword_weight else []
    use_context = ranking.context_weight > 0 and ranking.keyword_weight > 0
    around = context_candidates(fts, q.text, pool, q.layers, q.after, q.before) if use_context else []
    vecs = {cid: vec for cid, _sim, vec in semantic}
    chunks = {chunk.id: chunk for chunk, _bm25 in keyword + phrase}
    chunks.update((chunk.id, chunk) for chunk in around)
    scale = keyword_scale(keyword[0][1] if keyword else 0.0, _word_idfs(fts, q.text), ranking.keyword_floor)
    scores = fuse(
        [(cid, sim) for cid, sim, _ in semantic], [(c.id, s) for c, s in keyword], ranking, keyword_scale=scale
    )
    for chunk, _bm25 in phrase:  # the literal tier: the query as typed, at the top of the keyword signal
        scores[chunk.id] = scores.get(chunk.id, 0.0) + ranking.keyword_weight * ranking.phrase_bonus
    chunks.update(fts.chunks_by_id([cid for cid in scores if cid not in chunks]))
    scores = {cid: s for cid, s in scores.items() if cid in chunks}  # a stale vector whose chunk is gone
    if use_context:
        for chunk in around:
            scores.setdefault(chunk.id, 0.0)
        for cid, share in context_scores(q.text, [chunks[cid] for cid in scores]).items():
            scores[cid] += ranking.context_weight * ranking.keyword_weight * share
    if ranking.assistant_weight != 1.0:
        for cid in scores:
            if is_assistant(chunks[cid]):
                scores[cid] *= ranking.assistant_weight
    lend_to_neighbours(fts, scores, chunks, ranking, q)
    route_by_file(scores, chunks, ranking)
    if query_tokens is not None and token_lookup is not None:
        late_rerank(scores, chunks, query_tokens, token_lookup, ranking)
    if semantic and vector_lookup is not None and ranking.mmr_weight:
        vecs.update(vector_lookup([chunks[cid] for cid in scores if cid not in vecs]))
    today = today or dt.date.today()
    ranked = [(_adjust(score, chunks[cid], ranking, today), chunks[cid]) for cid, score in scores.items()]
    chosen = diversify(ranked, vecs, q.k, ranking)
    hits = [_hit(chunk, score) for score, chunk in chosen]
    return fit_budget(hits, terms(q.text), search), mode


def _word_idfs(fts: FtsIndex, query: str) -> list[float]:
    """The IDF of each distinct content word of the query, in the chunks' own text."""
    total = fts.chunk_count()
    words = dict.fromkeys(t.casefold() for t in content_terms(query))
    return [idf(fts.count_matching(f"{{text}} : {quote(word)}"), total) for word in words]


def _own_keyword_scores(fts: FtsIndex, query: str, keyword: list[tuple[Chunk, float]]) -> list[tuple[Chunk, float]]:
    """BM25 scores scaled to the share of the matched words that are the chunk's own (not its title's or
    heading's), best first."""
    total = fts.chunk_count()

    def word_idf(word: str) -> float:
        return idf(fts.count_matching(f"{{text}} : {quote(word)}"), total)

    shares = own_keyword_shares(query, [c for c, _ in keyword], word_idf)
    scaled = [(c, bm25 * shares.get(c.id, 1.0)) for c, bm25 in keyword]
    scaled.sort(key=lambda pair: -pair[1])
    return [(c, s) for c, s in scaled if s > 0]


def fuse(
    semantic: list[tuple[str, float]],
    keyword: list[tuple[str, float]],
    ranking: RankingSettings,
    *,
    keyword_scale: float | None = None,
) -> dict[str, float]:
    """Combine the two ranked candidate lists (best first) into one score per chunk id. BM25 scores are
    divided by `keyword_scale` (default: the best one; see signals.keyword_scale) and capped at 1."""
    scores: dict[str, float] = {}
    if ranking.fusion == "rrf":
        for weight, ranked in ((ranking.semantic_weight, semantic), (ranking.keyword_weight, keyword)):
            for rank, (cid, _score) in enumerate(ranked):
                scores[cid] = scores.get(cid, 0.0) + weight / (ranking.rrf_k + rank + 1)
        return scores
    if ranking.fusion != "score":
        raise QueryError(f"ranking.fusion is {ranking.fusion!r}: use 'score' or 'rrf' in memory.yaml")
    if semantic:
        # Min-max over the pool; a span under MIN_COSINE_SPAN (a handful of candidates that say nearly the
        # same) is not stretched to 0..1, so a cosine difference of 0.01 stays a small difference.
        best, worst = semantic[0][1], semantic[-1][1]
        span = max(best - worst, MIN_COSINE_SPAN)
        for cid, sim in semantic:
            scores[cid] = scores.get(cid, 0.0) + ranking.semantic_weight * (sim - worst) / span
    if keyword:
        scale = max(keyword_scale if keyword_scale is not None else keyword[0][1], 1e-9)
        for cid, bm25 in keyword:
            scores[cid] = scores.get(cid, 0.0) + ranking.keyword_weight * min(max(bm25, 0.0) / scale, 1.0)
    return scores


def lend_to_neighbours(
    fts: FtsIndex, scores: dict[str, float], chunks: dict[str, Chunk], ranking: RankingSettings, q: Query
) -> None:
    """The best candidates lend a share of their score to the passages just before and after them."""
    if ranking.neighbour_weight <= 0 or not scores:
        return
    lenders = sorted(scores.items(), key=lambda item: -item[1])[: ranking.neighbour_sources]
    gains: dict[str, float] = {}
    around = fts.neighbours([cid for cid, _ in lenders])
    for cid, score in lenders:
        for other in around.get(cid, []):
            if other.layer not in q.layers or not _in_dates(other, q):
                continue
            chunks.setdefault(other.id, other)
            gains[other.id] = max(gains.get(other.id, 0.0), ranking.neighbour_weight * score)
    for cid, gain in gains.items():
        scores[cid] = scores.get(cid, 0.0) + gain


def _in_dates(chunk: Chunk, q: Query) -> bool:
    if q.after and not (chunk.date and chunk.date >= q.after):
        return False
    if q.before and not (chunk.date and chunk.date <= q.before):
        return False
    return True


def route_by_file(scores: dict[str, float], chunks: dict[str, Chunk], ranking: RankingSettings) -> None:
    """Lift every candidate by how well its whole file answers (the sum of the file's best few scores)."""
    if not scores or ranking.file_weight <= 0:
        return
    per_file: dict[str, list[float]] = {}
    for cid, score in scores.items():
        per_file.setdefault(chunks[cid].path, []).append(score)
    strength = {path: sum(sorted(v, reverse=True)[: max(1, ranking.file_top)]) for path, v in per_file.items()}
    best_file = max(strength.values()) or 1.0
    best = max(scores.values())
    for cid in scores:
        scores[cid] += ranking.file_weight * strength[chunks[cid].path] / best_file * best


def _where(layers: Sequence[str], after: str | None, before: str | None) -> dict[str, Any] | None:
    clauses: list[dict[str, Any]] = []
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


def _adjust(score: float, chunk: Chunk, ranking: RankingSettings, today: dt.date) -> float:
    bonus = {
        "topic": ranking.topic_bonus,
        "auto_memory": ranking.auto_memory_bonus,
        "session": ranking.session_bonus,
        "transcript": ranking.transcript_bonus,
    }
    if chunk.layer != "topic" and chunk.date and ranking.recency_weight:
        try:
            age = max(0, (today - dt.date.fromisoformat(chunk.date)).days)
        except ValueError:
            age = 0
        decay = math.pow(0.5, age / max(ranking.recency_half_life_days, 1e-6))
        score *= 1.0 - ranking.recency_weight + ranking.recency_weight * decay
    return score * (1.0 + bonus.get(chunk.layer, 0.0))


__all__ = ["search_exact", "search_hybrid", "fuse"]

"""The scoring and fusion stages of meaning-based search.

- scores: each retriever's candidates on one scale. A keyword match counts by the share of its matched
  words that are the chunk's own (not its title's or heading's), against the whole query's weight
  (signals.keyword_scale); cosines are stretched over the pool.
- fusion: one score per chunk, the weighted sum of the two signals (or reciprocal ranks), then the literal
  tier (the query as typed), the context score (query words in a title or heading), the assistant's
  lines weighed below the user's, and, when the query asks how the person wants things done, lines that
  state a standing wish weighed above the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory_server.errors import QueryError
from memory_server.index.fts import FtsIndex
from memory_server.parse.markdown import Chunk
from memory_server.search.candidates import Candidates
from memory_server.search.parsed import ParsedQuery, QueryTerms
from memory_server.search.signals import (
    asks_for_wishes,
    context_scores,
    is_assistant,
    keyword_scale,
    own_keyword_shares,
    states_a_wish,
)
from memory_server.settings import RankingSettings

MIN_COSINE_SPAN = 0.1


@dataclass(frozen=True)
class Scored:
    """The candidates of both retrievers, scored for fusion."""

    semantic: list[tuple[str, float]]  # (chunk id, cosine), best first
    keyword: list[tuple[Chunk, float]]  # (chunk, BM25 x the share of its own words), best first, none at 0
    keyword_scale: float  # what a BM25 score is divided by (signals.keyword_scale)


@dataclass(frozen=True)
class Ranked:
    """One score per candidate chunk, and the chunks (the stages after fusion adjust the scores)."""

    scores: dict[str, float]  # chunk id -> score, in the order candidates were first scored
    chunks: dict[str, Chunk]


def score_candidates(found: Candidates, parsed: ParsedQuery, ranking: RankingSettings) -> Scored:
    keyword = own_keyword_scores(found.keyword, parsed) if found.keyword else []
    scale = keyword_scale(keyword[0][1] if keyword else 0.0, parsed.idfs.values(), ranking.keyword_floor)
    return Scored([(cid, sim) for cid, sim, _vec in found.semantic], keyword, scale)


def own_keyword_scores(keyword: list[tuple[Chunk, float]], parsed: ParsedQuery) -> list[tuple[Chunk, float]]:
    """BM25 scores scaled to the share of the matched words that are the chunk's own (not its title's or
    heading's), best first; a chunk matched only through them is left out."""
    shares = own_keyword_shares(parsed.terms.stems, [c for c, _ in keyword], parsed.idfs.__getitem__)
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


def fuse_candidates(
    fts: FtsIndex, found: Candidates, scored: Scored, parsed: ParsedQuery, ranking: RankingSettings
) -> Ranked:
    """One score per chunk: the two signals fused, the literal tier on top of the keyword signal, context
    scores, and the assistant's lines weighed down. A candidate whose chunk is gone (a stale vector) drops."""
    fused = fuse(scored.semantic, [(c.id, s) for c, s in scored.keyword], ranking, keyword_scale=scored.keyword_scale)
    chunks = {chunk.id: chunk for chunk, _bm25 in scored.keyword + found.phrase}
    chunks.update((chunk.id, chunk) for chunk in found.context)
    ranked = with_phrase_tier(Ranked(fused, chunks), found.phrase, ranking)
    ranked = known_chunks(fts, ranked)
    if ranking.context_weight > 0 and ranking.keyword_weight > 0:
        ranked = with_context(ranked, found.context, parsed.terms, ranking)
    return weigh_wishes(weigh_speakers(ranked, ranking), parsed.terms.text, ranking)


def with_phrase_tier(ranked: Ranked, phrase: list[tuple[Chunk, float]], ranking: RankingSettings) -> Ranked:
    """The literal tier: a chunk holding the query as typed gains `phrase_bonus` on the keyword signal."""
    scores = dict(ranked.scores)
    for chunk, _bm25 in phrase:
        scores[chunk.id] = scores.get(chunk.id, 0.0) + ranking.keyword_weight * ranking.phrase_bonus
    return Ranked(scores, ranked.chunks)


def known_chunks(fts: FtsIndex, ranked: Ranked) -> Ranked:
    """Every scored candidate with its chunk (semantic ones are read from the index); a stale vector whose
    chunk is gone is dropped."""
    chunks = dict(ranked.chunks)
    chunks.update(fts.chunks_by_id([cid for cid in ranked.scores if cid not in chunks]))
    return Ranked({cid: s for cid, s in ranked.scores.items() if cid in chunks}, chunks)


def with_context(ranked: Ranked, context: list[Chunk], terms: QueryTerms, ranking: RankingSettings) -> Ranked:
    """Chunks under a title or heading holding query words that their text lacks gain a small, equal share."""
    scores = dict(ranked.scores)
    for chunk in context:
        scores.setdefault(chunk.id, 0.0)
    for cid, share in context_scores(terms.stems, [ranked.chunks[cid] for cid in scores]).items():
        scores[cid] += ranking.context_weight * ranking.keyword_weight * share
    return Ranked(scores, ranked.chunks)


def weigh_speakers(ranked: Ranked, ranking: RankingSettings) -> Ranked:
    """An assistant's line in a session weighs `assistant_weight` of a user's: what the user said is the record."""
    if ranking.assistant_weight == 1.0:
        return ranked
    return scaled(ranked, ranking.assistant_weight, is_assistant)


def weigh_wishes(ranked: Ranked, query: str, ranking: RankingSettings) -> Ranked:
    """When the query asks how the person wants things done, a line stating a standing wish ("Always ...")
    weighs 1 + `wish_weight`: it shares few words with the request it governs."""
    if ranking.wish_weight == 0 or not asks_for_wishes(query):
        return ranked
    return scaled(ranked, 1 + ranking.wish_weight, states_a_wish)


def scaled(ranked: Ranked, factor: float, applies: Callable[[Chunk], bool]) -> Ranked:
    """The candidates whose chunk `applies` to, their scores times `factor`; the others as they were."""
    scores = {cid: score * factor if applies(ranked.chunks[cid]) else score for cid, score in ranked.scores.items()}
    return Ranked(scores, ranked.chunks)

"""Ranked hits from the indices: literal search, and meaning-based search fused with the keyword signal.

Ranking (every weight is a setting in `ranking:`):
- fusion of the semantic and BM25 candidate lists (normalised scores, or reciprocal ranks);
- context: the passages next to a strong candidate gain a share of its score;
- session routing: candidates from the file that answers best rise together;
- precedence: a per-layer bonus, so on equal relevance a topic beats a session, a session a transcript;
- recency inside a layer: part of a session's score decays with its age (topics never decay);
- diversity: MMR against hits already chosen, a per-file quota, near-duplicates dropped.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from memory_server.errors import QueryError, VectorStoreError
from memory_server.index.embedder import Embedder
from memory_server.index.fts import FtsIndex
from memory_server.index.vectors import VectorIndex, date_number
from memory_server.parse.markdown import Chunk
from memory_server.search.exact import (
    KeywordHit,
    clean_query,
    content_terms,
    context_candidates,
    exact_search,
    keyword_candidates,
    normalise,
    phrase_candidates,
    quote,
    terms,
)
from memory_server.search.signals import context_scores, idf, is_assistant, keyword_scale, own_keyword_shares
from memory_server.settings import RankingSettings, SearchSettings

LAYERS = ("topic", "session", "transcript")
LAYER_RANK = {layer: i for i, layer in enumerate(LAYERS)}
DEFAULT_LAYERS = ("topic", "session")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
INDEX_FILE = "MEMORY.md"
MIN_COSINE_SPAN = 0.1


@dataclass
class Hit:
    """One search result, as the tools return it."""

    path: str
    start_line: int
    end_line: int
    layer: str
    title: str
    heading: str
    date: str | None
    score: float
    text: str
    match: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["match"] is None:
            del d["match"]
        d["score"] = round(self.score, 6)
        return d


@dataclass
class Query:
    """A validated search request."""

    text: str
    k: int
    layers: tuple[str, ...]
    after: str | None
    before: str | None


MAX_QUERY_CHARS = 10_000  # longer queries are refused: search time and memory grow with the query


def validate(
    query: str,
    k: int | None,
    layers: Sequence[str] | None,
    after: str | None,
    before: str | None,
    settings: SearchSettings,
    default_layers: Sequence[str] = DEFAULT_LAYERS,
) -> Query:
    if not isinstance(query, str):
        raise QueryError("query must be a string")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(
            f"query is {len(query):,} characters, over the {MAX_QUERY_CHARS:,}-character limit: search for a "
            "distinctive part of it (an error line, an identifier, a phrase)"
        )
    text = clean_query(query)
    if not text.strip():
        raise QueryError("query is empty: give the words or literal text to look for")
    if k is None:
        k = settings.default_k
    if isinstance(k, bool) or not isinstance(k, int):
        raise QueryError(f"k must be a whole number from 1 to {settings.max_k}")
    if k < 1 or k > settings.max_k:
        shown = k if abs(k) < 10**18 else "far out of range"  # Python will not print ints over 4,300 digits
        raise QueryError(f"k is {shown}: ask for 1 to {settings.max_k} hits, then read_memory for more context")
    if layers is not None and not isinstance(layers, (str, list, tuple, set, frozenset)):
        raise QueryError(f"layers must be a list of layer names (any of {', '.join(LAYERS)}), got {_show(layers)}")
    if layers is None or len(layers) == 0:
        chosen = tuple(default_layers)
    else:
        if isinstance(layers, str):
            layers = [layers]
        bad = [layer for layer in layers if layer not in LAYERS]
        if bad:
            raise QueryError(f"unknown layer {_show(bad[0])}: use any of {', '.join(LAYERS)}")
        chosen = tuple(dict.fromkeys(layers))
    for name, value in (("after", after), ("before", before)):
        if value is not None and (not isinstance(value, str) or not DATE.match(value) or not _valid_date(value)):
            raise QueryError(f"{name} must be a date like 2026-01-31, got {_show(value)}")
    if after and before and after > before:
        raise QueryError(f"after ({after}) is later than before ({before}): swap them")
    return Query(text, k, chosen, after or None, before or None)


def _show(value: Any, limit: int = 60) -> str:
    """A client's value for an error message: its repr, cut so a huge argument makes a short message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _valid_date(value: str) -> bool:
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def cut_text(text: str, needles: Sequence[str], limit: int) -> str:
    """The chunk text cut to `limit` characters, keeping the first match of `needles` in view."""
    if len(text) <= limit:
        return text
    lowered = text.casefold()
    pos = -1
    for needle in needles:
        if needle:
            pos = lowered.find(needle.casefold())
            if pos >= 0:
                break
    start = 0 if pos < limit // 2 else max(0, pos - limit // 3)
    end = min(len(text), start + limit)
    start = max(0, end - limit)
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")


def fit_budget(hits: list[Hit], needles: Sequence[str], settings: SearchSettings) -> list[Hit]:
    per_hit = max(120, min(settings.hit_chars, settings.budget_chars // max(1, len(hits))))
    for hit in hits:
        hit.text = cut_text(hit.text, needles, per_hit)
    return hits


def _hit(chunk: Chunk, score: float, match: str | None = None) -> Hit:
    return Hit(
        chunk.path, chunk.start_line, chunk.end_line, chunk.layer, chunk.title, chunk.heading, chunk.date,
        score, chunk.text, match,
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
) -> tuple[list[Hit], str]:
    """Meaning-based search fused with BM25. Returns (hits, mode) where mode says which signals answered.

    `vector_lookup` gives the stored vectors of keyword-only candidates, so diversity treats them alike."""
    pool = max(search.candidate_pool, q.k * 3)
    keyword = keyword_candidates(fts, q.text, pool, q.layers, q.after, q.before) if ranking.keyword_weight else []
    semantic: list[tuple[str, float, np.ndarray | None]] = []
    mode = "keyword"
    semantic_layers = [layer for layer in q.layers if layer != "transcript"]  # transcripts are never embedded
    if vectors is not None and embedder is not None and ranking.semantic_weight and semantic_layers:
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
    if semantic and vector_lookup is not None and ranking.mmr_weight:
        vecs.update(vector_lookup([chunks[cid] for cid in scores if cid not in vecs]))
    today = today or dt.date.today()
    ranked = [(_adjust(score, chunks[cid], ranking, today), chunks[cid]) for cid, score in scores.items()]
    chosen = _diversify(ranked, vecs, q.k, ranking)
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
    if set(layers) != {"topic", "session"}:
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
    bonus = {"topic": ranking.topic_bonus, "session": ranking.session_bonus, "transcript": ranking.transcript_bonus}
    if chunk.layer != "topic" and chunk.date and ranking.recency_weight:
        try:
            age = max(0, (today - dt.date.fromisoformat(chunk.date)).days)
        except ValueError:
            age = 0
        decay = math.pow(0.5, age / max(ranking.recency_half_life_days, 1e-6))
        score *= 1.0 - ranking.recency_weight + ranking.recency_weight * decay
    return score * (1.0 + bonus.get(chunk.layer, 0.0))


def _diversify(
    ranked: list[tuple[float, Chunk]], vecs: dict[str, np.ndarray | None], k: int, ranking: RankingSettings
) -> list[tuple[float, Chunk]]:
    """Greedy maximal-marginal-relevance pick: a candidate loses `mmr_weight` x best score x its cosine to
    the closest hit already chosen (so near-repeats of one fact give way to other relevant passages);
    once a file has its quota of hits, its further hits are damped by `same_file_penalty` (one file does not
    fill the answer while other files are relevant); near-duplicates are dropped."""
    ranked.sort(key=lambda sc: (-sc[0], LAYER_RANK.get(sc[1].layer, 9), sc[1].path, sc[1].start_line))
    remaining = ranked[: max(k * 5, 50)]
    top = remaining[0][0] if remaining else 0.0
    chosen: list[tuple[float, Chunk]] = []
    per_file: dict[str, int] = {}
    seen_text: set[str] = set()
    chosen_vecs: list[np.ndarray] = []
    closest: dict[str, float] = {}  # candidate id -> highest cosine to any chosen hit
    quota = max(ranking.file_quota, math.ceil(k * ranking.file_share))
    while remaining and len(chosen) < k:
        best_i, best_eff = -1, -math.inf
        for i, (score, chunk) in enumerate(remaining):
            eff = score * (ranking.same_file_penalty if per_file.get(chunk.path, 0) >= quota else 1.0)
            eff -= ranking.mmr_weight * top * closest.get(chunk.id, 0.0)
            if eff > best_eff:
                best_i, best_eff = i, eff
        score, chunk = remaining.pop(best_i)
        key = normalise(chunk.text)
        vec = vecs.get(chunk.id)
        nearest = closest.get(chunk.id, 0.0)
        if ranking.duplicate_similarity <= 1.0 and (key in seen_text or nearest > ranking.duplicate_similarity):
            continue
        seen_text.add(key)
        per_file[chunk.path] = per_file.get(chunk.path, 0) + 1
        chosen.append((score, chunk))
        if vec is not None:
            chosen_vecs.append(vec)
            for _s, other in remaining:
                ov = vecs.get(other.id)
                if ov is not None:
                    closest[other.id] = max(closest.get(other.id, 0.0), float(ov @ vec))
    return chosen


__all__ = ["Hit", "Query", "validate", "search_exact", "search_hybrid", "VectorStoreError", "LAYERS"]

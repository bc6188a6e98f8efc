"""Ranked hits from the indices: literal search, and meaning-based search fused with the keyword signal.

Ranking (every weight is a setting in `ranking:`):
- reciprocal-rank fusion of the semantic and BM25 candidate lists;
- precedence: a per-layer bonus, so on equal relevance a topic beats a session, a session a transcript;
- recency inside a layer: part of a session's score decays with its age (topics never decay);
- diversity: each further hit from a file already chosen is damped, near-duplicates are dropped.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from .embedder import Embedder
from .errors import QueryError, VectorStoreError
from .fts import FtsIndex
from .keyword import clean_query, exact_search, keyword_candidates, normalise, terms
from .markdown import Chunk
from .settings import RankingSettings, SearchSettings
from .vectors import VectorIndex, date_number

LAYERS = ("topic", "session", "transcript")
LAYER_RANK = {layer: i for i, layer in enumerate(LAYERS)}
DEFAULT_LAYERS = ("topic", "session")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


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
    text = clean_query(query)
    if not text.strip():
        raise QueryError("query is empty: give the words or literal text to look for")
    if k is None:
        k = settings.default_k
    if isinstance(k, bool) or not isinstance(k, int):
        raise QueryError(f"k must be a whole number from 1 to {settings.max_k}")
    if k < 1 or k > settings.max_k:
        raise QueryError(f"k is {k}: ask for 1 to {settings.max_k} hits, then read_memory for more context")
    if layers is None or len(layers) == 0:
        chosen = tuple(default_layers)
    else:
        if isinstance(layers, str):
            layers = [layers]
        bad = [layer for layer in layers if layer not in LAYERS]
        if bad:
            raise QueryError(f"unknown layer {bad[0]!r}: use any of {', '.join(LAYERS)}")
        chosen = tuple(dict.fromkeys(layers))
    for name, value in (("after", after), ("before", before)):
        if value is not None and (not isinstance(value, str) or not DATE.match(value) or not _valid_date(value)):
            raise QueryError(f"{name} must be a date like 2026-01-31, got {value!r}")
    if after and before and after > before:
        raise QueryError(f"after ({after}) is later than before ({before}): swap them")
    return Query(text, k, chosen, after or None, before or None)


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


def search_exact(fts: FtsIndex, q: Query, settings: SearchSettings) -> list[Hit]:
    """Literal-first keyword search (see keyword.py), ties to the higher layer."""
    found = exact_search(fts, q.text, q.k, q.layers, q.after, q.before)
    tier = {"phrase": 0, "substring": 0, "all_terms": 1, "any_terms": 2}
    found.sort(key=lambda h: (tier[h.match], -round(h.score, 6), LAYER_RANK[h.chunk.layer]))
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
) -> tuple[list[Hit], str]:
    """Meaning-based search fused with BM25. Returns (hits, mode) where mode says which signals answered."""
    pool = max(search.candidate_pool, q.k * 3)
    keyword = keyword_candidates(fts, q.text, pool, q.layers, q.after, q.before) if ranking.keyword_weight else []
    semantic: list[tuple[str, float, np.ndarray | None]] = []
    mode = "keyword"
    semantic_layers = [layer for layer in q.layers if layer != "transcript"]  # transcripts are never embedded
    if vectors is not None and embedder is not None and ranking.semantic_weight and semantic_layers:
        qvec = embedder.embed([q.text])[0]
        semantic = vectors.query(qvec, pool, _where(semantic_layers, q.after, q.before))
        mode = "hybrid" if ranking.keyword_weight else "semantic"
    scores: dict[str, float] = {}
    vecs: dict[str, np.ndarray | None] = {}
    for rank, (cid, _sim, vec) in enumerate(semantic):
        scores[cid] = scores.get(cid, 0.0) + ranking.semantic_weight / (ranking.rrf_k + rank + 1)
        vecs[cid] = vec
    chunks: dict[str, Chunk] = {}
    for rank, (chunk, _bm25) in enumerate(keyword):
        scores[chunk.id] = scores.get(chunk.id, 0.0) + ranking.keyword_weight / (ranking.rrf_k + rank + 1)
        chunks[chunk.id] = chunk
    missing = [cid for cid in scores if cid not in chunks]
    chunks.update(fts.chunks_by_id(missing))  # vectors whose chunk is gone (a stale entry) drop out here
    today = today or dt.date.today()
    ranked = []
    for cid, score in scores.items():
        chunk = chunks.get(cid)
        if chunk is None:
            continue
        ranked.append((_adjust(score, chunk, ranking, today), chunk))
    chosen = _diversify(ranked, vecs, q.k, ranking)
    hits = [_hit(chunk, score) for score, chunk in chosen]
    return fit_budget(hits, terms(q.text), search), mode


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
    return score + bonus.get(chunk.layer, 0.0)


def _diversify(
    ranked: list[tuple[float, Chunk]], vecs: dict[str, np.ndarray | None], k: int, ranking: RankingSettings
) -> list[tuple[float, Chunk]]:
    """Greedy pick: damp further hits from a chosen file, drop near-duplicates of a chosen hit."""
    ranked.sort(key=lambda sc: (-sc[0], LAYER_RANK.get(sc[1].layer, 9), sc[1].path, sc[1].start_line))
    chosen: list[tuple[float, Chunk]] = []
    per_file: dict[str, int] = {}
    seen_text: set[str] = set()
    chosen_vecs: list[np.ndarray] = []
    remaining = ranked
    while remaining and len(chosen) < k:
        best_i, best_score = -1, -math.inf
        for i, (score, chunk) in enumerate(remaining):
            eff = score * ranking.same_file_penalty ** per_file.get(chunk.path, 0)
            if eff > best_score:
                best_i, best_score = i, eff
        score, chunk = remaining.pop(best_i)
        key = normalise(chunk.text)
        vec = vecs.get(chunk.id)
        if (ranking.duplicate_similarity <= 1.0 and key in seen_text) or (
            vec is not None and chosen_vecs and max(float(v @ vec) for v in chosen_vecs) > ranking.duplicate_similarity
        ):
            continue
        seen_text.add(key)
        if vec is not None:
            chosen_vecs.append(vec)
        per_file[chunk.path] = per_file.get(chunk.path, 0) + 1
        chosen.append((best_score, chunk))
    return chosen


__all__ = ["Hit", "Query", "validate", "search_exact", "search_hybrid", "VectorStoreError", "LAYERS"]

"""Ranked hits from the indices: literal search, and meaning-based search as a sequence of stages.

`search_hybrid` runs the stages in order, each a function with a typed input and output (every weight is a
setting in `ranking:`):

1. parse (parsed.py): the query's words, content words, stems and IDFs, computed once;
2. candidates (candidates.py): keyword (BM25), phrase (the query as typed), context (titles and headings)
   and semantic (embedding) candidates;
3. scores and fusion (fusion.py): each signal on one scale, then one score per chunk: the signals fused
   (normalised scores, or reciprocal ranks), the literal tier, context scores, the assistant's lines weighed down;
4. pointers, neighbours and files (pointers.py, routing.py): a MEMORY.md line pointing to a topic lends its
   score to that topic's candidates and leaves; the passages next to a strong candidate gain a share of its
   score; candidates from the file that answers best rise together;
5. rerank (late.py): the best candidates reranked token by token against the question (late interaction);
6. precedence and recency (precedence.py): a per-layer bonus (topics, then Claude Code's auto memory, sessions,
   transcripts); part of a session's score decays with its age;
7. diversity (diversity.py): MMR against hits already chosen, a per-file quota, near-duplicates dropped;
   never sized by k, so the first n hits of a larger answer are the answer for n;
8. budget (query.fit_budget): each hit's text cut around its first match.

`search_exact` answers in literal tiers instead (exact.py).
"""

from __future__ import annotations

import datetime as dt

from memory_server.index.embedder import Embedder
from memory_server.index.fts import FtsIndex
from memory_server.index.vectors import VectorIndex
from memory_server.search.candidates import find_candidates
from memory_server.search.diversity import VectorLookup, candidate_vectors, diversify, window
from memory_server.search.exact import KeywordHit, exact_search
from memory_server.search.fusion import fuse_candidates, score_candidates
from memory_server.search.late import TokenLookup, rerank
from memory_server.search.parsed import parse, query_terms
from memory_server.search.pointers import route_pointers
from memory_server.search.precedence import weigh_precedence
from memory_server.search.query import LAYER_RANK, Hit, Mode, Query, fit_budget, hit_of
from memory_server.search.routing import lend_to_neighbours, route_by_file
from memory_server.search.signals import is_assistant
from memory_server.settings import RankingSettings, SearchSettings

INDEX_FILE = "MEMORY.md"
TIER = {"phrase": 0, "substring": 0, "all_terms": 1, "any_terms": 2}


def search_exact(
    fts: FtsIndex, q: Query, settings: SearchSettings, ranking: RankingSettings | None = None
) -> list[Hit]:
    """Literal-first keyword search (see exact.py), ties to the higher layer. Inside a tier, the index
    file (MEMORY.md: titles and links) comes after the content it points to, and below the literal tier
    the assistant's lines in sessions weigh `ranking.assistant_weight` of the user's."""
    terms = query_terms(q.text)
    found = exact_search(fts, terms, q.k, q.layers, q.after, q.before)
    speaker = ranking.assistant_weight if ranking is not None else 1.0

    def weighed(h: KeywordHit) -> float:
        return h.score * speaker if TIER[h.match] and is_assistant(h.chunk) else h.score

    found.sort(
        key=lambda h: (TIER[h.match], h.chunk.path == INDEX_FILE, -round(weighed(h), 6), LAYER_RANK[h.chunk.layer])
    )
    hits = [hit_of(h.chunk, h.score, h.match) for h in found]
    return fit_budget(hits, [terms.wanted, *terms.words], settings)


def search_hybrid(
    fts: FtsIndex,
    vectors: VectorIndex | None,
    embedder: Embedder | None,
    q: Query,
    search: SearchSettings,
    ranking: RankingSettings,
    *,
    today: dt.date | None = None,
    vector_lookup: VectorLookup | None = None,
    token_lookup: TokenLookup | None = None,
) -> tuple[list[Hit], Mode]:
    """Meaning-based search fused with BM25, stage by stage (see the module docstring). Returns (hits, mode)
    where mode says which signals answered.

    `vector_lookup` gives the stored vectors of keyword-only candidates, so diversity treats them alike;
    `token_lookup` the stored token vectors of candidates, for late-interaction reranking (late.py)."""
    parsed = parse(fts, q.text, keyword=ranking.keyword_weight > 0)
    late = token_lookup is not None and ranking.late_weight > 0
    found = find_candidates(fts, vectors, embedder, q, parsed, search, ranking, tokens=late)
    ranked = fuse_candidates(fts, found, score_candidates(found, parsed, ranking), parsed, ranking)
    ranked = route_by_file(lend_to_neighbours(fts, route_pointers(ranked, ranking), ranking, q), ranking)
    ranked = rerank(ranked, found.query_tokens, token_lookup, ranking)
    vecs = candidate_vectors(found, ranked, vector_lookup, ranking)
    precedence = weigh_precedence(ranked, ranking, today or dt.date.today())
    chosen = diversify(precedence, vecs, q.k, ranking, window(search.max_k))
    hits = [hit_of(chunk, score) for score, chunk in chosen]
    return fit_budget(hits, parsed.terms.words, search), found.mode


__all__ = ["search_exact", "search_hybrid"]

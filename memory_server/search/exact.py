"""Keyword retrieval over FTS5, with every user string treated as literal text: the tokens, the MATCH queries
built from them, and `search_exact`'s literal tiers.

A query is never passed to FTS5 as syntax. It is cut into the same tokens FTS5's unicode61 tokenizer
makes, each token is quoted, and the MATCH expression is built from those: so `"`, `(`, `*`, `-`, `:`,
`AND`, `NEAR`, dots and unicode are all just text. `search_exact` then answers in tiers:

1. phrase: the chunk contains the query itself (case-insensitive, whitespace-normalised);
2. all_terms: every term occurs, not necessarily together;
3. any_terms: some terms occur (stop words dropped), ranked by BM25.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from memory_server.index.fts import CHUNK_COLUMNS, FtsIndex, row_to_chunk
from memory_server.parse.markdown import Chunk
from memory_server.parse.text import STOP_WORDS

if TYPE_CHECKING:
    from memory_server.search.parsed import QueryTerms

TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# Scripts written without spaces: unicode61 makes one token of a whole run, so a word inside it can only
# be found by a substring scan.
UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f\uf900-\ufaff]")
SPACE = re.compile(r"\s+")
MAX_TERMS = 64  # a 100 KB query still makes a bounded MATCH expression

BM25_WEIGHTS = (1.0, 0.5, 0.3)  # text, heading, title
# In an index this large, a word found in more than COMMON_SHARE of the chunks (and in at least COMMON_ROWS)
# is left out of OR queries when rarer words remain; smaller indices are never affected.
COMMON_ROWS = 2000
COMMON_SHARE = 0.05


Match = Literal["phrase", "substring", "all_terms", "any_terms"]  # which literal tier found a hit


@dataclass(frozen=True)
class KeywordHit:
    chunk: Chunk
    score: float  # BM25, higher is better
    match: Match


def clean_query(query: str) -> str:
    """Make any Python str safe to bind: lone surrogates and NUL become spaces."""
    return query.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ")


def terms(query: str) -> list[str]:
    return TOKEN.findall(query)


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def normalise(text: str) -> str:
    return SPACE.sub(" ", text).strip().casefold()


def _filters(layers: Sequence[str] | None, after: str | None, before: str | None) -> tuple[str, list[str]]:
    sql = ""
    args: list[str] = []
    if layers:
        sql += f" AND c.layer IN ({','.join('?' * len(layers))})"
        args.extend(layers)
    if after:
        sql += " AND c.date >= ?"
        args.append(after)
    if before:
        sql += " AND c.date <= ?"
        args.append(before)
    return sql, args


def match(
    fts: FtsIndex,
    expression: str,
    limit: int,
    layers: Sequence[str] | None = None,
    after: str | None = None,
    before: str | None = None,
) -> list[tuple[Chunk, float]]:
    """Run an FTS5 MATCH expression built by this module; (chunk, bm25 score higher-is-better) pairs."""
    w = ", ".join(str(x) for x in BM25_WEIGHTS)
    if after is None and before is None and (layers is None or fts.layers_present() <= set(layers)):
        # No filter to apply: rank inside FTS5 first and read only the chunks that made the cut
        # (about twice as fast on common words in a large index).
        sql = (
            f"SELECT {CHUNK_COLUMNS}, f.rank FROM (SELECT rowid, bm25(chunks_fts, {w}) AS rank FROM chunks_fts "
            "WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?) f JOIN chunks c ON c.rowid = f.rowid ORDER BY f.rank"
        )
        rows = fts.conn().execute(sql, [expression, limit]).fetchall()
    else:
        where, args = _filters(layers, after, before)
        sql = (
            f"SELECT {CHUNK_COLUMNS}, bm25(chunks_fts, {w}) AS rank FROM chunks_fts "
            f"JOIN chunks c ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ? {where} "
            "ORDER BY rank LIMIT ?"
        )
        rows = fts.conn().execute(sql, [expression, *args, limit]).fetchall()
    return [(row_to_chunk(r), -float(r[9])) for r in rows]


def any_terms(fts: FtsIndex, content: Sequence[str]) -> list[str]:
    """The content words (case folded, at most MAX_TERMS) an any-of-them query uses. In a large index, words
    so common that ranking every chunk holding them costs more than their low weight is worth are left out,
    while rarer ones remain (and words found nowhere, while some are found)."""
    unique = list(content[:MAX_TERMS])
    if len(unique) > 1:
        limit = max(COMMON_ROWS, int(fts.chunk_count() * COMMON_SHARE))
        counts = {t: fts.count_matching(quote(t)) for t in unique}
        found = [t for t in unique if counts[t] > 0]
        unique = [t for t in found if counts[t] <= limit] or found or unique
    return unique


def any_terms_expression(fts: FtsIndex, content: Sequence[str]) -> str | None:
    """`"a" OR "b" ...` over `any_terms`, or None when there is no word."""
    unique = any_terms(fts, content)
    return " OR ".join(quote(t) for t in unique) if unique else None


def phrase_matches(
    fts: FtsIndex,
    words: Sequence[str],
    wanted: str,
    limit: int,
    layers: Sequence[str] | None,
    after: str | None,
    before: str | None,
) -> list[tuple[Chunk, float]]:
    """Chunks whose text holds `wanted` (the query as typed, case and spacing aside), through an FTS5 phrase
    query over its `words`: FTS5's phrase query ignores punctuation between tokens, so the text is checked."""
    found = match(fts, quote(" ".join(words)), limit, layers, after, before)
    return [(chunk, score) for chunk, score in found if wanted in normalise(chunk.text)]


def content_terms(query: str) -> list[str]:
    """The query's words without stop words and single characters (all of them if nothing else is left)."""
    words = terms(query)
    return [t for t in words if t.casefold() not in STOP_WORDS and len(t) > 1] or words


class _Tiers:
    """Hits taken tier by tier, each chunk once, up to `k`."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.hits: list[KeywordHit] = []
        self.seen: set[str] = set()

    @property
    def wants_more(self) -> bool:
        return len(self.hits) < self.k

    def take(self, pairs: list[tuple[Chunk, float]], kind: Match) -> None:
        for chunk, score in pairs:
            if len(self.hits) >= self.k or chunk.id in self.seen:
                continue
            self.seen.add(chunk.id)
            self.hits.append(KeywordHit(chunk, score, kind))


def exact_search(
    fts: FtsIndex,
    query: QueryTerms,
    k: int,
    layers: Sequence[str] | None = None,
    after: str | None = None,
    before: str | None = None,
) -> list[KeywordHit]:
    """Literal-first keyword search: phrase matches, then all-terms, then any-terms, best BM25 first."""
    if not query.wanted:
        return []
    found = _Tiers(k)
    if not query.phrase_words:
        found.take(_substring_scan(fts, query.wanted, k, layers, after, before), "substring")
        return found.hits
    pool = max(k * 4, 50)
    found.take(phrase_matches(fts, query.phrase_words, query.wanted, pool * 4, layers, after, before), "phrase")
    if found.wants_more and UNSPACED.search(query.text):
        found.take(_substring_scan(fts, query.wanted, k, layers, after, before), "substring")
    # "All terms" means all content words: requiring "what", "is", "my" as well ranks long chunks that happen
    # to hold every common word above the short one that holds the answer.
    content = query.content[:MAX_TERMS]
    if found.wants_more and len(content) > 1:
        found.take(match(fts, " AND ".join(quote(t) for t in content), pool, layers, after, before), "all_terms")
    if found.wants_more:
        expression = any_terms_expression(fts, query.content)
        if expression:
            found.take(match(fts, expression, pool, layers, after, before), "any_terms")
    return found.hits


def _substring_scan(
    fts: FtsIndex, wanted: str, k: int, layers: Sequence[str] | None, after: str | None, before: str | None
) -> list[tuple[Chunk, float]]:
    # Queries made only of punctuation ("->", "::") have no tokens for FTS5: scan the text instead.
    where, args = _filters(layers, after, before)
    sql = f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE instr(lower(c.text), ?) > 0 {where} LIMIT ?"
    try:
        rows = fts.conn().execute(sql, [wanted, *args, k]).fetchall()
    except sqlite3.Error:
        return []
    return [(row_to_chunk(r), 0.0) for r in rows]

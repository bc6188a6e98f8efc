"""A query parsed once, for every stage of a search: its words, content words and their stems (no index
needed: `query_terms`), and for meaning-based search what the index says of those words (`parse`): each
content word's IDF in the chunks' own text, and the words an any-of-them query uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memory_server.index.fts import FtsIndex
from memory_server.search.exact import MAX_TERMS, any_terms, clean_query, content_terms, normalise, quote, terms

PREFIX = 5  # words compared by their first letters: "printers" finds "printer", "tension" "tensioned"


def idf(matching: int, chunk_count: int) -> float:
    """FTS5's BM25 IDF of a word found in `matching` of `chunk_count` chunks (a word found nowhere weighs
    most: the query asks for something the index may hold in other words)."""
    return max(math.log((chunk_count - matching + 0.5) / (matching + 0.5)), 1e-6)


def stem(word: str) -> str:
    return word.casefold()[:PREFIX]


@dataclass(frozen=True)
class QueryTerms:
    """A query's words, each way a stage reads them."""

    text: str  # the query as typed (made safe to bind: no lone surrogates, no NUL)
    wanted: str  # the query as a literal phrase: spacing collapsed, case folded
    words: tuple[str, ...]  # every token, as FTS5's tokenizer cuts them
    content: tuple[str, ...]  # the distinct content words, case folded, in order (stop words out)
    stems: dict[str, str]  # stem of each content word -> the (last) content word with that stem

    @property
    def phrase_words(self) -> tuple[str, ...]:
        """The tokens of a literal phrase query (bounded, whatever the query's length)."""
        return self.words[:MAX_TERMS]


def query_terms(text: str) -> QueryTerms:
    """Parse `text` (a checked query, see query.validate) into its words; no index is read."""
    text = clean_query(text)
    content = content_terms(text)
    return QueryTerms(
        text=text,
        wanted=normalise(text),
        words=tuple(terms(text)),
        content=tuple(dict.fromkeys(t.casefold() for t in content)),
        stems={stem(t): t.casefold() for t in content},
    )


@dataclass(frozen=True)
class ParsedQuery:
    """A query's words, and what the index says of them."""

    terms: QueryTerms
    idfs: dict[str, float]  # content word -> its IDF in the chunks' own text
    any_terms: tuple[str, ...]  # the content words an any-of-them query uses (see exact.any_terms)

    @property
    def expression(self) -> str | None:
        """`"a" OR "b" ...` over `any_terms`, or None when the query has no word."""
        return " OR ".join(quote(t) for t in self.any_terms) if self.any_terms else None


def parse(fts: FtsIndex, text: str, *, keyword: bool = True) -> ParsedQuery:
    """The query's words, their IDFs, and (with `keyword`: the keyword side runs) its any-of-them words."""
    parsed = query_terms(text)
    total = fts.chunk_count()
    idfs = {word: idf(fts.count_matching(f"{{text}} : {quote(word)}"), total) for word in parsed.content}
    return ParsedQuery(parsed, idfs, tuple(any_terms(fts, parsed.content)) if keyword else ())

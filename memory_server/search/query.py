"""A search request and its answer's shape: the checked query, the hit, and cutting hits' text to a budget.

`validate` turns a client's arguments into a `Query` or raises QueryError with what to fix; `fit_budget` cuts
each hit's text around its first match so a default answer stays near 1,500 tokens.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal, TypeGuard

from memory_server.errors import QueryError
from memory_server.files.root import LAYERS, Layer
from memory_server.parse.markdown import Chunk
from memory_server.search.exact import Match, clean_query
from memory_server.settings import SearchSettings

LAYER_RANK = {layer: i for i, layer in enumerate(LAYERS)}
DEFAULT_LAYERS: tuple[Layer, ...] = ("topic", "auto_memory", "session")
EMBEDDED_LAYERS: frozenset[Layer] = frozenset(DEFAULT_LAYERS)  # transcripts are keyword-only
# Which signals answered a search_memory: "partial" is hybrid (or semantic) while some files still wait for
# their vectors (those are found by keywords only so far); "keyword" when the semantic side had nothing to give.
Mode = Literal["hybrid", "keyword", "semantic", "partial"]
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass
class Hit:
    """One search result, as the tools return it."""

    path: str
    start_line: int
    end_line: int
    layer: Layer
    title: str
    heading: str
    date: str | None
    score: float
    text: str
    match: Match | None = None

    def to_dict(self) -> dict[str, object]:
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
    layers: tuple[Layer, ...]
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
    default_layers: Sequence[Layer] = DEFAULT_LAYERS,
) -> Query:
    """A client's search arguments as a Query, or QueryError saying what to fix."""
    text = _checked_text(query)
    count = _checked_k(k, settings)
    chosen = _checked_layers(layers) or tuple(default_layers)
    for name, value in (("after", after), ("before", before)):
        if value is not None and (not isinstance(value, str) or not DATE.match(value) or not _valid_date(value)):
            raise QueryError(f"{name} must be a date like 2026-01-31, got {_show(value)}")
    if after and before and after > before:
        raise QueryError(f"after ({after}) is later than before ({before}): swap them")
    return Query(text, count, chosen, after or None, before or None)


def _checked_text(query: object) -> str:
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
    return text


def _checked_k(k: object, settings: SearchSettings) -> int:
    if k is None:
        return settings.default_k
    if isinstance(k, bool) or not isinstance(k, int):
        raise QueryError(f"k must be a whole number from 1 to {settings.max_k}")
    if k < 1 or k > settings.max_k:
        shown = k if abs(k) < 10**18 else "far out of range"  # Python will not print ints over 4,300 digits
        raise QueryError(f"k is {shown}: ask for 1 to {settings.max_k} hits, then read_memory for more context")
    return k


def _checked_layers(layers: object) -> tuple[Layer, ...]:
    """The layers asked for, each once, in order (empty: none asked for)."""
    if layers is None:
        return ()
    if not isinstance(layers, (str, list, tuple, set, frozenset)):
        raise QueryError(f"layers must be a list of layer names (any of {', '.join(LAYERS)}), got {_show(layers)}")
    if len(layers) == 0:
        return ()
    names = [layers] if isinstance(layers, str) else list(layers)
    bad = [layer for layer in names if layer not in LAYERS]
    if bad:
        raise QueryError(f"unknown layer {_show(bad[0])}: use any of {', '.join(LAYERS)}")
    return tuple(dict.fromkeys(layer for layer in names if is_layer(layer)))


def is_layer(name: object) -> TypeGuard[Layer]:
    return name in LAYERS


def _show(value: object, limit: int = 60) -> str:
    """A client's value for an error message: its repr, cut so a huge argument makes a short message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _valid_date(value: str) -> bool:
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def hit_of(chunk: Chunk, score: float, match: Match | None = None) -> Hit:
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


WORD_SLACK = 24  # characters an excerpt's edge may move to fall between words


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
    start, end = _word_edges(text, start, end, pos)
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")


def _word_edges(text: str, start: int, end: int, keep: int) -> tuple[int, int]:
    """`start` and `end` moved off the middle of a word (to the next or previous space, within WORD_SLACK
    characters, never past `keep`, the match kept in view): "…rs (one per" reads as "…(one per"."""
    if 0 < start < len(text) and not text[start - 1].isspace():
        space = text.find(" ", start, start + WORD_SLACK)
        if space >= 0 and (keep < 0 or space < keep):
            start = space + 1
    if 0 < end < len(text) and not text[end].isspace():
        space = text.rfind(" ", max(start, end - WORD_SLACK), end)
        if space > start:
            end = space
    return start, end


def fit_budget(hits: list[Hit], needles: Sequence[str], settings: SearchSettings) -> list[Hit]:
    per_hit = max(120, min(settings.hit_chars, settings.budget_chars // max(1, len(hits))))
    for hit in hits:
        hit.text = cut_text(hit.text, needles, per_hit)
    return hits

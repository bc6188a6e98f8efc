"""What the embedder is shown for a chunk (the embedding recipe).

A chunk is embedded under its context: the file's title, the heading path and the date, then its own text.
The context says what a line is about ("the staging database" under "Upgrade PostgreSQL") and when it was
said. Measured with the semantic signal alone, context first for every chunk of 4+ words beats context
only for chunks of 8+ words (LoCoMo conversation 0 turn R@5 0.473 -> 0.522, coding-probe paraphrase
R@1 0.325 -> 0.425) and context after the text (0.463; 0.40).
A chunk with fewer than MIN_WORDS_FOR_CONTEXT words of its own is embedded alone: a one-line status badge
(`![Accepted](...)`) or a `Date:` line would otherwise be embedded as little more than the title, and so
match every question about the file better than the paragraph that answers it.
Markup that is not meaning is dropped: emphasis markers, link and image targets (their words stay).

Bump EMBED_RECIPE whenever embed_text() changes: the indexer then re-embeds every chunk (the cache keys
on the exact text, so the old vectors are simply not found).
"""

from __future__ import annotations

import re
from itertools import islice

from memory_server.parse.markdown import Chunk

EMBED_RECIPE = "4"
#: Below this many words of its own (two letters or more; numbers do not count), a chunk is embedded
#: without its title and heading.
MIN_WORDS_FOR_CONTEXT = 4

EMPHASIS = re.compile(r"\*\*|__")
LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")  # [words](target) and ![alt](src) -> their words
WORD = re.compile(r"[^\W\d_]{2,}")


def clean_body(text: str) -> str:
    """The chunk's text without markup the model would only read as noise."""
    return EMPHASIS.sub("", LINK.sub(r"\1", text))


def embed_text(chunk: Chunk) -> str:
    body = clean_body(chunk.text)
    if sum(1 for _ in islice(WORD.finditer(body), MIN_WORDS_FOR_CONTEXT)) < MIN_WORDS_FOR_CONTEXT:
        return body
    context = " > ".join(p for p in (chunk.title, chunk.heading) if p)
    if chunk.date:
        context = f"{context} ({chunk.date})"
    return f"{context}\n{body}" if context else body

"""What the embedder is shown for a chunk (the embedding recipe).

The chunk's own text comes first and carries the meaning; its context (the file's title and the heading
path) is added only when the text is long enough to outweigh it. A one-line status badge
(`![Accepted](...)`), a `Date:` line or a "Thanks!" would otherwise be embedded as little more than the
title, and so match every question about the file better than the paragraph that answers it.
Markup that is not meaning is dropped: emphasis markers, link and image targets (their words stay).

Bump EMBED_RECIPE whenever embed_text() changes: the indexer then re-embeds every chunk (the cache keys
on the exact text, so the old vectors are simply not found).
"""

from __future__ import annotations

import re

from memory_server.parse.markdown import Chunk

EMBED_RECIPE = "3"
#: Below this many words of its own, a chunk is embedded without its title and heading.
MIN_WORDS_FOR_CONTEXT = 8

EMPHASIS = re.compile(r"\*\*|__")
LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")  # [words](target) and ![alt](src) -> their words
WORD = re.compile(r"[^\W_]+")


def clean_body(text: str) -> str:
    """The chunk's text without markup the model would only read as noise."""
    return EMPHASIS.sub("", LINK.sub(r"\1", text))


def embed_text(chunk: Chunk) -> str:
    body = clean_body(chunk.text)
    if len(WORD.findall(body)) < MIN_WORDS_FOR_CONTEXT:
        return body
    context = " > ".join(p for p in (chunk.title, chunk.heading) if p)
    if chunk.date:
        context = f"{context} ({chunk.date})"
    return f"{context}\n{body}" if context else body

"""Pointer lines route, they do not answer: a line of MEMORY.md that points to a topic ("- [Printer](topics/
printer.md): the Voron printer") says which topic holds the answer, not what it is. Its match is lent to that
topic's candidate passages, and the line itself leaves the candidates; a line whose topic is not among them
lends to nothing (its topic matched the question in no way the retrievers saw) and leaves all the same."""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

from memory_server.files.root import MEMORY_INDEX, TOPICS_DIR
from memory_server.parse.markdown import Chunk
from memory_server.search.fusion import Ranked
from memory_server.settings import RankingSettings

ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\S")  # a list item: `- x`, `* x`, `1. x`
# An inline link to a Markdown file: `](topics/x.md)`, `](./topics/x.md "tip")`, `](<topics/x y.md>)`.
LINK = re.compile(r"\]\([ \t]*(?:<([^<>\n]+\.md)>|([^()<>\s]+\.md))")


def pointer_target(chunk: Chunk) -> str | None:
    """The topic file a MEMORY.md pointer line links to (root-relative, under topics/), or None when the chunk is
    not such a line: one list item on one line whose first link to a Markdown file is a topic's."""
    if chunk.path != MEMORY_INDEX or "\n" in chunk.text.strip() or not ITEM.match(chunk.text):
        return None
    found = LINK.search(chunk.text)
    if found is None:
        return None
    target = posixpath.normpath(unquote((found.group(1) or found.group(2)).strip()))
    return target if target.startswith(TOPICS_DIR + "/") else None


def route_pointers(ranked: Ranked, ranking: RankingSettings) -> Ranked:
    """Every pointer line among the candidates leaves them, lending `pointer_weight` x its score to each
    candidate passage of the topic it points to."""
    targets = {cid: target for cid in ranked.scores if (target := pointer_target(ranked.chunks[cid])) is not None}
    if not targets:
        return ranked
    scores = {cid: score for cid, score in ranked.scores.items() if cid not in targets}
    lent: dict[str, float] = {}
    for cid, target in targets.items():
        lent[target] = max(lent.get(target, 0.0), ranking.pointer_weight * ranked.scores[cid])
    for cid in scores:
        scores[cid] += lent.get(ranked.chunks[cid].path, 0.0)
    return Ranked(scores, ranked.chunks)


__all__ = ["pointer_target", "route_pointers"]

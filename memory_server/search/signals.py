"""Signals hybrid search weighs beside the two retrievers' scores.

- keyword_scale: what a BM25 score is divided by: the score of a chunk that holds every word of the query.
  The best hit's score alone would make a query whose only matches are common words (IDF near zero) as
  strong as one that matched a rare word, and a question whose one rare word happens to occur in a chunk
  as strong as a literal found whole. Against the whole query's weight, a match counts by the share of
  the query it covers: a literal found whole reaches 1, a paraphrase sharing one word with a chunk stays small.
- context_scores: query words that occur in a chunk's title or heading but not in its text. They say which
  file (or section) is about the query, so they lift every chunk there a little and equally, instead of
  making each chunk a keyword hit of its own (a status line would otherwise rank with the answer).
- is_assistant: a session line the assistant wrote. What the user said is the record; a reply restating it
  is weighed down so the user's own words come first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import lru_cache

from memory_server.parse.markdown import Chunk
from memory_server.search.exact import terms
from memory_server.search.parsed import PREFIX

# A line that starts with the assistant's speaker label: `**Assistant:** ...`, `- **Claude:** ...`.
ASSISTANT = re.compile(r"^\s*(?:[-*+]\s+|>\s*)?(?:\*\*|__)?(?:assistant|claude|agent)(?:\*\*|__)?\s*:", re.I)


def keyword_scale(best: float, word_idfs: Iterable[float], floor_share: float) -> float:
    """The divisor that maps BM25 scores to 0..1: `floor_share` times the sum of the query's word IDFs (about
    the BM25 of a chunk that holds each query word once), or the best score when that is higher."""
    return max(best, floor_share * sum(word_idfs), 1e-9)


def _stems(words: Iterable[str]) -> set[str]:
    return {w.casefold()[:PREFIX] for w in words}


@lru_cache(maxsize=2048)  # about 10 queries' candidates; 8192 held 19 MB of a 100k-chunk server's memory
def _text_stems(text: str) -> frozenset[str]:
    """The word stems of a chunk's text (kept: the same candidates come back query after query)."""
    return frozenset(_stems(terms(text)))


def context_scores(wanted: Collection[str], chunks: Iterable[Chunk]) -> dict[str, float]:
    """Per chunk id, the share of the query's content-word stems (`wanted`) found in its title or heading and
    not in its own text (0 when none)."""
    stems = set(wanted)
    if not stems:
        return {}
    out: dict[str, float] = {}
    for chunk in chunks:
        around = _stems(terms(f"{chunk.title} {chunk.heading}")) & stems
        if not around:
            continue
        own = _text_stems(chunk.text)
        found = len(around - own)
        if found:
            out[chunk.id] = found / len(stems)
    return out


def own_keyword_shares(
    words: Mapping[str, str], chunks: Iterable[Chunk], idf: Callable[[str], float]
) -> dict[str, float]:
    """Per chunk id, the share (by IDF) of the query words (`words`: stem -> word) its text matches that are its
    own: not also in its file's title or its heading. In a file titled "3D printer", "printer" in a line of it
    says which file, not which line; that is context_scores' job, so it does not count again as the line's
    keyword match."""
    out: dict[str, float] = {}
    if len(words) < 2:
        return out  # a query naming only the subject: the chunks that say it are the answer
    weights: dict[str, float] = {}
    for chunk in chunks:
        own = _text_stems(chunk.text)
        matched = [stem for stem in words if stem in own]
        if not matched:
            continue
        around = _stems(terms(f"{chunk.title} {chunk.heading}"))
        for stem in matched:
            if stem not in weights:
                weights[stem] = idf(words[stem])
        total = sum(weights[stem] for stem in matched)
        kept = sum(weights[stem] for stem in matched if stem not in around)
        out[chunk.id] = kept / total if total > 0 else 0.0
    return out


# A query that asks how the person wants things done (search_memory's description asks the caller to add
# these words to a request), and a line that states such a standing wish: "Always ...", "Never ...",
# "I prefer ...", "I'd rather ...", "my preference", "from now on". The line's pattern finds the word first and
# then reads the few characters before it: a pattern that tried every position of a long message was the
# slowest part of a search.
WISH_QUERY = re.compile(r"\b(?:prefer\w*|always|never)\b", re.I)
WISH_WORD = re.compile(r"\b(?:always|never|prefer|rather|my preference|from now on)\b", re.I)
WISH_WORDS = ("always", "never", "prefer", "rather", "from now on")  # a cheaper test first: one is in every match
SENTENCE_END = tuple(".!?:*")  # "Always ..." after a sentence or a label (**User:**)
LIST_MARKER = ("-", "+", "*", "\n-", "\n+", "\n*")  # "- Never ..." at the start of a line
WISHER = re.compile(r"\b(?:i|we)(?:'d| would)?$")  # "I prefer", "we'd rather"


def asks_for_wishes(text: str) -> bool:
    """Whether a query asks for the person's standing wishes (its preference words)."""
    return bool(WISH_QUERY.search(text))


def states_a_wish(chunk: Chunk) -> bool:
    """Whether a chunk (a topic line, or a user's line in a session) states a standing wish."""
    if is_assistant(chunk):
        return False
    text = chunk.text
    folded = text.lower()
    if not any(word in folded for word in WISH_WORDS):
        return False
    return any(_wish_at(text[max(0, m.start() - 16) : m.start()].lower(), m.group(0)) for m in WISH_WORD.finditer(text))


def _list_item(before: str) -> bool:
    return before in LIST_MARKER[:3] or before.endswith(LIST_MARKER[3:])


def _wish_at(window: str, word: str) -> bool:
    """Whether `word` states a wish after `window`: the folded text's 16 characters before it (all of them
    when there are fewer, so an empty window is the text's start)."""
    before, word = window.rstrip(), word.lower()
    if word in ("always", "never"):
        return not before or before.endswith(SENTENCE_END) or before.endswith("please") or _list_item(before)
    if word in ("prefer", "rather"):
        return bool(WISHER.search(before[-10:]))
    return True  # "my preference", "from now on"


def is_assistant(chunk: Chunk) -> bool:
    """Whether a session chunk is the assistant's line (by its speaker label)."""
    return chunk.layer != "topic" and bool(ASSISTANT.match(chunk.text))

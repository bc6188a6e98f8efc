"""Whether a statement says only what its quotes say: every number, name, quoted string and negation of it
is in the quoted turns, and no term is negated on one side and not on the other.

    ungrounded(statement, located, tree)   -> ["number 15", "name `--push`"]   (empty: grounded)
    polarity_problem(statement, located)   -> None, or the sentence that says the opposite

A name may instead be found in the project's tree today (a statement may name the file a change was made
in). A number, a quoted string and a negation must be in the quotes: a topic line that says "never" needs a
person who said "never" (or "not", "don't", "instead of", "replaced").
"""

from __future__ import annotations

import re

from memory_server.dream.claims import (
    AWAY_BEFORE,
    NEGATION,
    Token,
    fold,
    mentions,
    negated_terms,
    numbers,
    polarity_terms,
    tokens,
)
from memory_server.dream.locate import SENTENCE_BREAK, Located
from memory_server.dream.names import GitTree, name_kind
from memory_server.dream.stance import classify


def _corpus(located: list[Located]) -> str:
    """Everything the quoted turns say (and what an answer answers)."""
    return "\n".join(f"{x.turn.asked}\n{x.turn.text}" for x in located)


def _contexts(located: list[Located]) -> str:
    return "\n".join(x.context for x in located)


def _has_name(corpus: str, name: str) -> bool:
    """Whether the quoted turns hold the name, whole (a pattern such as `_test.go` may end a longer name)."""
    bare = name[:-2] if name.endswith("()") else name
    left = "" if bare[:1] in "_.*" else r"(?<![\w])"
    return bool(re.search(rf"{left}{re.escape(fold(bare))}(?![\w])", fold(corpus)))


CONTRAST = re.compile(r"\b(?:instead of|rather than|not)\s+(?:the\s+|a\s+|an\s+)?([\w`./-]+(?:\s+[\w`./-]+)?)", re.I)


def _negation_grounded(token: Token, statement: str, contexts: str) -> bool:
    """A statement's negation is grounded by one in the quoted sentences (or a person's "no", "we looked
    at X but kept Y"); a contrast ("Y instead of X", "Y, not X") by the quotes naming what it sets aside."""
    if NEGATION.search(contexts) or AWAY_BEFORE.search(contexts):
        return True
    if any(classify(c) in ("declined", "considered") for c in contexts.split("\n") if c.strip()):
        return True
    if token.text in ("instead of", "rather than", "not"):
        for m in CONTRAST.finditer(statement):
            words = [w for w in re.findall(r"[\w./-]+", m.group(1).casefold()) if len(w) > 2]
            if words and all(w in fold(contexts) for w in words[:1]):
                return True
    return False


def _grounded(token: Token, statement: str, corpus: str, contexts: str, tree: GitTree) -> bool:
    if token.kind == "number":
        return token.text in numbers(corpus)
    if token.kind == "quoted":
        return fold(token.text) in fold(corpus)
    if token.kind == "negation":
        return _negation_grounded(token, statement, contexts)
    if _has_name(corpus, token.text):
        return True
    return tree.available and tree.problem(token.text) is None and name_kind(token.text) != "key"


def ungrounded(statement: str, located: list[Located], tree: GitTree) -> list[str]:
    """What the statement says that its quotes do not: numbers, names, quoted strings, negations."""
    corpus, contexts = _corpus(located), _contexts(located)
    words = {"number": "number", "name": "name", "quoted": "quoted text", "negation": "negation"}
    return [
        f"{words[t.kind]} `{t.text}`" if t.kind != "negation" else f'negation "{t.text}"'
        for t in tokens(statement)
        if not _grounded(t, statement, corpus, contexts, tree)
    ]


def declines(located: Located) -> bool:
    """An answer that says no to what it answers ("no", "nope, leave it", "don't")."""
    return bool(located.turn.asked) and classify(located.turn.text) in ("declined", "considered")


def polarity_problem(statement: str, located: list[Located]) -> str | None:
    """A quote that negates what the statement adopts, for half of the terms both name at least: "never
    replace X with Y" quoted for "Replace X with Y"; a "no" to "Shall I switch to make?" for "Switch to make".
    (A statement that negates what its quotes do not is a negation its quotes must ground: `ungrounded`.)"""
    terms = polarity_terms(statement)
    said = negated_terms(statement, terms)
    for x in located:
        text = f"{x.turn.asked}\n{x.sentence}" if x.turn.asked else x.sentence
        present = [t for t in terms if mentions(text, [t], 1)]
        if not present:
            continue
        flip = declines(x) and classify(x.sentence) in ("declined", "considered")  # the quoted words say no
        if flip:  # to what the agent asked ("Want me to delete X?"): not to what it said around the question
            asked = " ".join(q for q in SENTENCE_BREAK.split(x.turn.asked) if q.strip().endswith("?"))
            present = [t for t in present if mentions(asked, [t], 1)]
            negated = set(present) - negated_terms(asked, present)  # "no" to "shall I not ...?" keeps it
        else:
            negated = negated_terms(text, present)
        wrong = [t for t in present if t in negated and t not in said]
        if wrong and len(wrong) * 2 >= len(present):
            return (
                f"the quoted words say the opposite of the statement about `{wrong[0]}`: {x.quote.ref} ({x.who}): "
                f"{x.sentence[:200]!r}" + (f" (answering {x.turn.asked[-160:]!r})" if x.turn.asked else "")
            )
    return None

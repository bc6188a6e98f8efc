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
    FOREVER,
    NEGATION,
    SCOPE,
    TEMPORARY,
    Token,
    affirmed_terms,
    content_words,
    contrasted_terms,
    fold,
    measures,
    mentions,
    negated_terms,
    numbers,
    polarity_terms,
    stems,
    tokens,
)
from memory_server.dream.locate import SENTENCE_BREAK, Located
from memory_server.dream.names import GitTree
from memory_server.dream.record import PERSON
from memory_server.dream.stance import classify, considered_part, kept_part, proposal_of


def _corpus(located: list[Located]) -> str:
    """Everything the quoted turns say (and what an answer answers)."""
    return "\n".join(f"{x.turn.asked}\n{x.turn.text}" for x in located)


def _contexts(located: list[Located]) -> str:
    return "\n".join(x.context for x in located)


def has_name(corpus: str, name: str) -> bool:
    """Whether the quoted turns hold the name, whole (a pattern such as `_test.go` may end a longer name)."""
    bare = name[:-2] if name.endswith("()") else name
    left = "" if bare[:1] in "_.*" else r"(?<![\w])"
    return bool(re.search(rf"{left}{re.escape(fold(bare))}(?![\w])", fold(corpus)))


ONLY = re.compile(r"\b(?:only|just|merely|solely)\b", re.I)


def _negation_grounded(statement: str, located: list[Located]) -> bool:
    """The statement's negation must be the quotes' too. Of the terms it negates (not only sets aside) that the
    quotes name, at least half are negated in a quote naming them, or turned down by the person ("no", "we
    looked at X, we'll keep Y": X, not Y); when the quotes name none, a negation or a "no" in them is enough.
    A term it only sets aside ("Y instead of X", "Y, not X") needs only be named."""
    terms = polarity_terms(statement)
    aside = contrasted_terms(statement, terms)
    negated = negated_terms(statement, terms) - aside
    contexts = [x.context for x in located]
    if not negated:  # what is set aside is named in the quotes ("not the golangci-lint action")
        return not aside or any(mentions(c, [t], 1) for c in contexts for t in aside)
    named = [t for t in negated if any(mentions(c, [t], 1) for c in contexts)]
    if not named:  # a paraphrase ("is only text in a log line" for "is not a setting")
        return any(NEGATION.search(c) or AWAY_BEFORE.search(c) or ONLY.search(c) for c in contexts) or any(
            map(_says_no, located)
        )
    held = [t for t in named if _negated_in_quotes(t, located)]
    return bool(held) and len(held) * 2 >= len(named)


def _negated_in_quotes(term: str, located: list[Located]) -> bool:
    """Negated in a quoted sentence, turned down by the person, or named by a failure ("could not import X")."""
    if any(term in negated_terms(x.context, [term]) for x in located) or _turned_down(term, located):
        return True
    return any(_failing(x) and mentions(x.context, [term], 1) for x in located)


ERROR_WORDS = re.compile(r"[a-z](?:Error|Exception)\b|\b(?:error|failed|failure|unable to|cannot)\b")


def _failing(x: Located) -> bool:
    """A failure: a failed call's output, or an error someone pasted ("ImportError while loading conftest")."""
    return x.turn.kind in ("error", "failure") or bool(ERROR_WORDS.search(x.context))


def _says_no(x: Located) -> bool:
    return declines(x) or x.turn.speaker == PERSON and classify(x.context) in ("declined", "considered")


def _turned_down(term: str, located: list[Located]) -> bool:
    """Whether a quote of the person's says no to `term`: a "no" to a question naming it, their words declining
    it, or the part of "we looked at X, we'll keep Y" that was only looked at."""
    for x in located:
        if x.turn.speaker != PERSON:
            continue
        looked = considered_part(x.turn.text)
        if looked:
            if mentions(looked, [term], 1) and not mentions(kept_part(x.turn.text), [term], 1):
                return True
        elif _says_no(x) and mentions(x.context, [term], 1):
            return True
    return False


def _grounded(token: Token, statement: str, corpus: str, contexts: str, tree: GitTree, located: list[Located]) -> bool:
    if token.kind == "number":  # in the quoted sentences, and said of what the statement says it of
        return token.text in numbers(contexts) and _said_of(token.text, statement, contexts)
    if token.kind == "quoted":
        return fold(token.text) in fold(corpus)
    if token.kind == "scope":  # "every test" needs a quote that says every, all, always ...
        return bool(SCOPE.search(contexts))
    if token.kind == "negation":
        return _negation_grounded(statement, located)
    if has_name(corpus, token.text):
        return True
    return tree.available and tree.problem(token.text) is None


# where a name's words meet: "MAX_UPLOAD_MB", "regen_golden"
NAME_PARTS = re.compile(r"_")
NUMBER_CLAUSE = re.compile(r"[;:,!?]\s|\.\s|\s[—–-]\s|\bbut\b|\n")
UNIT_WORDS = frozenset(
    "port ms s sec secs second seconds min mins minute minutes h hour hours day days percent".split()
)


def _said_of(number: str, statement: str, contexts: str) -> bool:
    """Whether the quotes say the number of what the statement says it of: not when another quoted clause
    holds more of the statement's words about it than any clause with the number, and those hold under half
    ("the docs server moved to port 8081, 8080 clashes with the API dev server" for "the API dev server
    listens on port 8081")."""

    def words(clause: str, parts: bool = False) -> set[str]:
        if parts:  # a quote's `MAX_UPLOAD_MB is 50` says 50 of the upload limit in MB
            clause = f"{clause} {NAME_PARTS.sub(' ', clause)}"
        return stems(w for w in content_words(clause) if w != number and w not in UNIT_WORDS and not w.isdigit())

    own = [c for c in NUMBER_CLAUSE.split(statement) if any(v == number for v, _u in measures(c))]
    wanted = words(own[0]) if own else set()
    if len(wanted) < 2:
        return True  # too little said of it to compare
    clauses = NUMBER_CLAUSE.split(contexts)
    with_it = max((len(wanted & words(c, True)) for c in clauses if number in numbers(c)), default=0)
    without = max((len(wanted & words(c, True)) for c in clauses if number not in numbers(c)), default=0)
    return with_it * 2 >= len(wanted) or without <= with_it


def ungrounded(statement: str, located: list[Located], tree: GitTree, kept: str = "") -> list[str]:
    """What the statement says that its quotes do not: numbers, names, quoted strings, negations. (`kept`: the
    topic lines a correction rewrites; a number, name or quoted string the statement keeps from them is theirs.)"""
    corpus, contexts = _corpus(located), _contexts(located)
    words = {"number": "number", "name": "name", "quoted": "quoted text", "negation": "negation", "scope": "scope"}
    found = [
        t
        for t in tokens(statement)
        if not (t.kind in ("number", "name", "quoted") and _in_line(t, kept))
        and not _grounded(t, statement, corpus, contexts, tree, located)
    ]
    if any(t.kind == "negation" for t in found):  # one verdict for all its negations
        found = [t for t in found if t.kind != "negation"] + [next(t for t in found if t.kind == "negation")]
    return [
        f"{words[t.kind]} `{t.text}`" if t.kind not in ("negation", "scope") else f'{t.kind} "{t.text}"' for t in found
    ]


def _in_line(token: Token, line: str) -> bool:
    if not line:
        return False
    if token.kind == "number":
        return token.text in numbers(line)
    return has_name(line, token.text) if token.kind == "name" else fold(token.text) in fold(line)


def temporary_problem(statement: str, located: list[Located]) -> str | None:
    """A refusal for now ("not now", "leave it for now") written as a rule for ever ("never", "do not")."""
    if not FOREVER.search(statement) or TEMPORARY.search(statement):
        return None
    for x in located:
        if x.turn.speaker == PERSON and TEMPORARY.search(x.sentence):
            return (
                f"the person said it for now ({x.quote.ref}: {x.sentence[:160]!r}), and the statement makes it a "
                "rule for good; say what was decided, and for how long"
            )
    return None


def declines(located: Located) -> bool:
    """An answer that says no to what it answers ("no", "nope, leave it", "don't")."""
    return bool(located.turn.asked) and classify(located.turn.text) in ("declined", "considered")


# "Want me to remove it?": a removal of what the agent's text spoke of just before.
REMOVES_IT = re.compile(
    r"\b(?:remove|delete|drop|get rid of|take out|rip out|clean up)\s+(?:it|them|that|this|those|these)\b", re.I
)


def removed_by_pronoun(asked: str, present: list[str]) -> set[str]:
    """The terms an agent's question removes by a pronoun ("`ARCHIVE_LEVEL` is unused. Want me to remove it?":
    ARCHIVE_LEVEL): those its text names before the question, when the question removes "it" and names none."""
    proposal = proposal_of(asked)
    if not REMOVES_IT.search(proposal) or any(mentions(proposal, [t], 1) for t in present):
        return set()
    return {t for t in present if mentions(asked, [t], 1)}


def _adopted(said: set[str], present: list[str], x: Located) -> set[str]:
    """What the statement negates that a quote of the person's adopts (names, not negated, not turned down; a
    yes to "drop X?" or "remove it?" adopts the removal)."""
    if x.turn.speaker != PERSON or classify(x.sentence) != "statement":
        return set()
    said_with = f"{x.answered}\n{x.sentence}" if x.turn.asked else x.sentence  # an answer says what it answers
    negated = negated_terms(said_with, present) | removed_by_pronoun(x.turn.asked, present)
    return {t for t in present if t in said and t not in negated and not _turned_down(t, [x])}


def polarity_problem(statement: str, located: list[Located]) -> str | None:
    """A quote that negates what the statement adopts, for half of the terms both name at least: "never
    replace X with Y" quoted for "Replace X with Y"; a "no" to "Shall I switch to make?" for "Switch to make".
    (A statement that negates what its quotes do not is a negation its quotes must ground: `ungrounded`.)"""
    terms = polarity_terms(statement)
    said = negated_terms(statement, terms)
    for x in located:
        if x.turn.kind in ("edit", "write", "file", "content"):
            continue  # a file's text says what the code does, not what anyone decided
        text = f"{x.answered}\n{x.sentence}" if x.turn.asked else x.sentence
        present = [t for t in terms if mentions(text, [t], 1)]
        if not present:
            continue
        flip = declines(x) and classify(x.sentence) in ("declined", "considered")  # the quoted words say no
        if flip:  # to what the agent asked ("Want me to delete X?"): not to what it said around the question
            asked = " ".join(q for q in SENTENCE_BREAK.split(x.turn.asked) if q.strip().endswith("?"))
            present = [t for t in present if mentions(asked, [t], 1)]
            negated = set(present) - negated_terms(asked, present)  # "no" to "shall I not ...?" keeps it
            wrong = [t for t in present if t in negated and t not in said]
        else:  # either way round: "X instead of Y" quoted for "Y rather than X" (what they turned down aside)
            negated = negated_terms(text, present) | removed_by_pronoun(x.turn.asked, present)
            negated -= affirmed_terms(x.sentence, present)  # said both ways in the person's words: neither
            wrong = sorted({t for t in present if t in negated and t not in said} | _adopted(said, present, x))
        if wrong and len(wrong) * 2 >= len(present):
            return (
                f"the quoted words say the opposite of the statement about `{wrong[0]}`: {x.quote.ref} ({x.who}): "
                f"{x.sentence[:200]!r}" + (f" (answering {x.turn.asked[-160:]!r})" if x.turn.asked else "")
            )
    return None

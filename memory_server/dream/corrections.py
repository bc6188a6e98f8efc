"""Corrections: a topic line's old text becomes new text, only where the record states that change.

    problem = correction_problem(item, located, topic)   # None, or why the change is not shown by the record
    line = replace_span(line, old, new)                  # the one matched span changed, nothing else

A change is stated when a quoted turn names both sides in a change ("from X to Y", "X -> Y", "rename X to
Y", "replace X with Y", "Y instead of X", "X is now Y", "moved X to Y", "Y, not X"), or when the person's
own words (or the agent's proposal they said yes to) give what is new in a sentence about what the topic line
says there (a word of the line around the old text), or a quoted sentence says the part taken away was removed
(always, when a list keeps some of its values and drops others: "3.10 and 3.11" -> "3.11 and 3.12"). The
old text must occur once on each cited line, as whole words; only that span changes.
"""

from __future__ import annotations

import re

from memory_server.dream.claims import AWAY_BEFORE, content_words, fold, negated_terms, stems
from memory_server.dream.grounding import declines
from memory_server.dream.items import ProposalItem
from memory_server.dream.locate import SENTENCE_BREAK, Located
from memory_server.dream.record import PERSON
from memory_server.dream.stance import classify
from memory_server.dream.topics import TopicFile
from memory_server.parse.text import STOP_WORDS

FORWARD = re.compile(
    r"^\W{0,3}(?:(?:was|were|is|are|has been|have been|got|gets|being|now|been|will be|should be|needs to be|"
    r"renamed|moved|changed|switched|migrated|replaced|updated|bumped|went|becomes|became|goes)\s+){0,3}"
    r"(?:to|->|→|=>|with|by|into|as|becomes|became|now)\b\W{0,3}$|^\s*(?:->|→|=>|⇒)\s*$",
    re.I,
)
BACKWARD = re.compile(
    r"^\W{0,3}(?:(?:now |has |have )?(?:replaces?|replaced|replacing|supersedes|superseded|instead of|rather than|"
    r"not|over|in place of|in favou?r of))\W{0,3}$",
    re.I,
)


def _positions(text: str, term: str) -> list[int]:
    return [m.start() for m in re.finditer(rf"(?<![\w]){re.escape(term)}(?![\w])", text)]


def change_stated(text: str, old: str, new: str) -> bool:
    """Whether `text` states that `old` became `new` (see the module's docstring for the forms)."""
    folded, a, b = fold(text), fold(old), fold(new)
    for i in _positions(folded, a):
        for j in _positions(folded, b):
            if i < j and j - (i + len(a)) <= 60 and FORWARD.match(folded[i + len(a) : j]):
                return True
            if j < i and i - (j + len(b)) <= 30 and BACKWARD.match(folded[j + len(b) : i]):
                return True
            if j < i and re.search(rf"\bfrom\W{{0,3}}{re.escape(a)}\W{{0,3}}to\W{{0,3}}{re.escape(b)}", folded):
                return True
    return False


TOKEN = re.compile(r"[\w./:-]*\w")
# What says the name before or after it changed: "from X", "renamed ... X", "X -> Y", "X was renamed", "X is now"
FROM_BEFORE = re.compile(r"\bfrom\W{0,3}$")
CHANGE_VERB = re.compile(r"\b(?:renam|migrat|mov|switch|replac|chang|bump|upgrad|downgrad)\w*\b[^.!?]{0,40}$")
ARROW = re.compile(r"^\W{0,3}(?:->|→|=>|⇒)")
CHANGED_AFTER = re.compile(
    r"^\W{0,3}(?:(?:was|were|has been|have been|got)\s+)?(?:renamed|migrated|moved|changed|switched|replaced|"
    r"is now|are now)\b"
)


def changed_from(text: str, old: str) -> str | None:
    """The sentence of `text` that says `old` became something else ("from X to Y", "renamed X to Y", "X is
    now Y", "X -> Y"), or None. A name merely put somewhere ("add X to the list") is no change."""
    a = fold(old)
    for sentence in SENTENCE_BREAK.split(text):
        folded = fold(sentence)
        for i in _positions(folded, a):
            before, rest = folded[:i], folded[i + len(a) : i + len(a) + 60]
            said = FROM_BEFORE.search(before) or CHANGE_VERB.search(before) or ARROW.match(rest)
            if (said or CHANGED_AFTER.match(rest)) and any(
                m.start() > 0 and m.group() not in STOP_WORDS and FORWARD.match(rest[: m.start()])
                for m in TOKEN.finditer(rest)
            ):
                return sentence.strip()
    return None


def _tokens(text: str) -> list[str]:
    return [t for t in TOKEN.findall(fold(text)) if t not in STOP_WORDS]


def _has(sentence: str, token: str) -> bool:
    return bool(re.search(rf"(?<![\w/.-]){re.escape(token)}(?![\w/-])", fold(sentence)))


def _anchors(line: str, old: str, new: str) -> set[str]:
    """What ties a sentence to the topic line: the line's words other than what changes in it."""
    changed = set(_tokens(old)) - set(_tokens(new))
    return stems(w for w in content_words(line) if w not in changed) - stems(changed)


def new_value_given(located: list[Located], line: str, old: str, new: str) -> bool:
    """The person's words (or the agent's proposal they said yes to) give what is new in `new`, in a sentence
    about what the topic line says there (it shares a word of the line around the old text)."""
    distinct = [t for t in _tokens(new) if t not in set(_tokens(old))]
    if not distinct:
        return False  # only something taken away: that must be stated as such
    anchors = _anchors(line, old, new)
    for x in located:
        if x.turn.speaker != PERSON:
            continue
        own = [(s, True) for s in SENTENCE_BREAK.split(x.turn.text)]
        asked = [(s, False) for s in SENTENCE_BREAK.split(x.turn.asked)] if x.turn.asked and not declines(x) else []
        for sentence, mine in own + asked:
            if mine and classify(sentence) != "statement":
                continue
            if all(_has(sentence, t) for t in distinct) and anchors & stems(content_words(sentence)):
                return True
    return False


def removal_stated(located: list[Located], old: str, new: str) -> bool:
    """A quoted sentence says that what the old text has and the new one lacks was removed."""
    removed = [t for t in _tokens(old) if t not in set(_tokens(new))]
    for x in located:
        for sentence in SENTENCE_BREAK.split(f"{x.turn.asked}\n{x.turn.text}"):
            if removed and AWAY_BEFORE.search(sentence) and negated_terms(sentence, removed):
                return True
    return False


VALUE = re.compile(r"^(?:v?\d[\w.]*|[A-Z][\w.]*|[\w.]*[A-Z_./][\w.]*)$")


def _list_drop(old: str, new: str) -> bool:
    """A list that keeps some of its values and drops others ("3.10 and 3.11" -> "3.11 and 3.12"): a new value
    given does not say the dropped one went, so the drop must be stated."""
    values = [t for t in TOKEN.findall(old) if VALUE.match(t)]
    kept = [t for t in values if _has(new, t)]
    return len(values) >= 2 and bool(kept) and len(kept) < len(values)


def replace_span(line: str, old: str, new: str) -> str:
    """`line` with its one whole-word occurrence of `old` replaced by `new`."""
    at = _positions(line, old)
    if len(at) != 1:
        raise ValueError(f"{old!r} occurs {len(at)} times")
    return line[: at[0]] + new + line[at[0] + len(old) :]


def correction_problem(item: ProposalItem, located: list[Located], topic: TopicFile | None) -> str | None:
    if topic is None:
        return f"{item.topic} does not exist, so it has no lines to correct"
    quoted = list(located)
    for ref in item.replace_lines:
        n = int(ref.rsplit(":", 1)[1])
        if n > len(topic.lines) or n <= topic.body_start:
            return f"{ref} is not a line of {item.topic}'s text"
        line = topic.lines[n - 1]
        found = len(_positions(line, item.old))
        if found != 1:
            said = line.strip()[:200]
            return (
                f"{ref} says {said!r}: `old` ({item.old!r}) must occur there once as whole words"
                f" (it occurs {found} times); quote more of the line"
            )
        stated = any(change_stated(f"{x.turn.asked}\n{x.turn.text}", item.old, item.new) for x in quoted)
        given = new_value_given(quoted, line, item.old, item.new) and not _list_drop(item.old, item.new)
        if not stated and not given and not removal_stated(quoted, item.old, item.new):
            if _list_drop(item.old, item.new):
                gone = [t for t in TOKEN.findall(item.old) if VALUE.match(t) and not _has(item.new, t)]
                return (
                    f"the change drops {', '.join(gone)} from {item.old!r}, and no quoted sentence says it went "
                    "(removed, dropped, from X to Y); change only what the record changes"
                )
            return (
                f"no quoted turn states that {item.old!r} became {item.new!r} (from/to, rename, instead of, now, "
                "moved to), and the person's own words do not give the new value for what that line says"
            )
    return None

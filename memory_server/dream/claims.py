"""What a statement claims, read as data: the tokens that must be grounded, whether it is a rule or a choice,
its subject, and which of its terms it negates.

    tokens(statement)            -> [Token("number", "12"), Token("name", "settings.Load"), Token("negation", "never")]
    rule_like(statement)         -> True for "Use uv, not pip." / "Never commit generated files." / "We decided ..."
    subject_terms(statement, q)  -> the words a later turn must name to be about the same thing
    negated_terms(sentence)      -> the words a sentence puts under "not", "never", "instead of", "replace X with"

None of this judges meaning (the agent and a second reader do); it finds what the record can decide.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from memory_server.dream.identifiers import BACKTICKED, identifiers
from memory_server.parse.text import STOP_WORDS

PREFIX = 5  # words are compared by their first letters: "switched" and "switching", "tests" and "test"
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*|\d+(?:\.\d+)*")
NUMBER = re.compile(r"(?<![\w.])v?\d+(?:[.,:]\d+)*(?:[.]\d+)?(?![\w])")
QUOTED = re.compile(r"\"([^\"]{2,120})\"|“([^”]{2,120})”|'([^'\s][^']{1,118}[^'\s])'(?!\w)")
NEGATION = re.compile(
    r"\b(?:not|never|no|none|nothing|nobody|neither|nor|without|avoid|stop|cannot|"
    r"(?:decided|voted|argued|is|are|am|was|were) against|"
    r"(?:do|does|did|is|are|was|were|wo|would|should|could|ca|must|need|have|has)n[’']?t|dont|doesnt|wont|"
    r"shouldnt|cant|isnt|arent|no longer|instead of|rather than)\b",
    re.I,
)
NUMBER_WORDS = {
    "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twice": "2", "thrice": "3",
}  # fmt: skip
# Words that make a statement a rule or a choice (a decision, whatever kind the item gives it).
RULE_START = re.compile(
    r"^\s*(?:always|never|do not|don't|dont|avoid|stop|prefer|keep|use|run|put|make|add|remove|write|call|set|"
    r"commit|push|merge|rebase|name|store|skip|check|test|document|ask|leave|only|please|let's|lets|switch|"
    r"move|replace|delete|drop|rename|pin|require|ship|release|tag|deploy|start|create|mark)\b",
    re.I,
)
RULE_WORDS = re.compile(
    r"\b(?:must|mustn't|should|shouldn't|shall|have to|has to|need to|needs to|is required|are required|required|"
    r"decided|decision|chose|chosen|agreed|we will|we'll|we won't|going forward|from now on|instead of|"
    r"rather than|no longer|prefer(?:red|s)?|policy|convention|rule|not allowed|allowed|forbidden|"
    r"we (?:always|never|don't|do not|only)|only (?:through|via|with|use|run))\b",
    re.I,
)
# Before a term, in the same clause: the term is what is not done or not used (to the clause's end) ...
NOT_BEFORE = re.compile(
    r"\b(?:not|never|no|don't|dont|do not|doesn't|does not|didn't|did not|won't|will not|shouldn't|should not|"
    r"mustn't|must not|can't|cannot|without|avoid(?:ing|ed)?|stop(?:ped)? using|instead of|rather than|"
    r"no longer|no more|(?:decided|voted|argued|is|are|am|was|were) against|nobody|no one|nothing|banned|"
    r"forbidden|disallowed|prohibited|(?<!n't )(?<!not )forget(?! to\b)|ditch(?:ed)?)\b",
    re.I,
)
# The negations that only set something aside ("Y instead of X", "Y, not X", "(not X)"): X need only be named.
CONTRAST_BEFORE = re.compile(r"\b(?:instead of|rather than|in place of)\b|(?:,|\(|—|–)\s*not\b", re.I)
# ... or what is taken away, up to the other side of "replace X with Y" / "from X to Y".
AWAY_BEFORE = re.compile(
    r"\b(?:drop(?:ped|ping)?|remov(?:e|ed|ing)|delet(?:e|ed|ing)|get rid of|got rid of|replac(?:e|ed|ing)|"
    r"(?:switch(?:ed|ing|es)?|mov(?:e|ed|ing)|migrat(?:e|ed|ing|ion)|went back|transition(?:ed)?|change|renamed) "
    r"(?:away )?from|formerly|previously|used to be|was called)(?=\W)|\((?:it|this|that) was\b",
    re.I,
)
AWAY_END = re.compile(r"\b(?:with|to|by|for|from|on|in|at|in favou?r of)\b")  # "removed X from Y": Y stays
# where a negation's reach ends: punctuation, "but", or a reason or time after it ("without a migration
# because ...": the migration, not the reason)
CLAUSE_END = re.compile(
    r"[,;:.!?](?=\s|$)|[()—–]|\s-\s|\b(?:but|because|since|so that|when|whenever|after|before|until|unless|"
    r"while|which)\b"
)
CLAUSE = re.compile(r"[;:.!?](?=\s|$)|\s[—–]\s|\bbut\b|\bhowever\b", re.I)
# "don't want a test run to depend on X": the wish is negated, and what it is about starts at its verb (the
# run is not turned down; depending on X is)
WISH_OBJECT = re.compile(r"\s*(?:want|wants|need|needs|like|expect)\s+(?:\w+\s+){1,5}?to\s+(?=\w)")


@dataclass(frozen=True)
class Token:
    """Something in a statement the record must hold: a number, a name, a quoted string or a negation."""

    kind: str  # "number" | "name" | "quoted" | "negation" | "scope"
    text: str


def fold(text: str) -> str:
    """Text as tokens are compared: NFKC, casefolded, backticks and emphasis gone, spacing collapsed."""
    text = unicodedata.normalize("NFKC", text).replace("’", "'").replace("…", " ")
    return " ".join(re.sub(r"[`*]", "", text).casefold().split())


def stem(word: str) -> str:
    """A word's stem: common endings off ("lints", "switched", "tasks"), then its first PREFIX letters."""
    w = word.casefold()
    if len(w) > 4 and w.endswith(("ied", "ies")):
        return (w[:-3] + "y")[:PREFIX]  # "retried", "retries": "retry"
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]  # "cache", "cached", "caching": one stem
    return w[:PREFIX]


# Verbs written apart that name one thing written together: "times out" is about a timeout.
COMPOUND = re.compile(r"\b(tim|sign|log|set|check|roll|back)(?:e|es|ed|ing|s|ged|ging|ting)? (out|in|up|back)\b", re.I)
COMPOUNDS = {"tim out": "timeout", "log in": "login", "sign in": "signin", "set up": "setup", "check out": "checkout",
             "roll back": "rollback", "back up": "backup"}  # fmt: skip


def _joined(match: re.Match[str]) -> str:
    pair = f"{match.group(1).casefold()} {match.group(2).casefold()}"
    return COMPOUNDS.get(pair, match.group(0))


def content_words(text: str) -> list[str]:
    """Word tokens of `text` without stop words, casefolded, in order ("times out" read as "timeout")."""
    text = COMPOUND.sub(_joined, unicodedata.normalize("NFKC", text))
    return [w for w in (w.casefold() for w in WORD.findall(text)) if w not in STOP_WORDS]


def stems(words: Iterable[str]) -> set[str]:
    return {stem(w) for w in words if len(w) > 1}


# A number with its unit ("30 s", "200ms", "port 8081", "3 attempts"): the units are read as one of a few kinds.
MEASURE = re.compile(
    r"(?:\bport\s+(\d+))|(?<![\w.])(\d+(?:\.\d+)?)(?:\s*|-)(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?|"
    r"days?|%|percent|kb|mb|gb|attempts?|retries|tries|times|workers?|threads?|lines|chars|characters|bytes)\b",
    re.I,
)
UNIT_KINDS = {
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s",
    "seconds": "s", "m": "min", "min": "min", "mins": "min", "minute": "min", "minutes": "min", "h": "h",
    "hour": "h", "hours": "h", "day": "d", "days": "d", "%": "%", "percent": "%", "kb": "kb", "mb": "mb",
    "gb": "gb", "attempt": "attempts", "attempts": "attempts", "retries": "attempts", "tries": "attempts",
    "times": "attempts", "worker": "workers", "workers": "workers", "thread": "workers", "threads": "workers",
    "lines": "lines", "chars": "chars", "characters": "chars", "bytes": "bytes",
}  # fmt: skip


def measures(text: str) -> set[tuple[str, str]]:
    """(value, unit kind) of every measured number in `text`: "5s" and "5 seconds" are ("5", "s")."""
    out: set[tuple[str, str]] = set()
    for m in MEASURE.finditer(text):
        if m.group(1):
            out.add((m.group(1), "port"))
        else:
            out.add((m.group(2), UNIT_KINDS[m.group(3).casefold()]))
    return out


def numbers(text: str) -> set[str]:
    """The numbers of a text (digits, versions; number words as digits), without a leading "v"."""
    found = {n.lstrip("vV").rstrip(".,:") for n in NUMBER.findall(text)}
    found |= {NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.casefold()) if w in NUMBER_WORDS}
    return found | {value for value, _unit in measures(text)}  # "200ms" holds 200


# Words that widen a statement to everything ("every test", "always"): the quotes must widen it too.
SCOPE = re.compile(
    r"\b(?:every(?:where|thing|one)?|all|each|always|whenever|regardless|no matter|any(?! ?more\b| longer\b))\b", re.I
)


def tokens(statement: str) -> list[Token]:
    """What grounding checks in a statement, in order: numbers, names, quoted strings, negations, scope."""
    out: dict[Token, None] = {}
    for name in identifiers(statement):
        out.setdefault(Token("name", name), None)
    plain = BACKTICKED.sub(" ", statement)
    for n in sorted({n.lstrip("vV").rstrip(".,:") for n in NUMBER.findall(plain)}):  # digits ("three" may be a word)
        out.setdefault(Token("number", n), None)
    for m in QUOTED.finditer(plain):
        out.setdefault(Token("quoted", next(g for g in m.groups() if g)), None)
    for m in NEGATION.finditer(plain):
        out.setdefault(Token("negation", m.group(0).casefold()), None)
    for m in SCOPE.finditer(plain):
        out.setdefault(Token("scope", m.group(0).casefold()), None)
    return list(out)


def rule_like(statement: str) -> bool:
    """Whether a statement is worded as a rule or a choice: such a statement is a decision, and a decision
    rests on the person's words whatever kind the item gives it."""
    text = BACKTICKED.sub("x", statement)
    return bool(RULE_START.match(text) or RULE_WORDS.search(text))


def subject_terms(statement: str, quoted: str) -> tuple[list[str], int]:
    """What a later turn must name to be about the statement, and how much of it.

    The statement's names, with the long parts of dotted or slashed names ("modernc" of `modernc.org/sqlite`),
    and its content words (not the words of deciding: "use", "always", "switch"). A turn names the subject when
    it names one of the names, or two of the words (`mentions` counts a name as enough by itself).
    """
    flags = re.findall(r"(?<![\w-])--[a-z][\w-]+", statement)
    names = list(dict.fromkeys([*(n for n in identifiers(statement) if len(n) > 2), *flags]))
    parts = {p for n in names for p in re.split(r"[./:-]", _tail(n)) if len(p) >= 5 and p.casefold() not in STOP_WORDS}
    taken = {n.casefold() for n in names} | {p.casefold() for p in parts}
    words = [
        w for w in dict.fromkeys(content_words(statement)) if w not in DECIDING_WORDS and len(w) > 1 and w not in taken
    ]
    terms = [*names, *(SEGMENT + p for p in sorted(parts - set(names))), *words]
    return terms, min(2, len(words)) if not names else 2


# A terminal colour code inside a word ("\x1b[31mred") hides the word from matching.
TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _tail(name: str) -> str:
    """A path's own part, its folder and file ("claudecode/types.go" of `cmd/entire/cli/agent/claudecode/types.go`):
    the folders above name half the project."""
    return "/".join(name.split("/")[-2:]) if name.count("/") > 1 else name


SEGMENT = "~"  # marks a part of a name ("modernc" of `modernc.org/sqlite`): matched whole, in its own case


def shown_term(term: str) -> str:
    return term.removeprefix(SEGMENT)


def mentions(text: str, terms: list[str], need: int) -> bool:
    """Whether `text` names `need` of `terms`: one name is enough (names whole; parts of names whole and in
    their own case), else `need` words (by their stems)."""
    if not terms:
        return False
    text = TERMINAL_ESCAPE.sub("", text)
    folded = fold(text)
    own = stems(content_words(text))
    hits = 0
    for t in terms:
        if t.startswith(SEGMENT):
            hits += need * bool(re.search(rf"(?<![\w]){re.escape(t[1:])}(?![\w])", text))
        elif _is_name(t):
            hits += need * bool(re.search(rf"(?<![\w/.]){re.escape(fold(t))}(?![\w/-])", folded))
        else:
            hits += stem(t) in own
    return hits >= need > 0


def _is_name(term: str) -> bool:
    return bool(re.search(r"[A-Z_./()]|\d", term[1:])) or term.isupper() or term.startswith(("-", SEGMENT))


# "take the sleep out", "leave the purge retries out": what is between goes
TAKE_OUT = re.compile(
    r"\b(take|took|taking|rip|ripped|pull|pulled|leave|leaving|left)\s+((?:[\w`./-]+\s+){1,3})out\b", re.I
)
NEGATIVE_STATEMENT = re.compile(
    r"^\W*(?:do not|don't|dont|never|avoid|stop|no)\b|\b(?:decided against|(?:is|are|was|were) not (?:used|done|"
    r"needed|allowed|run)|must not|mustn't|must never|should never|should not|shouldn't|won't|will not|not to|"
    r"nobody|no one)\b",
    re.I,
)
# A refusal for now is not a rule for ever: "not now", "leave it for now", "not yet", "later".
TEMPORARY = re.compile(r"\b(?:not now|for now|not yet|not for now|later|next (?:week|release|time)|this time)\b", re.I)
FOREVER = re.compile(r"\b(?:never|always|must not|mustn't|nobody|no one|for good|forever|permanently)\b", re.I)


def negative(statement: str) -> bool:
    """Whether a statement says what is not done ("Do not ...", "X is not used", "we decided against X")."""
    return bool(NEGATIVE_STATEMENT.search(BACKTICKED.sub("x", statement)))


def contrasted_terms(statement: str, terms: Iterable[str]) -> set[str]:
    """The terms a statement only sets aside ("Y instead of X", "Y, not X"): X."""
    out: set[str] = set()
    for m in CONTRAST_BEFORE.finditer(fold(statement)):
        rest = fold(statement)[m.end() :]
        end = CLAUSE_END.search(rest)
        span = rest[: end.start() if end else len(rest)]
        out |= {t for t in terms if _in_span(span, t)}
    return out


# Code's own negations, written bare: SQL's "IF NOT EXISTS", "NOT NULL", Python's "is not None", Go's "!= nil".
CODE_NEGATION = re.compile(r"\b(?:if not exists|is not null|not null|is not none|is not nil)\b|!=\s*\w+", re.I)


DONT_FORGET = re.compile(r"\b(?:don'?t|do not|never) forget to\b", re.I)


def negated_terms(sentence: str, terms: Iterable[str]) -> set[str]:
    """The `terms` a sentence puts under a negation in their clause ("not X", "never use X", "instead of X",
    "replace X with Y": X, "from X to Y": X), counted with parity: "do not delete X" keeps X. Names are
    matched whole, words by their stems."""
    out: set[str] = set()
    for t in terms:  # each clause with its own parity: "drop --push; nobody should push" negates push
        for clause in _clauses(sentence):
            if sum(1 for a, b in _negated_spans(clause) if _in_span(clause[a:b], t)) % 2:
                out.add(t)
    return out


def _clauses(sentence: str) -> list[str]:
    prose = BACKTICKED.sub(lambda m: NOT_BEFORE.sub("_", m.group(0)), sentence)  # code's own NOT is no negation
    prose = CODE_NEGATION.sub("_", prose)
    prose = DONT_FORGET.sub("remember to", prose)  # "don't forget to run X" asks for X
    folded = fold(TAKE_OUT.sub(r"remove \2", prose))  # "take the sleep out": the sleep is removed
    return CLAUSE.split(folded)


def affirmed_terms(sentence: str, terms: Iterable[str]) -> set[str]:
    """The `terms` a sentence names in a clause that does not negate them ("leave the purge retries out ...;
    the next deploy purges again": purges)."""
    out: set[str] = set()
    for t in terms:
        for clause in _clauses(sentence):
            if _in_span(clause, t) and not sum(1 for a, b in _negated_spans(clause) if _in_span(clause[a:b], t)) % 2:
                out.add(t)
    return out


# "X was removed": what comes before it in its clause is gone.
PASSIVE_AWAY = re.compile(
    r"\b(?:was|were|is|are|has been|have been|got|gets|been)\s+(?:removed|deleted|dropped|disabled|taken out|"
    r"turned off|reverted|retired)\b"
)


# where the subject of "X was removed" ends: its verb, or what it was for or in ("the PNG fallback for old
# browsers was dropped": the fallback went, the browsers did not)
SUBJECT_END = re.compile(r"\b(?:is|are|was|were|has|have|had|that|which|who|and|for|in|from|on|at|by|with)\b")


def _subject_end(clause: str, limit: int) -> int:
    end = SUBJECT_END.search(clause, 0, limit)
    return end.start() if end else limit


def _negated_spans(clause: str) -> list[tuple[int, int]]:
    # "the CI step that validated X was removed": its subject, up to its first verb, is what went
    spans = [(0, _subject_end(clause, m.start())) for m in PASSIVE_AWAY.finditer(clause)]
    for pattern, stop in ((NOT_BEFORE, None), (AWAY_BEFORE, AWAY_END)):
        for m in pattern.finditer(clause):
            wish = WISH_OBJECT.match(clause, m.end()) if stop is None else None
            begin = wish.end() if wish else m.end()
            ends = [e.start() for e in (CLAUSE_END.search(clause, begin), stop and stop.search(clause, begin)) if e]
            spans.append((begin, min(ends, default=len(clause))))
    return spans


PATH_LIKE = re.compile(r"[\w.-]*[\w-]/[\w./-]*")


def _in_span(span: str, term: str) -> bool:
    if _is_name(term):
        return bool(re.search(rf"(?<![\w/.]){re.escape(fold(term))}(?![\w/-])", span))
    return stem(term) in stems(content_words(PATH_LIKE.sub(" ", span)))  # "sessions" of `entire/sessions` is a name


def polarity_terms(statement: str) -> list[str]:
    """The terms whose negation must agree between a statement and its quotes: its names and its content
    words that are not about deciding ("use", "always", "switch")."""
    names = identifiers(statement)
    by_stem: dict[str, str] = {}
    for w in content_words(BACKTICKED.sub(" ", statement)):
        if w not in DECIDING_WORDS and len(w) > 1 and not any(stem(w) == stem(n) for n in names):
            by_stem.setdefault(stem(w), w)
    return [*names, *by_stem.values()]


DECIDING_WORDS = frozenset(
    "always never use uses using used decided decide decision switch switched switching instead rather keep "
    "kept stay stayed stick going forward now should must need needs only prefer preferred avoid stop "
    "don't dont not no longer replace replaced remove removed drop dropped without never nothing nobody none "
    "cannot against rather".split()
)

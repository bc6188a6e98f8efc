"""What later turns say about an item's subject: every mention (for the reviewer), and any that takes it back.

    later = later_mentions(statement, located, sessions)
    later.reversal    # the first later sentence that takes it back, or None
    later.mentions    # every later sentence that names the subject (the person's, the agent's, commits)

"Later" is every turn after the item's earliest quote, in every later session the dream can read: a quote
cited after a revert hides nothing, unless it is the person adopting it again. A sentence takes the subject
back when it says so ("revert", "switch back", "no longer", "actually needed", ...) and is not a question,
when the person negates what the statement adopts (or adopts what it negates), or when the person says yes
to the agent's offer to take it back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory_server.dream.claims import (
    AWAY_BEFORE,
    UNIT_KINDS,
    content_words,
    measures,
    mentions,
    negated_terms,
    polarity_terms,
    stem,
    stems,
    subject_terms,
)
from memory_server.dream.locate import SENTENCE_BREAK, Located
from memory_server.dream.record import AGENT, PERSON, SessionRecord, Turn
from memory_server.dream.stance import REVERSAL, classify

# A sentence that tells what to do (or not to): only such a sentence of the person's can decide otherwise.
DIRECTIVE = re.compile(
    r"^\W*(?:(?:no|ok|okay|actually|so|and|but|then|please|instead|now|wait|also|hmm|oh)[,\s]+)*(?:don't|do not|"
    r"dont|never|stop|avoid|let'?s|no\b|use|switch|go with|keep|put|move|remove|delete|drop|add|revert|restore|rename|"
    r"set|bump|raise|lower|change|increase|decrease|reduce|make|i (?:don't|do not|never) want|i want|"
    r"replace|skip|leave|take|get rid of|you(?:'re| are) (?:not|wrong)|that(?:'s| is) (?:not|wrong|incorrect)|"
    r"not (?:correct|true|right)|incorrect|wrong|we (?:will|won't|will not|should|shouldn't|should not|"
    r"must|mustn't|must not|don't|do not)|you (?:should|shouldn't|should not|must|mustn't|must not))\b",
    re.I,
)
# What undoes the thing just spoken of, in a reply that does not name it ("revert that", "put it back"; not
# "close it", which closes an issue as often as it undoes anything).
UNDO = re.compile(
    r"\b(?:revert|undo|roll (?:it |that |this )?back|(?:put|change|switch|set) (?:it|that|this|them) back|"
    r"go back|back (?:it|that|this) out|scrap (?:it|that|this))\b",
    re.I,
)
SPOKEN = {(PERSON, "request"), (PERSON, "answer"), (PERSON, "correction"), (AGENT, "reply"), (AGENT, "commit")}
MAX_MENTIONS = 12
WHOLE_MESSAGE = 300  # a person's message up to this long is shown whole
MAX_EARLIER = 3


@dataclass(frozen=True)
class Mention:
    ref: str
    date: str | None
    who: str
    sentence: str
    reverses: bool = False
    weight: int = 0  # how many of the subject's terms it names


@dataclass
class Later:
    terms: list[str]
    rare: set[str] = field(default_factory=set)  # stems of terms the sessions seldom use
    mentions: list[Mention] = field(default_factory=list)
    earlier: list[Mention] = field(default_factory=list)  # the person on the subject before the first quote

    sessions: set[str] = field(default_factory=set)  # the sessions the item's quotes are in

    def shown(self) -> tuple[list[Mention], int]:
        """The mentions a reviewer reads first (what takes it back, then the person's that name the subject well,
        then those naming the most of it; in order), at most MAX_MENTIONS, and how many more there are. A
        person's line that shares one common word with the subject ("settings", a part of a path) comes after
        the agent's lines that name more of it: listed first, such lines buried what mattered. From another
        session than the quotes', a line is listed only when it names the subject well (`_listed`): lines sharing
        common words there were unrelated work ("approved this plan" to a plan that also touched settings)."""
        names = [t for t in self.terms if _is_name_term(t) and not t.startswith("~")]
        # the parts of a path are words any path of the project holds ("cmd", "cli"): not the subject's own
        rare = self.rare - stems({p for t in names if "/" in t for p in re.split(r"[/._-]+", t) if p})
        listed = [i for i, m in enumerate(self.mentions) if self._listed(m, names, rare)]
        ranked = sorted(
            listed,
            key=lambda i: (
                not self.mentions[i].reverses,
                not self._persons_own(self.mentions[i]),
                -self.mentions[i].weight,
                i,
            ),
        )
        chosen = sorted(ranked[:MAX_MENTIONS])
        return [self.mentions[i] for i in chosen], len(self.mentions) - len(chosen)

    reversal: Mention | None = None

    def _persons_own(self, m: Mention) -> bool:
        """The person's line naming two of the subject's terms, or one the sessions seldom use."""
        return m.who == "the person" and (m.weight >= 2 or _rare_hit(m.sentence, self.rare))

    def _listed(self, m: Mention, names: list[str], rare: set[str]) -> bool:
        """Whether a mention is listed: it takes the subject back, is in a session the quotes are in, or names
        the subject well: one of its whole `names` (`EntireSettings`, not a part of one) or a word the sessions
        seldom use (`rare`, less the parts of paths). Two common words are not enough there."""
        if m.reverses or m.ref.rsplit(":", 1)[0] in self.sessions:
            return True
        return _rare_hit(m.sentence, rare) or mentions(m.sentence, names, 1)


def _takes_back(turn: Turn, sentence: str, statement: str, terms: list[str], rare: set[str]) -> bool:
    """Whether a later sentence that names the subject takes it back: it says so ("revert", "switch back"),
    or it flips the statement's terms (negates what the statement adopts, or the reverse) as the person's
    directive ("remove the X flag", "don't use X"), the person's report of a removal, or a commit's. (The
    agent's own account of a merge, "removed the duplicate X", flips nothing by itself.)"""
    if classify(sentence) in ("question", "what-if"):
        return False
    words = [t for t in terms if not _is_name_term(t)]
    named = mentions(sentence, [t for t in terms if _is_name_term(t)], 1)
    values = superseded(statement, sentence) and mentions(sentence, words, 1)  # "the 5s timeout" after "15 s"
    if not (named or values or mentions(sentence, words, min(3, len(words))) or _rare_hit(sentence, rare)):
        return False  # about the subject: a name, three of its words, or one they seldom use ("type" is not enough)
    if _backs_subject(sentence, statement, terms, rare):
        return True
    if not (_flips(statement, sentence, terms) and _names_enough(sentence, terms) or superseded(statement, sentence)):
        return False
    if turn.speaker == PERSON:
        return turn.kind == "correction" or bool(DIRECTIVE.match(sentence) or AWAY_BEFORE.search(sentence))
    # a commit that removes it or sets another value ("registry: 5s timeout"); "it never reaches X" decides nothing
    return turn.kind == "commit" and bool(AWAY_BEFORE.search(sentence) or superseded(statement, sentence))


def _names_enough(sentence: str, terms: list[str]) -> bool:
    """Whether a sentence names the subject as the statement does for its negation to be about it: a part of
    a name ("golden" of `tests/golden/sizes.json`) joined to another word ("never skip the golden-image
    check") names another thing."""
    hit = [t for t in terms if _is_name_term(t) and mentions(sentence, [t], 1)]
    if not hit or any(not t.startswith("~") for t in hit):
        return True
    return any(re.search(rf"(?<![\w-]){re.escape(t[1:])}(?![\w-])", sentence) for t in hit)


PART_BREAK = re.compile(r"[,;:]\s|\s[—–-]\s|\bbut\b|\bhowever\b|\bwhile\b", re.I)
PRONOUN = re.compile(r"\b(?:it|that|this|them|those|these)\b", re.I)
BACK_TO = re.compile(r"\bback to\b|\b(?:go|went|going|switch(?:ed)?|changed my mind|on second thought)\b", re.I)


def _backs_subject(sentence: str, statement: str, terms: list[str], rare: set[str]) -> bool:
    """Words that take something back, in a part of the sentence about the subject, pointing at it ("revert
    it") or going back to what was before ("let's go back to Y"): "revert the log level bump, but slog stays"
    takes back the bump, not slog."""
    parts = [p for p in PART_BREAK.split(sentence) if p.strip()]
    if len(parts) < 2:
        return says_back(sentence, statement)
    words = [t for t in terms if not _is_name_term(t)]
    for part in parts:
        if not says_back(part, statement):
            continue
        about = mentions(part, [t for t in terms if _is_name_term(t)], 1) or mentions(part, words, min(2, len(words)))
        if about or _rare_hit(part, rare) or PRONOUN.search(part) or BACK_TO.search(part):
            return True  # "let's go back to Y, ...": away from the subject the sentence names
    return False


def _flips(statement: str, sentence: str, terms: list[str]) -> bool:
    """Whether a sentence negates most of what the statement adopts of the terms both name, or the reverse."""
    by_stem = {stem(t.removeprefix("~")): t.removeprefix("~") for t in [*terms, *polarity_terms(statement)]}
    key = [t for t in by_stem.values() if mentions(sentence, [t], 1)]
    differ = negated_terms(statement, key) ^ negated_terms(sentence, key)
    return bool(key) and len(differ) * 2 > len(key)


# A value a sentence sets: "restore the 3-attempt retry", "back to 30 seconds", "from 30 to 60 seconds".
SET_VALUE = re.compile(r"\b(?<!up )(?:restore|to)\s+(?:the\s+|a\s+)?(\d+(?:\.\d+)?(?:\s*|-)[a-z%]+)", re.I)


def superseded(statement: str, sentence: str) -> bool:
    """A later sentence that gives another value in the same unit ("set it to 10 seconds" after "30 s"), or
    sets one while naming the statement's as what it leaves ("restore the 3-attempt retry, 5 attempts hammer
    the provider" after "5 times")."""
    said = measures(statement)
    later = measures(sentence)
    set_to = measures(" ".join(m.group(1) for m in SET_VALUE.finditer(sentence)))
    return any(
        unit == u and value != v and ((value, unit) not in later or (v, u) in set_to)
        for value, unit in said
        for v, u in later
    )


# "revert the jitter", "undo the staging log level bump": an undo that names what it undoes, and not as "the
# change" or "the last commit" (which point back at what was just done).
UNDO_NAMED = re.compile(
    r"\b(?:revert|undo|roll back|scrap|back out)\s+(?:the|a|an|your|my|our)\s+"
    r"(?!(?:last|latest|previous|recent|whole)\b|(?:change|changes|edit|edits|commit|commits|diff|patch)\b)\w",
    re.I,
)


def _answers_back(sentence: str, statement: str) -> bool:
    """The person's short reply to the agent's words about the subject that undoes it or sets another value.
    An undo that names another thing ("revert the jitter") undoes that thing, not the subject."""
    if classify(sentence) in ("question", "what-if"):
        return False
    undoes = bool(UNDO.search(sentence)) and not UNDO_NAMED.search(sentence)
    return undoes or bool(DIRECTIVE.match(sentence)) and superseded(statement, sentence)


def _rare_hit(sentence: str, rare: set[str]) -> bool:
    return bool(rare & stems(content_words(sentence)))


def rare_terms(terms: list[str], sessions: list[SessionRecord]) -> set[str]:
    """The stems of `terms` that few of the sessions' spoken turns use (at most 2 %, or 3 turns)."""
    counts: dict[str, int] = dict.fromkeys(stems(terms), 0)
    spoken = [t for s in sessions for t in s.turns if (t.speaker, t.kind) in SPOKEN]
    for t in spoken:
        for w in stems(content_words(t.text)) & counts.keys():
            counts[w] += 1
    limit = max(3, len(spoken) // 50)
    return {w for w, n in counts.items() if n <= limit}


def _is_name_term(term: str) -> bool:
    return bool(re.search(r"[A-Z_./()]|\d", term[1:])) or term.startswith(("~", "-")) or term.isupper()


# words that bring something back: they take back a removal, and confirm a statement that removes nothing
RESTORE = re.compile(r"put\b.*\bback|(?:is|are|was|were) actually needed|restor(?:e|ed|ing)", re.I)
REMOVAL_CLAIM = re.compile(
    r"\b(?:not needed|unneeded|unnecessary|unused|dead|removed?|removes|removing|deleted?|deletes|deleting|"
    r"drop(?:ped|s)?|no longer|replaced?|replaces|instead of|rather than|in favou?r of|obsolete|retired?)\b",
    re.I,
)


def says_back(sentence: str, statement: str) -> bool:
    """Words that take something back ("revert", "switch back"); "put X back" and "X is actually needed"
    only when the statement removes something (they undo a removal, and confirm what is kept)."""
    found = [m.group(0) for m in REVERSAL.finditer(sentence)]
    if not found:
        return False
    return not all(RESTORE.fullmatch(w) for w in found) or bool(REMOVAL_CLAIM.search(statement))


def _agrees_to_take_back(turn: Turn, asked: str, statement: str) -> bool:
    """The person's yes to the agent's offer to take it back ("Want me to revert X?" - "yes")."""
    return classify(turn.text) != "declined" and says_back(asked, statement)


def later_mentions(
    statement: str,
    located: list[Located],
    sessions: list[SessionRecord],
    order: dict[str, int],
    decision: bool = True,
    subject: tuple[list[str], int] | None = None,
) -> Later:
    """Every mention of the statement's subject after its earliest quote, in `sessions` (oldest first; `order`
    their places), and the first that takes it back and is not followed by a quote of the person's that
    adopts it again (or, for a fact, any quote that says it again)."""
    quoted = " ".join(x.context for x in located)
    terms, need = subject or subject_terms(statement, quoted)
    out = Later(terms, rare_terms(terms, sessions), sessions={x.session.ref_base for x in located})
    if not terms or not located:
        return out
    start = min(x.position for x in located)
    # a cited turn is read too, but not its quoted sentences ("... after the modernc switch. let's go back")
    cited: dict[str, list[str]] = {}
    for x in located:
        cited.setdefault(x.turn.ref, []).append(x.quote.quote.casefold())
    # what may adopt it again after a reversal: the person's words for a decision, any quote for a fact
    again = [
        x.position for x in located if (x.turn.speaker == PERSON or not decision) and mentions(x.context, terms, need)
    ]
    first = min(located, key=lambda x: x.position)
    out.earlier = _earlier(out, need, first.session, first.turn.line)
    for session in sessions:
        n = order.get(session.ref_base, -1)
        if n < start[0]:
            continue
        after_subject = False  # the agent's last words were about the subject: "set it to 10 seconds" is too
        for turn in session.turns:
            if (turn.speaker, turn.kind) not in SPOKEN:
                continue
            if (n, turn.line) > start:
                readopted = any(p > (n, turn.line) for p in again)
                _scan(out, turn, statement, need, readopted, (cited.get(turn.ref, []), after_subject))
            if turn.speaker == AGENT:
                after_subject = mentions(turn.text, terms, need)
    return out


def _earlier(later: Later, need: int, session: SessionRecord, before: int) -> list[Mention]:
    """The person's words on the subject in the session of the item's first quote, before it, nearest last (at
    most MAX_EARLIER): an instruction the quotes come after ("Do it." to deleting what the item says is needed)
    is for the reviewer to weigh. Only lines that name the subject well (`Later._persons_own`); other sessions
    are left out, where shared common words ("settings") listed unrelated requests."""
    found: list[Mention] = []
    for turn in session.turns:
        if turn.line >= before:
            break
        if turn.speaker != PERSON or (turn.speaker, turn.kind) not in SPOKEN:
            continue
        mention = _persons_words(turn, later, need)
        if mention is not None and later._persons_own(mention):
            found.append(mention)
    return found[-MAX_EARLIER:]


def _persons_words(turn: Turn, later: Later, need: int) -> Mention | None:
    """The person's turn as a mention of the subject: its sentence that names it, or for an answer that names
    nothing, the answer with the part of what it answers that does."""
    hits = [s.strip() for s in SENTENCE_BREAK.split(turn.text) if mentions(s, later.terms, need)]
    asked = None if hits else _answered_part(turn, later.terms, need)
    if not hits and asked is None:
        return None
    whole = " ".join(turn.text.split())
    # a short message is one thought: its sentence on the subject alone can drop what it asks
    # ("Why do we re-export these?" above a file reference)
    shown = (whole if len(whole) <= WHOLE_MESSAGE else hits[0]) if hits else f"{turn.text.strip()} (answering: {asked})"
    weight = sum(mentions(shown, [t], 1) for t in later.terms)
    return Mention(turn.ref, turn.date, turn.who, shown[:300], False, weight)


def _answered_part(turn: Turn, terms: list[str], need: int) -> str | None:
    """For a person's answer whose question names the subject: the question's last sentence that names it (the
    whole question when no one sentence does); else None."""
    if turn.speaker != PERSON or not turn.asked or not mentions(turn.asked, terms, need):
        return None
    parts = [s.strip() for s in SENTENCE_BREAK.split(turn.asked) if mentions(s, terms, need)]
    return parts[-1] if parts else turn.asked.strip()


def _sentences(turn: Turn, quoted: list[str]) -> list[str]:
    out = [s.strip() for s in SENTENCE_BREAK.split(turn.text) if s.strip()]
    return [s for s in out if not any(q in s.casefold() or s.casefold() in q for q in quoted)]


def _same_measure(sentence: str, statement: str, terms: list[str]) -> bool:
    """A sentence with one of the subject's terms that gives its value in the same unit, or another one ("5
    attempts", "the 3-attempt retry" after "retried up to 5 times"): about the subject."""
    if not mentions(sentence, [t for t in terms if t.casefold() not in UNIT_KINDS and not t.isdigit()], 1):
        return False  # "7 days" names no subject of "older than 30 days" by its unit
    return bool(measures(sentence) & measures(statement)) or superseded(statement, sentence)


def _scan(out: Later, turn: Turn, statement: str, need: int, readopted: bool, seen: tuple[list[str], bool]) -> None:
    """Note one turn: its sentence that takes the subject back, else its first that names it. (`seen`: the
    turn's quoted words, and whether the agent had just spoken of the subject.)"""
    quoted, after_subject = seen
    sentences = _sentences(turn, quoted)
    hits = [s for s in sentences if mentions(s, out.terms, need) or _same_measure(s, statement, out.terms)]
    named_here = bool(hits) or any(mentions(q, out.terms, need) for q in quoted)
    back = next((h for h in hits if _takes_back(turn, h, statement, out.terms, out.rare)), None)
    if back is None and not hits and after_subject and turn.speaker == PERSON and len(turn.text) < 300:
        back = next((s for s in sentences if _answers_back(s, statement)), None)  # "set it to 10 seconds"
        hits = [back] if back else []
    if back is None and named_here and turn.speaker == PERSON:  # "X was slow. Let's go back to Y.": one message
        back = next(
            (
                s
                for s in sentences
                if _backs_subject(s, statement, out.terms, out.rare) and classify(s) not in ("question", "what-if")
            ),
            None,
        )
    shown = back or (hits[0] if hits else None)
    asked = _answered_part(turn, out.terms, need) if shown is None else None
    if asked is not None:
        shown = f"{turn.text.strip()} (answering: {asked})"
        back = shown if _agrees_to_take_back(turn, asked, statement) else None
    if shown is None:
        return
    weight = sum(mentions(shown, [t], 1) for t in out.terms)
    mention = Mention(turn.ref, turn.date, turn.who, shown[:300], back is not None, weight)
    if back is not None and out.reversal is None and not readopted:
        out.reversal = mention  # taken back, and not adopted again by a later quote of the person's
    out.mentions.append(mention)

"""A person's rejections, remembered by meaning: an item close to a rejected one is not proposed again.

Close means the same content, whatever the target: the same words by their stems, or a statement that holds
`CONTAINED` of the shorter one's words; or on the same target topic, a statement that shares most of its words
with the rejected one (Jaccard of word stems at least `SIMILAR`), or the same names with `SAME_NAMES` of the
words shared. One changed word does not bring a rejected change back. A statement on the same topic that holds
half of the shorter one's words is shown to the reviewer beside the rejection (`near_rejection`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memory_server.dream.claims import content_words, stems
from memory_server.dream.identifiers import identifiers
from memory_server.dream.items import ProposalItem

SIMILAR = 0.6  # chosen on the red-team set: reworded rejections at 0.62-0.9, distinct true items below 0.5
SAME_NAMES = 0.4
CONTAINED = 0.8  # the rejected words all but carried over: "Never force-push main." in a longer statement
NEAR = 0.5  # on the same topic: a warning for the reviewer, not a refusal


@dataclass(frozen=True)
class Rejection:
    fingerprint: str
    statement: str
    target: str
    proposal: str


def _words(text: str) -> set[str]:
    return stems(content_words(text))


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def rejections(state_rejected: Mapping[str, object]) -> list[Rejection]:
    """The rejections the dream state records (their statements and targets, where recorded)."""
    out = []
    for fp, rec in state_rejected.items():
        if not isinstance(rec, dict):
            continue
        statement = str(rec.get("statement") or rec.get("summary") or "")
        out.append(Rejection(fp, statement, str(rec.get("target") or ""), str(rec.get("proposal") or "")))
    return out


def containment(a: set[str], b: set[str]) -> float:
    """How much of the shorter statement the other holds (a reworded or extended statement holds all of it)."""
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def matching_rejection(item: ProposalItem, rejected: list[Rejection]) -> Rejection | None:
    """The rejection the item repeats: the same words, or most of the rejected statement's words (whatever
    topic it now targets), or on the same topic, most of the words of either (see the module's docstring)."""
    words, names = _words(item.statement), set(identifiers(item.statement))
    for r in rejected:
        if r.fingerprint == item.fingerprint:
            return r
        theirs = _words(r.statement)
        if words and words == theirs or containment(words, theirs) >= CONTAINED:
            return r
        same_target = not r.target or r.target == item.topic
        if not same_target:
            continue
        score = jaccard(words, theirs)
        if score >= SIMILAR or (names and names == set(identifiers(r.statement)) and score >= SAME_NAMES):
            return r
    return None


def near_rejection(item: ProposalItem, rejected: list[Rejection]) -> Rejection | None:
    """A rejection on the same topic that shares much with the item without repeating it: shown to the
    reviewer, who decides whether it says the same thing in other words."""
    words = _words(item.statement)
    for r in rejected:
        if (not r.target or r.target == item.topic) and containment(words, _words(r.statement)) >= NEAR:
            return r
    return None

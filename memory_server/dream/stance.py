"""What a quoted sentence commits to: a question, a "what if", a "considered ... but stayed", a refusal, or
a plain statement; and whether a later sentence takes something back.

These checks do not judge meaning (the agent does that); they catch the wording that must never be
promoted as "adopted": nobody adopts a question, and "we considered make but stayed on mise" adopts mise.
"""

from __future__ import annotations

import re
import unicodedata

QUESTION_START = re.compile(
    r"^\s*(?:what if|what about|how about|should we|shall we|could we|can we|would it|would we|do we|does it|"
    r"is it|is there|are there|why|maybe we|perhaps we|wonder(?:ing)? if|i wonder)\b",
    re.I,
)
WHAT_IF = re.compile(
    r"\b(?:what if|suppose we|imagine we|hypothetically|in theory|if we were to|we could also)\b", re.I
)
CONSIDERED = re.compile(
    r"\b(?:considered|thought about|looked at|evaluated|tried|explored|discussed)\b.{0,160}?"
    r"\b(?:but|however)\b.{0,80}?\b(?:stay(?:ed|ing)?|kept|keep|stick(?:ing)?|stuck|remain(?:ed)?|decided against|"
    r"not|no|didn't|won't)\b",
    re.I | re.S,
)
DECLINED = re.compile(
    r"\b(?:i would not|i wouldn't|let's not|lets not|we won't|we will not|don't do|do not do|"
    r"decided against|not worth it|don't set|do not set|not in this branch|let's leave it|leave it as it is)\b",
    re.I,
)
SWITCHED = re.compile(r"\b(?:switched|moved|went with|replaced|now use)\b", re.I)
NO_START = re.compile(r"^\s*no\b[,.!]?", re.I)
# After "no" or "but": what the person wants instead, which makes the sentence a correction or a switch.
INSTEAD = re.compile(
    r"\b(?:use|do|switch(?:ed)?|instead|go with|went with|keep|put|move(?:d)?|rename|replace(?:d)?|should|must|"
    r"let's|lets|now use)\b",
    re.I,
)
REVERSAL = re.compile(
    r"\b(?:revert(?:ed|ing)?|roll(?:ed)? (?:it )?back|undo|undid|cancel(?:l?ed)?|close it|closed it|"
    r"switch(?:ed)? back|go back to|went back to|back out|no longer|drop(?:ped)? (?:it|that)|"
    r"(?:is|are) actually needed|not needed after all)\b",
    re.I,
)


SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")


def norm(text: str) -> str:
    """Text as quotes are compared: NFKC, no Markdown emphasis or backticks, no ellipses, spacing collapsed."""
    text = unicodedata.normalize("NFKC", text).replace("⏎", " ").replace("…", " ").replace("...", " ")
    text = re.sub(r"[`*]|^>\s?", "", text, flags=re.M)
    return " ".join(text.casefold().split())


def sentence_of(text: str, quote: str) -> str:
    """The shortest run of whole sentences of `text` that holds `quote` (else the quote itself).

    Stance is judged on the sentence, not on the words cut from it: "we replaced go-git with git status"
    quoted from "..., could this be related?" is still a question.
    """
    wanted = norm(quote)
    parts = [p for p in SENTENCE_BREAK.split(text) if p.strip()]
    best: str | None = None
    for i in range(len(parts)):
        for j in range(i, len(parts)):
            joined = " ".join(parts[i : j + 1])
            if wanted in norm(joined):
                if best is None or len(joined) < len(best):
                    best = joined
                break
    return best.strip() if best is not None else quote


def answer_part(quote: str) -> str:
    """For a quoted question and answer ("Which? -> docs/generated/"), the answer; else the quote."""
    return quote.rsplit(" -> ", 1)[1] if " -> " in quote else quote


def classify(quote: str) -> str:
    """ "question", "what-if", "considered", "declined" or "statement"."""
    text = answer_part(quote).strip()
    considered = CONSIDERED.search(text)
    if considered and not SWITCHED.search(text[considered.end() :]):
        return "considered"  # not "we tried X but it did not work, so we switched to Y"
    if DECLINED.search(text):
        return "declined"
    no = NO_START.match(text)
    if no and not INSTEAD.search(text[no.end() :]):
        return "declined"  # a bare "no"; "no, use X" is a correction that adopts X
    if WHAT_IF.search(text):
        return "what-if"
    if text.endswith("?") or QUESTION_START.match(text):
        return "question"
    return "statement"


def stance_problem(quotes: list[str]) -> str | None:
    """Why quotes cannot back an "adopted" statement, or None when they can."""
    kinds = [(q, classify(q)) for q in quotes]
    for quote, kind in kinds:
        if kind == "considered":
            return f'the evidence says it was considered but not taken up: {quote!r}; use stance "rejected"'
        if kind == "declined":
            return f'the evidence declines it: {quote!r}; use stance "rejected" (or drop the item)'
    if kinds and all(k in ("question", "what-if") for _q, k in kinds):
        shown = kinds[0][0]
        return (
            f"the evidence only asks or supposes it ({shown!r}), which adopts nothing; cite the answer or the "
            'change that followed, or use stance "hypothetical"'
        )
    return None


def reverses(text: str, terms: list[str], need: int = 1) -> str | None:
    """The sentence of `text` that takes back something named by `need` of `terms`, or None.

    A sentence takes something back when it says so (revert, switch back, no longer, ...) and is not itself a
    question or a supposition ("Want me to close it?" closes nothing).
    """
    if not REVERSAL.search(text):
        return None
    for sentence in SENTENCE_BREAK.split(text):
        if not REVERSAL.search(sentence) or classify(sentence) in ("question", "what-if"):
            continue
        folded = sentence.casefold()
        named = sum(
            1 for t in terms if len(t) > 1 and re.search(rf"(?<![\w/.-]){re.escape(t.casefold())}(?![\w/-])", folded)
        )
        if named >= max(1, need):
            return sentence.strip()
    return None
